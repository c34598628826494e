package pg

import (
	"testing"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
)

// Every fault of pgharness.Faults against a 3-instance cluster in strict
// synchronous mode (ANY 1 of the replicas), one after the other, with a
// writer running throughout: SIGKILL, SIGKILL with the instance restarted at
// once in the same pod (as a kubelet does), SIGSTOP beyond the lease, the pod
// deleted with grace 0, the network cut (with a client on the cut side
// still writing), the primary and a synchronous replica killed together (no
// promotion until the replica is back), a planned switchover. After each: a
// new primary took over, the old one came back as a replica, every
// acknowledged write is in the table, and no write was acknowledged on the
// old timeline after the first on the new one.
func TestFaultsLoseNoAcknowledgedWrite(t *testing.T) {
	c := newCluster(t, 3, pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432,
		SynchronousMode: true, SynchronousModeStrict: true, SynchronousNodeCount: 1,
		LeaseDuration: pgcontract.Duration{Duration: 5 * time.Second}})
	c.WaitHealthy(3 * time.Minute)
	c.StartWriter()
	defer func() { c.T = t }() // the cleanup logs through the test, not a finished subtest
	for _, f := range pgharness.Faults(0) {
		t.Run(f.Name, func(t *testing.T) {
			c.T = t
			r := c.RunFault(f)
			t.Logf("%s → %s, every instance ready %s after the fault; writes so far: %s",
				r.OldPrimary, r.NewPrimary, r.FullStrength.Round(time.Millisecond), r.Report)
			if !r.Steps.PrimaryLost.IsZero() {
				t.Logf("%s saw the primary lost %s after the fault: %s", r.NewPrimary, r.Steps.PrimaryLost.Sub(r.Injected).Round(time.Millisecond), r.Steps.LostReason)
			}
			for _, fo := range r.Failovers {
				t.Logf("timeline %d → %d: %s from the last acknowledged write on the old timeline to the first on the new",
					fo.OldTimeline, fo.NewTimeline, fo.Duration().Round(time.Millisecond))
			}
			if len(r.Failovers) == 0 {
				t.Errorf("the writers saw no new timeline after the fault")
			}
			for _, p := range r.Problems {
				t.Error(p)
			}
			if f.Key == pgharness.FaultSwitchover {
				checkSwitchoverDuration(t, c, r)
			}
		})
	}
}

// checkSwitchoverDuration: the new primary reports how long the switchover took
// (status.lastSwitchover.duration), from the old primary's pause to its promotion:
// more than nothing, and no more than the old primary's first handover step to the
// promotion, as both logged them.
func checkSwitchoverDuration(t *testing.T, c *pgharness.Cluster, r pgharness.FaultResult) {
	t.Helper()
	st, err := c.Status(r.NewPrimary)
	if err != nil {
		t.Fatal(err)
	}
	d := st.LastPromotionDuration.Duration
	if st.LastPromotionReason != pgcontract.PromotionSwitchover {
		t.Errorf("%s reports its last promotion as %q, want %q", r.NewPrimary, st.LastPromotionReason, pgcontract.PromotionSwitchover)
	}
	upper := r.FullStrength
	if s := r.Steps; !s.HandingOver.IsZero() && !s.Promoted.IsZero() {
		upper = s.Promoted.Sub(s.HandingOver)
	}
	if d <= 0 || d > upper+2*time.Millisecond { // the log times are to the millisecond
		t.Errorf("%s reports the switchover took %s; want more than 0 and at most %s (from the handover to the promotion)", r.NewPrimary, d, upper)
	}
	t.Logf("the new primary reports the switchover took %s (handover logged to promotion logged: %s)", d, upper.Round(time.Millisecond))
}
