package pge2e

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// TestSwitchoverThroughPgBouncerFailsNoWrite runs PGO's quickstart with
// spec.proxy.pgBouncer: the operator renders the pooler Deployment, whose pod
// (run by localpod like the instances, `lookout pgbouncer` with Debian's
// pgbouncer) becomes ready pointing at the primary. A client writes through
// the Secret's pgbouncer-uri over TLS while the trigger-switchover annotation
// moves the primary: every write is acknowledged (the pooler held them while
// the primary changed) and every acknowledged write is in the table.
func TestSwitchoverThroughPgBouncerFailsNoWrite(t *testing.T) {
	ns := fmt.Sprintf("pgpool-%d", time.Now().UnixNano()%1e6)
	must(t, k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	kc(t, "apply", "-n", ns, "-f", filepath.Join("..", "..", "examples-postgres", "hippo.yaml"))
	kc(t, "patch", "-n", ns, "pgc", clusterName, "--type=merge", "-p",
		`{"spec":{"proxy":{"pgBouncer":{"replicas":1}},"patroni":{"switchover":{"enabled":true}}}}`)

	pods, err := devenv.RunPostgresPods(testCtx, k8s, cp, bins, network, ns, clusterName, filepath.Join(work, ns))
	must(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			logPods(t, pods, ns)
		}
		pods.Stop()
	})
	pgc := waitCluster(t, ns, startDeadline, "3/3 instances with a synchronous standby and the pooler ready", func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "3/3" && c.Status.Primary != "" && len(c.Status.SynchronousStandbys) > 0 &&
			c.Status.Proxy != nil && c.Status.Proxy.PGBouncer.ReadyReplicas == 1
	}, pods)
	old := pgc.Status.Primary
	t.Logf("3 instances and the pooler ready, primary %s (machine load: %s)", old, loadavg())

	var secret corev1.Secret
	must(t, k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: pgrender.UserSecretName(clusterName, userName)}, &secret))
	uri := string(secret.Data[pgrender.KeyPoolerURI])
	u, err := url.Parse(uri)
	if err != nil || u.Hostname() != pgrender.PoolerName(clusterName)+"."+ns+".svc" || u.Port() != string(secret.Data[pgrender.KeyPoolerPort]) || u.Path != "/"+dbName {
		t.Fatalf("Secret %s: pgbouncer-uri %q does not name database %s at the pooler's Service", secret.Name, uri, dbName)
	}
	// Transaction pooling: pgx must not prepare statements on a server
	// connection the next transaction may not get. TLS is what the pooler
	// requires (pgx's default sslmode=prefer takes it).
	uri += "?default_query_exec_mode=simple_protocol"
	lookup := devenv.ServiceLookup(k8s)
	must(t, prepareWrites(uri, lookup))
	ctx, cancel := context.WithTimeout(testCtx, 30*time.Second)
	conn, err := connect(ctx, uri, lookup)
	if err != nil {
		cancel()
		t.Fatalf("connect with the Secret's pgbouncer-uri: %v", err)
	}
	var ssl bool
	err = conn.QueryRow(ctx, `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl)
	conn.Close(ctx)
	cancel()
	must(t, err)
	if !ssl {
		t.Errorf("the pooler reaches PostgreSQL without TLS")
	}

	w := &pgwriter.Writer{ConnString: uri, Lookup: lookup, Interval: 20 * time.Millisecond, Timeout: 30 * time.Second}
	stop := startWriter(w)
	defer stop()
	waitFor(t, 60*time.Second, "the writer's first acknowledged writes through the pooler", func() (bool, string) {
		return pgwriter.CountAcked(w.Records()) >= 20, lastError(w.Records())
	})

	kc(t, "annotate", "-n", ns, "pgc", clusterName, pgcontract.AnnotationTriggerSwitchover+"=through-the-pooler", "--overwrite")
	pgc = waitCluster(t, ns, failoverDeadline, "the switchover carried out and a new primary", func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Patroni.Switchover != nil && *c.Status.Patroni.Switchover == "through-the-pooler" &&
			c.Status.Primary != "" && c.Status.Primary != old
	}, pods)
	t.Logf("primary %s → %s", old, pgc.Status.Primary)
	mark := pgwriter.CountAcked(w.Records())
	waitFor(t, 60*time.Second, "acknowledged writes after the switchover", func() (bool, string) {
		return pgwriter.CountAcked(w.Records()) > mark+20, lastError(w.Records())
	})
	stopping := time.Now()
	stop()
	records := w.Records()
	rep, err := devenv.CheckWrites(testCtx, uri, lookup, records)
	must(t, err)
	t.Logf("writes through the pooler: %s", rep)
	if len(rep.Lost) > 0 {
		t.Errorf("%d acknowledged writes lost: %v", len(rep.Lost), rep.Lost)
	}
	// Every write is acknowledged but the one the writer's stop cut short.
	for _, r := range records {
		if r.Outcome != pgwriter.Acked && r.End.Before(stopping) {
			t.Errorf("write %d through the pooler was %s: %s", r.ID, r.Outcome, r.Err)
		}
	}
	fos := pgwriter.Failovers(records)
	if len(fos) != 1 {
		t.Fatalf("the writes show %d changes of timeline, want 1", len(fos))
	}
	t.Logf("write pause through the pooler: %s (machine load: %s)", fos[0].Duration().Round(time.Millisecond), loadavg())
	if !strings.Contains(kc(t, "get", "deployment", "-n", ns, pgrender.PoolerName(clusterName)), "1/1") {
		t.Errorf("the pooler Deployment is not 1/1 ready")
	}
}
