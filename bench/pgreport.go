package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/lookout-operator/lookout/internal/pgharness"
)

const (
	pgDocHeading = "## PostgreSQL faults (make bench-pg)"
	pgDocEnd     = "<!-- end of the make bench-pg section: everything above, from its heading, is rewritten by go run ./bench -scenario pg -->"
)

func readPGJSON(path string) (PGResult, error) {
	var res PGResult
	b, err := os.ReadFile(path)
	if err != nil {
		return res, err
	}
	return res, json.Unmarshal(b, &res)
}

// pgFaultRows are the faults in the order of the table, with what each
// must show.
var pgFaultRows = []struct{ key, name, target string }{
	{pgharness.FaultKill, "SIGKILL of the primary's processes", "failover p50 ≤ 5 s, max ≤ 10 s"},
	{pgharness.FaultStop, "SIGSTOP of the primary (held %s)", "0 lost"},
	{pgharness.FaultDeletePod, "pod deleted with grace 0 (made again at once)", "0 lost"},
	{pgharness.FaultCut, "the primary's network cut", "0 lost, no split brain"},
	{pgharness.FaultKillBoth, "primary + a synchronous replica killed", "0 lost; no promotion until the replica is back"},
	{pgharness.FaultSwitchover, "planned switchover (write pause)", "pause ≤ 2 s"},
}

func pgTable(res PGResult) string {
	var b strings.Builder
	b.WriteString("| fault | runs | last ack old → first ack new: p50 / p90 / max (s) | fault → all ready: p50 / max (s) | acked writes lost | split-brain writes | target |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, row := range pgFaultRows {
		s, ok := res.Faults[row.key]
		if !ok {
			continue
		}
		name := row.name
		if strings.Contains(name, "%s") {
			name = fmt.Sprintf(name, fmt.Sprintf("%.0f s", res.StopSeconds))
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f / %.2f / %.2f | %.1f / %.1f | %d | %d | %s |\n", name, s.Runs,
			s.FailoverP50, s.FailoverP90, s.FailoverMax, s.FullStrengthP50, s.FullStrengthMax, s.Lost, s.SplitBrain, row.target)
	}
	breakdown(&b, "Where a SIGKILL failover's time goes (median of each step over the SIGKILL runs, from the new primary's log and the writer's)", res.KillBreakdown)
	breakdown(&b, "Where a switchover's write pause goes (median of each step, from the two primaries' logs and the writer's)", res.SwitchoverBreakdown)
	return b.String()
}

func pgDocSection(res PGResult) string {
	var b strings.Builder
	b.WriteString(pgDocHeading + "\n\n")
	b.WriteString("```sh\nmake bench-pg     # go run ./bench -scenario pg (as root: network namespaces), 20 SIGKILL runs, 8 of every other fault, 5 switchovers\n```\n\n")
	b.WriteString(`The harness of ` + "`test/pg`" + ` (` + "`internal/pgharness`" + `) with the ` + "`lookout`" + ` binary as the instance
manager: a real kube-apiserver + etcd, three ` + "`lookout instance`" + ` processes each in a network namespace
of its own (a pod with its own address; the harness makes the Pod objects, as no kubelet runs),
real PostgreSQL 15, ` + "`synchronous_mode`" + ` strict with ANY 1 of the two replicas. One writer inserts
a row with its own id every 20 ms through every instance's address with
` + "`target_session_attrs=read-write`" + ` (what the ` + "`-primary`" + ` Service gives an application) and logs
each outcome: acknowledged, failed, unknown. One cluster serves every run: each fault hits whichever
instance is primary, the run ends when every instance is ready again with both replicas
streaming, and the writer's whole log is compared with the table before the next fault. The faults:
SIGKILL of every process of the primary's namespace (the manager is restarted once a new primary
serves, as a kubelet restarts a container); SIGSTOP of all of them, held until a new primary serves
and at least the time in the table; the processes killed and the Pod object deleted with grace 0,
then made again at once and its manager started on the kept data (a StatefulSet and a volume); the
primary's link taken down until a new primary serves, while a second writer on the primary's side
of the cut (its Unix socket) keeps writing, so that a write the old primary acknowledged after the
new one's first would show as split brain; the primary and one replica killed together (the
survivor must refuse, and does; the killed replica is restarted, then the old primary); a planned
switchover through the config Secret, as the controller writes it for the annotation.

`)
	fmt.Fprintf(&b, "Run of %s (commit %s) on the shared 2-core VM, busy with other engineers' builds and tests: "+
		"the 1-minute load average at the faults was %.1f at least, %.1f at the median, %.1f at most on %d cores. "+
		"Read the durations as what a loaded machine gives, not as absolutes. From empty data directories to three instances ready and streaming: %.1f s.\n\n",
		res.Date, shortCommit(res.Commit), res.LoadAvg1[0], res.LoadAvg1[1], res.LoadAvg1[2], res.CPUs, res.StartSeconds)
	if res.Error != "" {
		fmt.Fprintf(&b, "**The runs stopped early:** %s\n\n", res.Error)
	}
	b.WriteString(pgTable(res))
	b.WriteString("\n" + pgDocEnd + "\n")
	return b.String()
}

func breakdown(b *strings.Builder, title string, steps map[string]float64) {
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n\n| step | median (s) |\n|---|---|\n", title)
	keys := make([]string, 0, len(steps))
	for k := range steps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "| %s | %.2f |\n", k[2:], steps[k])
	}
}
