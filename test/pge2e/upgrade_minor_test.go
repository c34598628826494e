package pge2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
)

// minorUpgradeDeadline bounds a rolling minor upgrade of three instances: each
// of four steps (two replicas, the switchover, the old primary) waits for a
// pod to be replaced and stream again, and for the controller's next look.
const minorUpgradeDeadline = 8 * time.Minute

// TestRollingMinorUpgradeUnderLoadFailsNoTransaction runs PGO's quickstart
// with a PgBouncer on two real minor releases of PostgreSQL 15 (the
// package archive's two postgresql-15 packages, unpacked side by side): the
// cluster starts on lookout-postgres:<older>, pgbench and the id-tagged
// writer go through the pooler, and spec.image changes to
// lookout-postgres:<newer>. The operator moves one instance at a time —
// replicas first, then a switchover through the pooler, then the old
// primary — until every instance reports the newer release. Asserted: 0
// failed pgbench transactions and no aborted client, every write
// acknowledged and none lost, never more than one instance down, and
// `SELECT version()` on every instance names the newer release.
func TestRollingMinorUpgradeUnderLoadFailsNoTransaction(t *testing.T) {
	minors, err := controlplane.PostgresMinors(testCtx, 15, os.Stderr)
	must(t, err)
	if len(minors) < 2 {
		t.Fatalf("the package archive lists %d release(s) of postgresql-15 (%v); a minor upgrade needs two: run apt-get update with the release's security suite in the sources", len(minors), minors)
	}
	from, to := minors[0], minors[len(minors)-1]
	fromImage, toImage := "lookout-postgres:"+from.Minor, "lookout-postgres:"+to.Minor

	ns := fmt.Sprintf("pgminor-%d", time.Now().UnixNano()%1e6)
	must(t, k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	pods, err := devenv.RunPostgresPods(testCtx, k8s, cp, bins, network, ns, clusterName, filepath.Join(work, ns))
	must(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			logPods(t, pods, ns)
		}
		pods.Stop()
	})
	// Each image runs its release, from a copy the pods' user can reach.
	for _, m := range []controlplane.PostgresMinor{from, to} {
		placed, err := m.Shared()
		must(t, err)
		pods.RunImageFrom("lookout-postgres:"+m.Minor, placed.BinDir())
	}

	// PGO's quickstart with the older image and a pooler from the start.
	b, err := os.ReadFile(filepath.Join("..", "..", "examples-postgres", "hippo.yaml"))
	must(t, err)
	var hippo postgresv1beta1.PostgresCluster
	must(t, yaml.Unmarshal(b, &hippo))
	hippo.Namespace = ns
	hippo.Spec.Image = fromImage
	hippo.Spec.Proxy = &postgresv1beta1.PostgresProxySpec{PGBouncer: &postgresv1beta1.PGBouncerPodSpec{Replicas: ptr.To[int32](1)}}
	must(t, k8s.Create(testCtx, &hippo))
	pgc := waitCluster(t, ns, startDeadline, "3/3 instances on "+from.Minor+" with a synchronous standby and the pooler ready", func(c *postgresv1beta1.PostgresCluster) bool {
		on := 0
		for _, v := range c.Status.InstanceVersions {
			if v.Version == from.Minor {
				on++
			}
		}
		return c.Status.Ready == "3/3" && c.Status.Primary != "" && len(c.Status.SynchronousStandbys) > 0 && on == 3 &&
			c.Status.Proxy != nil && c.Status.Proxy.PGBouncer.ReadyReplicas == 1
	}, pods)
	t.Logf("3 instances on PostgreSQL %s and the pooler ready, primary %s (machine load: %s)", from.Minor, pgc.Status.Primary, loadavg())

	var log strings.Builder
	res, err := devenv.MinorUpgrade{Client: k8s, Namespace: ns, Cluster: clusterName, User: userName, To: toImage,
		Deadline: minorUpgradeDeadline, Log: &log}.Run(testCtx)
	t.Logf("the upgrade as the status showed it:\n%s", log.String())
	if err != nil {
		t.Fatalf("rolling minor upgrade %s → %s: %v", from.Minor, to.Minor, err)
	}
	t.Logf("%s → %s in %s (machine load: %s); %s", from.Minor, to.Minor, res.Took.Round(time.Second), loadavg(), res.Condition)
	t.Logf("pgbench through the pooler: %s", res.Pgbench)
	t.Logf("writes through the pooler: %s; write pause at the switchover %s", res.Writes, res.WritePause.Round(time.Millisecond))

	if res.Pgbench.Failed > 0 || len(res.Pgbench.Errors) > 0 {
		t.Errorf("pgbench: %d failed transactions, %d runs with an aborted client, want none: %v", res.Pgbench.Failed, len(res.Pgbench.Errors), res.Pgbench.Errors)
	}
	if res.Pgbench.Processed == 0 || res.Pgbench.Runs < 2 {
		t.Errorf("pgbench ran %d times, %d transactions: it did not run across the upgrade", res.Pgbench.Runs, res.Pgbench.Processed)
	}
	if len(res.NotAcked) > 0 {
		t.Errorf("%d writes not acknowledged: %v", len(res.NotAcked), res.NotAcked)
	}
	if len(res.Writes.Lost) > 0 || len(res.Writes.Phantom) > 0 {
		t.Errorf("acknowledged writes lost: %v; failed writes in the table: %v", res.Writes.Lost, res.Writes.Phantom)
	}
	if res.Switchovers != 1 || res.NewPrimary == res.OldPrimary {
		t.Errorf("primary %s → %s with %d changes of timeline, want one switchover", res.OldPrimary, res.NewPrimary, res.Switchovers)
	}
	if res.MinReady < 2 {
		t.Errorf("the status showed %d of 3 instances ready at one point: more than one was down", res.MinReady)
	}
	if len(res.Versions) != 3 {
		t.Errorf("SELECT version() answered by %d instances, want 3", len(res.Versions))
	}
	for _, line := range res.VersionLines() {
		t.Logf("SELECT version() on %s", line)
		if !strings.Contains(line, "PostgreSQL "+to.Minor+" ") {
			t.Errorf("%s: want PostgreSQL %s", line, to.Minor)
		}
	}
}
