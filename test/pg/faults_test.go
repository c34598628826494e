package pg

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
)

// Faults against a 3-instance cluster in strict synchronous mode (ANY 1 of
// the replicas), one after the other, with a writer running throughout.
// After each: a new primary took over (or, when none could prove it holds
// every acknowledged commit, none did), the lost instance came back as a
// replica, and every acknowledged write is in the table; no write was
// acknowledged on the old timeline after the first on the new one.
func TestFaultsLoseNoAcknowledgedWrite(t *testing.T) {
	c := newCluster(t, 3, pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432,
		SynchronousMode: true, SynchronousModeStrict: true, SynchronousNodeCount: 1,
		LeaseDuration: pgcontract.Duration{Duration: 5 * time.Second}})
	primary := c.waitHealthy(3 * time.Minute)
	ctx := context.Background()
	must(t, pgwriter.Prepare(ctx, c.connString()))
	w := &pgwriter.Writer{ConnString: c.connString(), Interval: 20 * time.Millisecond}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.Run(wctx); close(done) }()
	defer func() { stop(); <-done }()
	c.waitFor(30*time.Second, "the writer's first acknowledged write", func() (bool, string) {
		return pgwriter.CountAcked(w.Records()) > 0, fmt.Sprint(lastErr(w.Records()))
	})

	faults := []struct {
		name string
		// inject breaks the primary and returns how to bring it back.
		inject func(primary string) (recover func())
		// trigger is the switchover the new primary must report.
		trigger string
	}{
		{"SIGKILL of the primary's manager and postgres", func(p string) func() {
			c.kill(p)
			return func() { c.start(p) }
		}, ""},
		{"SIGSTOP of the primary for longer than the lease", func(p string) func() {
			c.insts[p].signal(syscall.SIGSTOP)
			return func() { c.insts[p].signal(syscall.SIGCONT) }
		}, ""},
		{"the primary's network cut", func(p string) func() {
			c.cut(p)
			return func() { c.heal(p) }
		}, ""},
		{"planned switchover", func(string) func() {
			c.cfg.Generation++
			c.cfg.Switchover = &pgcontract.Switchover{Trigger: "planned-1", Type: "Switchover"}
			c.writeConfig()
			return func() {}
		}, "planned-1"},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			c.t = t
			mark := len(w.Records())
			old := primary
			recover := f.inject(old)
			c.waitNewPrimary(old, "a new primary", f.trigger)
			recover()
			primary = c.waitHealthy(90 * time.Second)
			c.checkWrites(w, mark)
		})
	}

	t.Run("the primary and a synchronous replica killed together", func(t *testing.T) {
		c.t = t
		mark := len(w.Records())
		old := primary
		replicas := without(c.names, old)
		killed, survivor := replicas[0], replicas[1]
		c.waitFor(30*time.Second, "both replicas in the synchronous set", func() (bool, string) {
			st, err := c.status(old)
			if err != nil {
				return false, err.Error()
			}
			return len(st.SynchronousStandbys) == 2, fmt.Sprint(st.SynchronousStandbys)
		})
		c.kill(old)
		c.kill(killed)
		// ANY 1 of two replicas: the survivor cannot know whether the
		// other holds a commit it lacks, so it must not take over.
		c.waitFor(60*time.Second, "the survivor refusing to take over", func() (bool, string) {
			st, err := c.status(survivor)
			if err != nil {
				return false, err.Error()
			}
			return st.FailoverBlocked != "", st.State + " " + st.Reason
		})
		st, _ := c.status(survivor)
		t.Logf("%s refuses: %s", survivor, st.FailoverBlocked)
		if h := c.holder(); h == survivor {
			t.Fatalf("%s took over without proof that it holds every acknowledged commit", survivor)
		}
		c.start(killed)
		c.waitNewPrimary(old, "a new primary once the replica is back", "")
		c.start(old)
		primary = c.waitHealthy(90 * time.Second)
		c.checkWrites(w, mark)
	})
}

// waitNewPrimary waits until an instance other than old holds the Lease and
// serves as primary (having carried out switchover trigger, when not empty).
func (c *cluster) waitNewPrimary(old, what, trigger string) {
	c.t.Helper()
	c.waitFor(60*time.Second, what, func() (bool, string) {
		h := c.holder()
		if h == old || h == "" {
			return false, "lease holder " + h
		}
		st, err := c.status(h)
		if err != nil {
			return false, err.Error()
		}
		return st.Role == pgcontract.RolePrimary && st.Ready && (trigger == "" || st.LastSwitchoverTrigger == trigger), st.State + " " + st.Reason
	})
}

// checkWrites waits for a write acknowledged by the current primary, then
// compares the whole log with the table and reports the failover since mark.
func (c *cluster) checkWrites(w *pgwriter.Writer, mark int) {
	c.t.Helper()
	primary := c.holder()
	c.waitFor(30*time.Second, "a write acknowledged after recovery", func() (bool, string) {
		rs := w.Records()
		for _, r := range rs[mark:] {
			if r.Outcome == pgwriter.Acked && r.Server == c.insts[primary].host.IP {
				return true, ""
			}
		}
		return false, fmt.Sprint(lastErr(rs))
	})
	records := w.Records()
	// The check reads the table from whichever instance is primary; a busy
	// machine can make one connect time out, so it is tried until it reads.
	var rep pgwriter.Report
	c.waitFor(60*time.Second, "the table read for the check", func() (bool, string) {
		r, err := pgwriter.Check(context.Background(), c.connString(), records)
		if err != nil {
			return false, err.Error()
		}
		rep = r
		return true, ""
	})
	c.t.Logf("writes so far: %s", rep)
	if len(rep.Lost) > 0 {
		c.t.Errorf("%d acknowledged writes lost: ids %v", len(rep.Lost), rep.Lost)
	}
	if len(rep.Phantom) > 0 {
		c.t.Errorf("%d writes that failed before reaching a server are in the table: ids %v", len(rep.Phantom), rep.Phantom)
	}
	since := records[mark].Start
	for _, f := range pgwriter.Failovers(records) {
		if f.FirstNew.Before(since) {
			continue // an earlier fault's
		}
		c.t.Logf("timeline %d → %d: %s from the last acknowledged write on the old timeline to the first on the new",
			f.OldTimeline, f.NewTimeline, f.Duration().Round(time.Millisecond))
		if len(f.SplitBrain) > 0 {
			c.t.Errorf("split brain: writes %v acknowledged on timeline %d after the first on %d", f.SplitBrain, f.OldTimeline, f.NewTimeline)
		}
	}
}

func lastErr(rs []pgwriter.Record) string {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Err != "" {
			return rs[i].Outcome.String() + ": " + rs[i].Err
		}
	}
	return "no error"
}
