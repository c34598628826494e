package node

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/node"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// switchoverThroughThePooler adds PGO's pooler (spec.proxy.pgBouncer) to the running
// cluster: its pod runs lookout-postgres's pgbouncer on the kubelet. A client writes
// through the user Secret's pgbouncer-uri while the trigger-switchover annotation moves
// the primary: every write is acknowledged, every acknowledged write is in the table,
// and the status reports the switchover with a duration above zero.
func switchoverThroughThePooler(t *testing.T, env *node.PostgresEnv, ns, cluster, user string, diagnose func() string) {
	ctx := context.Background()
	if out, err := env.Kubectl(ctx, "patch", "-n", ns, "pgc", cluster, "--type=merge", "-p",
		`{"spec":{"proxy":{"pgBouncer":{"replicas":1}},"patroni":{"switchover":{"enabled":true}}}}`); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("%s", out)
	}
	pgc := waitCluster(t, env, ns, cluster, pgStartDeadline, "the pooler ready on the kubelet", diagnose, func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "3/3" && c.Status.Primary != "" && c.Status.Proxy != nil && c.Status.Proxy.PGBouncer.ReadyReplicas == 1
	})
	old := pgc.Status.Primary
	var secret corev1.Secret
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgrender.UserSecretName(cluster, user)}, &secret))
	uri := string(secret.Data[pgrender.KeyPoolerURI])
	if !strings.Contains(uri, pgrender.PoolerName(cluster)+"."+ns+".svc") {
		t.Fatalf("Secret %s: pgbouncer-uri %q does not name the pooler's Service", secret.Name, uri)
	}
	// Transaction pooling: no statement prepared on a server connection the next
	// transaction may not get.
	uri += "?default_query_exec_mode=simple_protocol"
	lookup := devenv.ServiceLookup(env.Client)
	w := &pgwriter.Writer{ConnString: uri, Lookup: lookup, Interval: 20 * time.Millisecond, Timeout: 30 * time.Second, FirstID: 1 << 40}
	stop := w.Start(ctx)
	defer stop()
	waitAcked(t, w, 20, "first acknowledged writes through the pooler")

	asked := time.Now()
	if _, err := env.Kubectl(ctx, "annotate", "-n", ns, "pgc", cluster, pgcontract.AnnotationTriggerSwitchover+"=through-the-pooler", "--overwrite"); err != nil {
		t.Fatal(err)
	}
	pgc = waitCluster(t, env, ns, cluster, pgFailoverDeadline, "the switchover carried out and reported", diagnose, func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Patroni.Switchover != nil && *c.Status.Patroni.Switchover == "through-the-pooler" &&
			c.Status.Primary != "" && c.Status.Primary != old && c.Status.LastSwitchover != nil && c.Status.LastSwitchover.To == c.Status.Primary
	})
	sw := pgc.Status.LastSwitchover
	took, err := time.ParseDuration(sw.Duration)
	if err != nil || took <= 0 || took > time.Since(asked) {
		t.Errorf("status.lastSwitchover.duration %q: want a duration above 0 and below the %s since the annotation", sw.Duration, time.Since(asked).Round(time.Millisecond))
	}
	mark := pgwriter.CountAcked(w.Records())
	waitAcked(t, w, mark+20, "acknowledged writes through the pooler after the switchover")
	stopping := time.Now()
	stop()
	records := w.Records()
	rep, err := devenv.CheckWrites(ctx, uri, lookup, records)
	must(t, err)
	t.Logf("switchover through the pooler on the node: %s → %s, the status reports %s; writes: %s", old, sw.To, sw.Duration, rep)
	if len(rep.Lost) > 0 {
		t.Errorf("%d acknowledged writes lost: %v", len(rep.Lost), rep.Lost)
	}
	// The pooler holds the writes while the primary changes: every one is acknowledged
	// but one the writer's stop cut short.
	for _, r := range records {
		if r.Outcome != pgwriter.Acked && r.End.Before(stopping) {
			t.Errorf("write %d through the pooler was %s: %s", r.ID, r.Outcome, r.Err)
		}
	}
	pause := time.Duration(0)
	for i := 1; i < len(records); i++ {
		if records[i].Outcome == pgwriter.Acked && records[i-1].Outcome == pgwriter.Acked {
			pause = max(pause, records[i].End.Sub(records[i-1].End))
		}
	}
	t.Logf("the longest gap between two acknowledged writes through the pooler: %s", pause.Round(time.Millisecond))
}
