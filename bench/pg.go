package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
)

// The pg scenario: one 3-instance PostgreSQL cluster in strict synchronous
// mode, run by `lookout instance` managers through internal/pgharness (the
// harness of test/pg), a writer throughout, and fault after fault against
// whichever instance is primary; after each the cluster is back to full
// strength and the writer's log is compared with the table before the next.

// PGResult is what the pg scenario measured. Durations are seconds.
type PGResult struct {
	Scenario    string `json:"scenario"`
	Description string `json:"description"`
	Commit      string `json:"commit"`
	Date        string `json:"date"`
	CPUs        int    `json:"cpus"`
	// LoadAvg1 is the 1-minute load average at each fault (min, median, max).
	LoadAvg1 [3]float64 `json:"loadAvg1MinMedianMax"`

	LeaseSeconds float64 `json:"leaseSeconds"`
	StopSeconds  float64 `json:"sigstopSeconds"`
	// StartSeconds is from the managers started (empty data directories)
	// to every instance ready and streaming.
	StartSeconds float64 `json:"startSeconds"`

	Faults map[string]PGFaultSummary `json:"faults"`
	// Breakdown of the SIGKILL failovers: the median of each step.
	KillBreakdown map[string]float64 `json:"sigkillBreakdownMedianSeconds"`
	// and of the switchovers' write pauses.
	SwitchoverBreakdown map[string]float64 `json:"switchoverBreakdownMedianSeconds,omitempty"`
	Runs                []PGRun            `json:"runs"`
	// Error is why the runs stopped early, if they did.
	Error string `json:"error,omitempty"`
}

// PGFaultSummary sums up the runs of one fault.
type PGFaultSummary struct {
	Runs int `json:"runs"`
	// Failover: last acknowledged write on the old timeline → first on the
	// new (for a switchover, the write pause).
	FailoverP50, FailoverP90, FailoverMax float64
	// FullStrength: fault → every instance ready, replicas streaming.
	FullStrengthP50, FullStrengthMax float64
	Lost, Phantom, SplitBrain        int
	Problems                         int
}

// PGRun is one fault.
type PGRun struct {
	Fault        string   `json:"fault"`
	OldPrimary   string   `json:"oldPrimary"`
	NewPrimary   string   `json:"newPrimary"`
	At           string   `json:"at"`
	LoadAvg1     float64  `json:"loadAvg1"`
	Failover     float64  `json:"failoverSeconds"`
	FullStrength float64  `json:"fullStrengthSeconds"`
	Acked        int      `json:"ackedSoFar"`
	Failed       int      `json:"failedSoFar"`
	Unknown      int      `json:"unknownSoFar"`
	Lost         int      `json:"lostSoFar"`
	Phantom      int      `json:"phantomSoFar"`
	SplitBrain   int      `json:"splitBrainWrites"`
	Problems     []string `json:"problems,omitempty"`
	// Steps of the new primary's takeover, from its log (seconds).
	Steps map[string]float64 `json:"steps,omitempty"`
}

type pgFlags struct {
	kills, runs, switchovers int
	stop, lease              time.Duration
	out                      string
	// pooler: the writer goes through a PgBouncer (`lookout pgbouncer`)
	// that the switchovers pause and resume.
	pooler bool
	// minorRuns: the pgminor scenario's upgrades.
	minorRuns int
}

// pgPlan interleaves the faults: kills SIGKILL runs, runs of each other
// fault, switchovers planned switchovers.
func pgPlan(f pgFlags) []pgharness.Fault {
	byKey := map[string]pgharness.Fault{}
	for _, fault := range pgharness.Faults(f.stop) {
		byKey[fault.Key] = fault
	}
	var plan []pgharness.Fault
	for i := range max(f.kills, f.runs, f.switchovers) {
		if i < f.kills {
			plan = append(plan, byKey[pgharness.FaultKill])
		}
		if i < f.runs {
			for _, k := range []string{pgharness.FaultStop, pgharness.FaultDeletePod, pgharness.FaultCut, pgharness.FaultKillBoth} {
				plan = append(plan, byKey[k])
			}
		}
		if i < f.switchovers {
			plan = append(plan, byKey[pgharness.FaultSwitchover])
		}
	}
	return plan
}

func runPG(ctx context.Context, f pgFlags, bin string) (PGResult, error) {
	res := PGResult{Scenario: "pg", CPUs: numCPU(), LeaseSeconds: f.lease.Seconds(), StopSeconds: f.stop.Seconds(),
		Description: fmt.Sprintf("3 instances of PostgreSQL 15, synchronous_mode_strict (ANY 1 of the replicas), lease %s; "+
			"a writer every 20 ms through every instance's address (target_session_attrs=read-write)", f.lease)}
	logf("pg: starting the control plane")
	env, err := pgharness.Start(ctx, os.Stderr)
	if err != nil {
		return res, err
	}
	defer env.Close()
	r := &pgharness.Runner{Log: logf}
	defer r.Close()
	var prepare []func(*pgharness.Cluster)
	if f.pooler {
		prepare = append(prepare, pgharness.WithPoolers)
		res.Description = fmt.Sprintf("3 instances of PostgreSQL 15, synchronous_mode_strict (ANY 1 of the replicas), lease %s; "+
			"a writer every 20 ms through a PgBouncer (`lookout pgbouncer`, transaction pooling) that each switchover pauses and resumes", f.lease)
	}
	var c *pgharness.Cluster
	if err := r.Try(func() {
		started := time.Now()
		c = pgharness.NewCluster(r, env, pgharness.Command{Path: bin}, 3, pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432,
			SynchronousMode: true, SynchronousModeStrict: true, SynchronousNodeCount: 1,
			LeaseDuration: pgcontract.Duration{Duration: f.lease}}, prepare...)
		c.WaitHealthy(3 * time.Minute)
		res.StartSeconds = time.Since(started).Seconds()
		logf("pg: 3 instances ready and streaming after %.1fs", res.StartSeconds)
		if f.pooler {
			p := c.StartPooler("pg-pgbouncer-0")
			c.StartWriterThrough(c.PoolerConnString(p), 30*time.Second)
			return
		}
		c.StartWriter()
	}); err != nil {
		return res, err
	}
	plan := pgPlan(f)
	for i, fault := range plan {
		if ctx.Err() != nil {
			res.Error = ctx.Err().Error()
			break
		}
		load := loadAvg1()
		var fr pgharness.FaultResult
		if err := r.Try(func() { fr = c.RunFault(fault) }); err != nil {
			res.Error = fmt.Sprintf("run %d (%s): %v", i+1, fault.Key, err)
			logf("pg: %s", res.Error)
			break
		}
		run := pgRun(fr, load)
		res.Runs = append(res.Runs, run)
		logf("pg: %d/%d %s %s → %s: failover %.2fs, full strength %.1fs, load %.1f; %s %v",
			i+1, len(plan), fault.Key, fr.OldPrimary, fr.NewPrimary, run.Failover, run.FullStrength, load, fr.Report, run.Steps)
		for _, p := range fr.Problems {
			logf("pg: PROBLEM: %s", p)
		}
	}
	summarisePG(&res)
	return res, nil
}

