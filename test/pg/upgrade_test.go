package pg

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
)

// postgres17 is where make tools (hack/tools postgres17) installs PostgreSQL 17.
const postgres17 = "/opt/lookout-postgresql/lib/postgresql/17/bin"

// A failure after pg_upgrade --check passed — the primary already shut
// down for pg_upgrade --link, the replicas stopped — leaves the cluster on
// 15: the same primary serves writes again, the replicas stream from it,
// nothing of 17 is left, the failure is reported, and no acknowledged write
// is lost. The failure is injected (LOOKOUT_TEST_UPGRADE_FAULT): the
// check's refusals are real ones (test/pge2e).
func TestAMajorUpgradeThatFailsAfterTheCheckLeavesFifteenServing(t *testing.T) {
	if _, err := os.Stat(filepath.Join(postgres17, "pg_upgrade")); err != nil {
		t.Fatalf("PostgreSQL 17 is not installed (make tools installs it: go run ./hack/tools postgres17): %v", err)
	}
	t.Setenv("LOOKOUT_TEST_UPGRADE_FAULT", "upgrade")
	c := newCluster(t, 3, pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432, SynchronousMode: true, SynchronousNodeCount: 1,
		LeaseDuration: pgcontract.Duration{Duration: 5 * time.Second}})
	primary := c.WaitHealthy(3 * time.Minute)
	c.StartWriter()

	res := c.MajorUpgrade(17, 4*time.Minute)
	t.Logf("upgrade: %s (%s), primary down %s, back to 3 streaming instances %s after the request", res.Step, res.Error, res.Downtime, res.Total.Round(time.Millisecond))
	if res.Step != pgcontract.UpgradeFailed || !strings.Contains(res.Error, "injected") {
		t.Fatalf("the primary reports %s %q, want Failed with the injected failure", res.Step, res.Error)
	}
	checkMajor(t, c, primary, 15)
	for _, n := range c.Names {
		in := c.Insts[n]
		if _, err := os.Stat(filepath.Join(in.Dir, "data", "pg17")); !os.IsNotExist(err) {
			t.Errorf("%s: a PostgreSQL 17 directory is left (%v)", n, err)
		}
		if _, err := os.Stat(filepath.Join(in.Dir, "data", pgcontract.MajorFile)); !os.IsNotExist(err) {
			t.Errorf("%s: %s written for a failed upgrade (%v)", n, pgcontract.MajorFile, err)
		}
	}
	ctx := context.Background()
	conn := c.Connect(c.ConnString())
	defer conn.Close(ctx)
	var version string
	must(t, conn.QueryRow(ctx, `SELECT current_setting('server_version')`).Scan(&version))
	_, err := conn.Exec(ctx, `CREATE TABLE after_the_failure (x int); INSERT INTO after_the_failure VALUES (1)`)
	must(t, err)
	if !strings.HasPrefix(version, "15.") {
		t.Errorf("the primary accepts writes on %q, want 15", version)
	}
	c.StopWriters()
	if p := pgharness.Problems(res.Report, nil); len(p) > 0 {
		t.Errorf("writes: %v", p)
	}
	t.Logf("writes: %s", res.Report)
}

// The apiserver stops answering the primary while it runs pg_upgrade, for
// twice as long as the Lease lasts. The primary, postgres stopped, does
// not fence itself; the stopped replicas see it answer that it upgrades
// and do not give the upgrade up (they would elect one of them on 15); the
// new major starts once the Lease is renewed again, and every instance
// ends on 17 with no acknowledged write lost.
func TestAMajorUpgradeOutlastsAnApiserverThatStopsAnswering(t *testing.T) {
	if _, err := os.Stat(filepath.Join(postgres17, "pg_upgrade")); err != nil {
		t.Fatalf("PostgreSQL 17 is not installed (make tools installs it: go run ./hack/tools postgres17): %v", err)
	}
	c := newCluster(t, 3, pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432, SynchronousMode: true, SynchronousNodeCount: 1,
		LeaseDuration: pgcontract.Duration{Duration: 5 * time.Second}})
	primary := c.WaitHealthy(3 * time.Minute)
	c.StartWriter()

	leases := clientset.CoordinationV1().Leases(c.NS)
	var cut, healed time.Time
	defer func() {
		if !cut.IsZero() && healed.IsZero() {
			c.HealAPIServer(primary)
		}
	}()
	res := c.MajorUpgrade(17, 4*time.Minute, func(st pgcontract.Status) {
		switch {
		case cut.IsZero():
			// Postgres stopped for pg_upgrade (not ready while upgrading).
			if u := st.MajorUpgrade; u != nil && u.Step == pgcontract.UpgradeUpgrading && !st.Ready {
				c.CutAPIServer(primary)
				cut = time.Now()
			}
		case healed.IsZero():
			l, err := leases.Get(context.Background(), pgcontract.LeaseName(c.Name), metav1.GetOptions{})
			if err != nil {
				return
			}
			if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != primary {
				t.Errorf("%q took the Lease from %s while it upgraded", h, primary)
			} else if time.Since(l.Spec.RenewTime.Time) <= 2*c.Cfg.LeaseDuration.Duration {
				return
			}
			c.HealAPIServer(primary)
			healed = time.Now()
		}
	})
	if cut.IsZero() || healed.IsZero() {
		t.Fatalf("the upgrade ended (%s) before the apiserver was cut off and healed (cut %v, healed %v)", res.Step, cut, healed)
	}
	t.Logf("upgrade: %s, the apiserver did not answer %s for %s, primary down %s, back to 3 streaming instances %s after the request",
		res.Step, primary, healed.Sub(cut).Round(time.Millisecond), res.Downtime, res.Total.Round(time.Millisecond))
	if res.Step != pgcontract.UpgradeUpgraded {
		t.Fatalf("the primary reports %s %q, want Upgraded", res.Step, res.Error)
	}
	checkMajor(t, c, primary, 17)
	c.StopWriters()
	if p := pgharness.Problems(res.Report, nil); len(p) > 0 {
		t.Errorf("writes: %v", p)
	}
	t.Logf("writes: %s", res.Report)
}

// checkMajor checks that primary still holds the Lease and that every
// instance runs PostgreSQL major.
func checkMajor(t *testing.T, c *pgharness.Cluster, primary string, major int) {
	t.Helper()
	if now := c.Holder(); now != primary {
		t.Errorf("the primary changed from %s to %s", primary, now)
	}
	for _, n := range c.Names {
		st, err := c.Status(n)
		must(t, err)
		if !strings.HasPrefix(st.PostgresVersion, strconv.Itoa(major)+".") {
			t.Errorf("%s runs %q, want %d", n, st.PostgresVersion, major)
		}
	}
}
