package postgres

import (
	"testing"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// The rolling restart's one step for each state a cluster can be observed
// in: replicas first (one at a time, in name order, only streaming ones),
// then a switchover; the primary in place only when no standby can take
// over or when standbys must not go first; nothing while the cluster is not
// whole or shut down; an instance that restarted for this generation and
// still waits is passed over.
func TestRollingRestartSteps(t *testing.T) {
	streamingReplicas := []postgresv1beta1.ReplicaStatus{{Name: "b", State: "streaming"}, {Name: "c", State: "streaming"}}
	pending := func(name string, done string, lowers bool) postgresv1beta1.InstancePendingRestart {
		return postgresv1beta1.InstancePendingRestart{Name: name, Parameters: []string{"max_connections"}, RestartDone: done, LowersStandbyLimits: lowers}
	}
	for _, tc := range []struct {
		name       string
		status     postgresv1beta1.PostgresClusterStatus
		shutdown   bool
		restart    string // instance asked to restart
		switchover bool
	}{
		{name: "nothing pending", status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "3/3", Primary: "a", Replicas: streamingReplicas}},
		{name: "every instance pending: the first replica", restart: "b",
			status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "3/3", Primary: "a", Replicas: streamingReplicas,
				PendingRestart: []postgresv1beta1.InstancePendingRestart{pending("a", "", false), pending("c", "", false), pending("b", "", false)}}},
		{name: "a replica restarted for this generation: the next", restart: "c",
			status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "3/3", Primary: "a", Replicas: streamingReplicas,
				PendingRestart: []postgresv1beta1.InstancePendingRestart{pending("a", "", false), pending("b", "7/b", false), pending("c", "", false)}}},
		{name: "only the primary: a switchover", switchover: true,
			status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "3/3", Primary: "a", Replicas: streamingReplicas,
				PendingRestart: []postgresv1beta1.InstancePendingRestart{pending("a", "", false)}}},
		{name: "a lowered standby limit: the primary first, in place", restart: "a",
			status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "3/3", Primary: "a", Replicas: streamingReplicas,
				PendingRestart: []postgresv1beta1.InstancePendingRestart{pending("a", "", true), pending("b", "", false)}}},
		{name: "one instance: in place", restart: "a",
			status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "1/1", Primary: "a",
				PendingRestart: []postgresv1beta1.InstancePendingRestart{pending("a", "", false)}}},
		{name: "not whole: wait",
			status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "2/3", Primary: "a", Replicas: streamingReplicas[:1],
				PendingRestart: []postgresv1beta1.InstancePendingRestart{pending("b", "", false)}}},
		{name: "a replica not streaming is not restarted",
			status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "3/3", Primary: "a", Replicas: []postgresv1beta1.ReplicaStatus{{Name: "b", State: "catchup"}},
				PendingRestart: []postgresv1beta1.InstancePendingRestart{pending("b", "", false)}}},
		{name: "an instance has yet to apply the generation: wait",
			status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 6, Ready: "3/3", Primary: "a", Replicas: streamingReplicas,
				PendingRestart: []postgresv1beta1.InstancePendingRestart{pending("a", "", false)}}},
		{name: "shut down: nothing", shutdown: true,
			status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "3/3", Primary: "a", Replicas: streamingReplicas,
				PendingRestart: []postgresv1beta1.InstancePendingRestart{pending("b", "", false)}}},
		{name: "the primary restarted for this generation and still waits: passed over",
			status: postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "3/3", Primary: "a", Replicas: streamingReplicas,
				PendingRestart: []postgresv1beta1.InstancePendingRestart{pending("a", "7/a", false)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &postgresv1beta1.PostgresCluster{}
			c.Generation = 7
			c.Status = tc.status
			c.Spec.Shutdown = &tc.shutdown
			restart, sw := rollingRestart(c)
			got := ""
			if restart != nil {
				got = restart.Instance
				if restart.Token != "7/"+got {
					t.Errorf("token %q, want 7/%s", restart.Token, got)
				}
			}
			if got != tc.restart {
				t.Errorf("restart %q, want %q", got, tc.restart)
			}
			if (sw != nil) != tc.switchover {
				t.Fatalf("switchover %+v, want one: %v", sw, tc.switchover)
			}
			if sw != nil && (sw.Trigger != RestartTriggerPrefix+"7/a" || sw.Type != postgresv1beta1.SwitchoverTypeSwitchover || sw.Target != "") {
				t.Errorf("switchover %+v", sw)
			}
			if restart != nil && sw != nil {
				t.Error("a restart and a switchover at once")
			}
		})
	}
}

// A switchover the user asked for comes first: the rolling restart waits.
func TestUserSwitchoverBeforeRollingRestart(t *testing.T) {
	c := &postgresv1beta1.PostgresCluster{}
	c.Generation = 7
	on := true
	c.Spec.Patroni = &postgresv1beta1.PatroniSpec{Switchover: &postgresv1beta1.PatroniSwitchover{Enabled: on}}
	c.Annotations = map[string]string{pgcontract.AnnotationTriggerSwitchover: "one"}
	c.Status = postgresv1beta1.PostgresClusterStatus{AppliedGeneration: 7, Ready: "3/3", Primary: "a",
		Replicas:       []postgresv1beta1.ReplicaStatus{{Name: "b", State: "streaming"}},
		PendingRestart: []postgresv1beta1.InstancePendingRestart{{Name: "b", Parameters: []string{"shared_buffers"}}}}
	cfg := config(&Inputs{Cluster: c}, &dynamic{}, "")
	if cfg.Switchover == nil || cfg.Switchover.Trigger != "one" || cfg.Restart != nil {
		t.Errorf("switchover %+v, restart %+v: want the user's switchover alone", cfg.Switchover, cfg.Restart)
	}
	c.Annotations = nil
	cfg = config(&Inputs{Cluster: c}, &dynamic{}, "")
	if cfg.Restart == nil || cfg.Restart.Instance != "b" {
		t.Errorf("restart %+v, want b", cfg.Restart)
	}
}