func pgRun(fr pgharness.FaultResult, load float64) PGRun {
	run := PGRun{Fault: fr.Fault, OldPrimary: fr.OldPrimary, NewPrimary: fr.NewPrimary, At: fr.Injected.UTC().Format(time.RFC3339),
		LoadAvg1: load, FullStrength: fr.FullStrength.Seconds(), Acked: fr.Report.Acked, Failed: fr.Report.Failed, Unknown: fr.Report.Unknown,
		Lost: len(fr.Report.Lost), Phantom: len(fr.Report.Phantom), Problems: fr.Problems}
	for _, fo := range fr.Failovers {
		run.SplitBrain += len(fo.SplitBrain)
	}
	if len(fr.Failovers) == 0 {
		return run
	}
	fo := fr.Failovers[0]
	run.Failover = fo.Duration().Seconds()
	s := fr.Steps
	if !s.HandingOver.IsZero() && !s.HandedOver.IsZero() && !s.Promoted.IsZero() {
		run.Steps = map[string]float64{
			"1 last ack → handing over":        s.HandingOver.Sub(fo.LastOld).Seconds(),
			"2 checkpoint, shutdown, lease":    s.HandedOver.Sub(s.HandingOver).Seconds(),
			"3 target catches up and promotes": s.Promoted.Sub(s.HandedOver).Seconds(),
			"4 promoted → first ack":           fo.FirstNew.Sub(s.Promoted).Seconds(),
		}
		return run
	}
	if s.PrimaryLost.IsZero() || s.LeaseTaken.IsZero() || s.Promoted.IsZero() {
		return run
	}
	choosing := s.LeaseTaken.Add(-s.LeaseWrite)
	run.Steps = map[string]float64{
		"1 last ack → fault":     fr.Injected.Sub(fo.LastOld).Seconds(),
		"2 detection":            s.PrimaryLost.Sub(fr.Injected).Seconds(),
		"3 choosing":             choosing.Sub(s.PrimaryLost).Seconds(),
		"4 lease write":          s.LeaseWrite.Seconds(),
		"5 promote":              s.Promoted.Sub(s.LeaseTaken).Seconds(),
		"6 promoted → first ack": fo.FirstNew.Sub(s.Promoted).Seconds(),
	}
	return run
}

func summarisePG(res *PGResult) {
	res.Faults = map[string]PGFaultSummary{}
	var loads []float64
	steps := map[string][]float64{}
	switchSteps := map[string][]float64{}
	byFault := map[string][]PGRun{}
	for _, r := range res.Runs {
		byFault[r.Fault] = append(byFault[r.Fault], r)
		loads = append(loads, r.LoadAvg1)
		for k, v := range r.Steps {
			switch r.Fault {
			case pgharness.FaultKill:
				steps[k] = append(steps[k], v)
			case pgharness.FaultSwitchover:
				switchSteps[k] = append(switchSteps[k], v)
			}
		}
	}
	for k, runs := range byFault {
		var fo, full []float64
		s := PGFaultSummary{Runs: len(runs)}
		for _, r := range runs {
			fo = append(fo, r.Failover)
			full = append(full, r.FullStrength)
			s.Lost = max(s.Lost, r.Lost)
			s.Phantom = max(s.Phantom, r.Phantom)
			s.SplitBrain += r.SplitBrain
			s.Problems += len(r.Problems)
		}
		s.FailoverP50, s.FailoverP90, s.FailoverMax = rank(fo, 0.5), rank(fo, 0.9), rank(fo, 1)
		s.FullStrengthP50, s.FullStrengthMax = rank(full, 0.5), rank(full, 1)
		res.Faults[k] = s
	}
	if len(loads) > 0 {
		res.LoadAvg1 = [3]float64{rank(loads, 0), rank(loads, 0.5), rank(loads, 1)}
	}
	res.KillBreakdown, res.SwitchoverBreakdown = medians(steps), medians(switchSteps)
}

func medians(samples map[string][]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range samples {
		out[k] = rank(v, 0.5)
	}
	return out
}

// rank is the nearest-rank percentile of samples (p 0: the least).
func rank(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	d := make([]time.Duration, len(s))
	for i, v := range s {
		d[i] = time.Duration(v * float64(time.Second))
	}
	return percentile(d, p).Seconds()
}

func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func writePGJSON(path string, res PGResult) error {
	out, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o644)
}
