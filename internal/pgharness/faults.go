package pgharness

import (
	"fmt"
	"syscall"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
)

// Fault is one thing that happens to the primary. Run breaks primary, waits
// for what the cluster must do about it, and brings the instance back the
// way Kubernetes would; RunFault then waits for full strength and checks.
type Fault struct {
	Key, Name string
	Run       func(c *Cluster, primary string)
}

// Fault keys.
const (
	FaultKill = "sigkill"
	// FaultKillRestart is the kill a kubelet answers: the container is
	// restarted at once, in the same pod, at the same address.
	FaultKillRestart = "sigkill-restarted"
	FaultStop        = "sigstop"
	FaultDeletePod   = "pod-deleted"
	FaultCut         = "network-cut"
	FaultKillBoth    = "primary-and-sync-replica"
	FaultSwitchover  = "switchover"
)

// Faults are the faults of the issue, the kill a kubelet answers with a restart
// in place, and a planned switchover. A SIGSTOPped
// primary stays stopped until a new primary serves and, at least, stopFor.
func Faults(stopFor time.Duration) []Fault {
	return []Fault{
		{FaultKill, "SIGKILL of the primary's manager and postgres", func(c *Cluster, p string) {
			c.Kill(p)
			c.WaitNewPrimary(p, "a new primary", "")
			c.Start(p)
		}},
		{FaultKillRestart, "SIGKILL of the primary, restarted at once in the same pod", func(c *Cluster, p string) {
			c.Kill(p)
			c.Start(p)
			c.WaitNewPrimary(p, "a new primary", "")
		}},
		{FaultStop, "SIGSTOP of the primary for longer than the lease", func(c *Cluster, p string) {
			stopped := time.Now()
			c.Insts[p].Signal(syscall.SIGSTOP)
			c.WaitNewPrimary(p, "a new primary", "")
			c.WaitFor(stopFor+time.Minute, fmt.Sprintf("%s stopped for %s", p, stopFor), func() (bool, string) {
				return time.Since(stopped) >= stopFor, ""
			})
			c.Insts[p].Signal(syscall.SIGCONT)
		}},
		{FaultDeletePod, "the primary's pod deleted with grace 0 and made again", func(c *Cluster, p string) {
			c.DeletePod(p)
			c.WaitNewPrimary(p, "a new primary", "")
		}},
		{FaultCut, "the primary's network cut, a client on its side still writing", func(c *Cluster, p string) {
			c.startStranded(p)
			c.Cut(p)
			c.WaitNewPrimary(p, "a new primary", "")
			c.Heal(p)
		}},
		{FaultKillBoth, "the primary and a synchronous replica killed together", killBoth},
		{FaultSwitchover, "planned switchover", func(c *Cluster, p string) {
			c.switchovers++
			trigger := fmt.Sprintf("planned-%d", c.switchovers)
			c.Cfg.Generation++
			c.Cfg.Switchover = &pgcontract.Switchover{Trigger: trigger, Type: "Switchover"}
			c.WriteConfig()
			c.WaitNewPrimary(p, "the switchover", trigger)
		}},
	}
}

// killBoth kills the primary and one of the two replicas of a synchronous
// set of ANY 1: the survivor cannot know whether the other holds a commit it
// lacks, so it must not take over until the killed replica is back.
func killBoth(c *Cluster, p string) {
	replicas := without(c.Names, p)
	killed, survivor := replicas[0], replicas[1]
	c.WaitFor(30*time.Second, "both replicas in the synchronous set", func() (bool, string) {
		st, err := c.Status(p)
		if err != nil {
			return false, err.Error()
		}
		return len(st.SynchronousStandbys) == 2, fmt.Sprint(st.SynchronousStandbys)
	})
	c.Kill(p)
	c.Kill(killed)
	c.WaitFor(60*time.Second, "the survivor refusing to take over", func() (bool, string) {
		st, err := c.Status(survivor)
		if err != nil {
			return false, err.Error()
		}
		return st.FailoverBlocked != "", st.State + " " + st.Reason
	})
	if h := c.Holder(); h == survivor {
		c.T.Fatalf("%s took over without proof that it holds every acknowledged commit", survivor)
	}
	st, _ := c.Status(survivor)
	c.T.Logf("%s refuses: %s", survivor, st.FailoverBlocked)
	c.Start(killed)
	c.WaitNewPrimary(p, "a new primary once the replica is back", "")
	c.Start(p)
}

func without(names []string, drop string) []string {
	var out []string
	for _, n := range names {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}

// FaultResult is what one fault did.
type FaultResult struct {
	Fault                  string
	OldPrimary, NewPrimary string
	Injected               time.Time
	// FullStrength is from the fault to every instance ready and the
	// replicas streaming from the primary.
	FullStrength time.Duration
	Report       pgwriter.Report
	// Failovers are the timeline changes the writers saw since the fault.
	Failovers []pgwriter.Failover
	// Steps are the new primary's from its log (and, in a switchover,
	// the old primary's handover).
	Steps Steps
	// Problems are lost writes, phantom writes and split brain: none may be.
	Problems []string
}

// RunFault runs f against the current primary, waits for full strength and
// compares the writers' logs with the table.
func (c *Cluster) RunFault(f Fault) FaultResult {
	c.T.Helper()
	r := FaultResult{Fault: f.Key, OldPrimary: c.Holder(), Injected: time.Now()}
	f.Run(c, r.OldPrimary)
	r.NewPrimary = c.WaitHealthy(2 * time.Minute)
	r.FullStrength = time.Since(r.Injected)
	c.stopStranded()
	r.Report = c.check(r.Injected)
	for _, fo := range pgwriter.Failovers(c.Records()) {
		if !fo.FirstNew.Before(r.Injected) {
			r.Failovers = append(r.Failovers, fo)
		}
	}
	r.Problems = Problems(r.Report, r.Failovers)
	r.Steps = readSteps(c.Insts[r.NewPrimary].LogPath(), r.Injected)
	old := readSteps(c.Insts[r.OldPrimary].LogPath(), r.Injected)
	r.Steps.HandingOver, r.Steps.HandedOver = old.HandingOver, old.HandedOver
	return r
}
