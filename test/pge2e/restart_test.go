package pge2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// restartDeadline bounds a rolling restart of three instances: each step
// waits for the controller's next look at the cluster (10 s apart while
// nothing else happens) and a restart.
const restartDeadline = 4 * time.Minute

// checkRollingRestart changes a parameter PostgreSQL takes only at start
// (max_connections, raised) while a client writes through the Secret's uri,
// and checks that it is rolled out as a platform team would do it by hand:
// every instance runs with the new value in the end, the primary was
// switched over (not restarted under its clients), the cluster is whole
// again, and no acknowledged write is lost.
func checkRollingRestart(t *testing.T, ns, uri string, lookup devenv.LookupFunc, secret *corev1.Secret, pods *devenv.PostgresPods, primary string) {
	t.Helper()
	// Ids of their own: the failover's writer's rows are in the table.
	w := &pgwriter.Writer{ConnString: uri, Lookup: lookup, Interval: 20 * time.Millisecond, FirstID: 1 << 20}
	wctx, stopWriter := context.WithCancel(testCtx)
	writerDone := make(chan struct{})
	go func() { w.Run(wctx); close(writerDone) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopWriter()
			<-writerDone
		}
	}
	defer stop()
	waitFor(t, 60*time.Second, "the writer's first acknowledged writes", func() (bool, string) {
		return pgwriter.CountAcked(w.Records()) >= 20, lastError(w.Records())
	})

	const want = "150"
	patch := fmt.Sprintf(`{"spec":{"patroni":{"dynamicConfiguration":{"postgresql":{"parameters":{"max_connections":%q}}}}}}`, want)
	var pgc postgresv1beta1.PostgresCluster
	must(t, k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: clusterName}, &pgc))
	must(t, k8s.Patch(testCtx, &pgc, client.RawPatch(types.MergePatchType, []byte(patch))))
	changed := time.Now()
	t.Logf("max_connections set to %s", want)

	pending := false
	got := waitCluster(t, ns, restartDeadline, "max_connections applied on every instance by a rolling restart, 3/3 ready", func(c *postgresv1beta1.PostgresCluster) bool {
		if len(c.Status.PendingRestart) > 0 {
			pending = true
		}
		return pending && len(c.Status.PendingRestart) == 0 && c.Status.Ready == "3/3" && c.Status.Primary != "" &&
			c.Status.LastSwitchover != nil && c.Status.LastSwitchover.To == c.Status.Primary &&
			len(c.Status.Replicas) == 2 && !slices.ContainsFunc(c.Status.Replicas, func(r postgresv1beta1.ReplicaStatus) bool { return r.State != "streaming" })
	}, pods)
	t.Logf("rolled out %s after the change: primary %s, last switchover %+v", time.Since(changed).Round(time.Second), got.Status.Primary, *got.Status.LastSwitchover)
	if got.Status.Primary == primary {
		t.Errorf("the primary %s was not switched over", primary)
	}

	// Every instance answers with the new value (asked until it does: the
	// status the wait above read may be a moment older than the pods).
	waitFor(t, 60*time.Second, "max_connections "+want+" on every instance", func() (bool, string) {
		var list corev1.PodList
		if err := k8s.List(testCtx, &list, client.InNamespace(ns), client.MatchingLabels{pgcontract.LabelCluster: clusterName}); err != nil {
			return false, err.Error()
		}
		var wrong []string
		for _, p := range list.Items {
			host := p.Name + "." + pgrender.PodsServiceName(clusterName) + "." + ns + ".svc"
			if out, err := psql(ns, secret, host, p.Status.PodIP, "SHOW max_connections"); err != nil || out != want {
				wrong = append(wrong, fmt.Sprintf("%s: %q (%v)", p.Name, out, err))
			}
		}
		return len(list.Items) == 3 && len(wrong) == 0, fmt.Sprint(wrong)
	})

	mark := pgwriter.CountAcked(w.Records())
	waitFor(t, 60*time.Second, "acknowledged writes after the rolling restart", func() (bool, string) {
		return pgwriter.CountAcked(w.Records()) > mark+20, lastError(w.Records())
	})
	stop()
	records := w.Records()
	checkWriteLog(t, uri, lookup, records, "writes through the rolling restart")
	for _, f := range pgwriter.Failovers(records) {
		t.Logf("the switchover as the client saw it: %s without an acknowledged write (timeline %d → %d)", f.Duration().Round(time.Millisecond), f.OldTimeline, f.NewTimeline)
		if len(f.SplitBrain) > 0 {
			t.Errorf("writes acknowledged on the old timeline after the first on the new one: %v", f.SplitBrain)
		}
	}
}
