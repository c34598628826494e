package pge2e

import (
	"fmt"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/node"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// TestTheArchivingAlertFiresWhenS3FailsAndResolves makes the S3 server a
// cluster archives to answer 503 to everything: WAL archiving fails, the
// shipped PostgresArchivingFailing alert fires through a Lookout-run
// Prometheus and Alertmanager to the team's webhook; S3 comes back, the
// archiver catches up and the alert resolves. The rule evaluated is the
// operator's, copied with `for: 10s` instead of its 5 minutes (the
// shipped rule, with its 5 minutes, is pinned by the render's unit test).
func TestTheArchivingAlertFiresWhenS3FailsAndResolves(t *testing.T) {
	const cluster = "arch"
	ns := fmt.Sprintf("pgarch-%d", time.Now().UnixNano()%1e6)
	must(t, k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	s3 := startS3Repo(t, ns)
	apply(t, ns, clusterManifest(cluster, s3Backups(s3, "/pgbackrest/"+ns+"/repo1", "", "")))
	pods := runPods(t, ns, cluster)
	start := time.Now()
	waitPGC(t, ns, cluster, startDeadline, "a ready primary with the stanza created", func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "1/1" && c.Status.Primary != "" && c.Status.PGBackRest != nil &&
			len(c.Status.PGBackRest.Repos) == 1 && c.Status.PGBackRest.Repos[0].StanzaCreated
	}, pods)
	t.Logf("ready, stanza created %s after kubectl apply (machine load: %s)", time.Since(start).Round(time.Second), loadavg())

	// The operator's rule, with a shorter for, in a PrometheusRule of the
	// test's own that the Prometheus selects instead.
	var shipped monitoringv1.PrometheusRule
	must(t, k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: pgrender.MonitorName(cluster)}, &shipped))
	var rule *monitoringv1.Rule
	for i, r := range shipped.Spec.Groups[0].Rules {
		if r.Alert == "PostgresArchivingFailing" {
			rule = &shipped.Spec.Groups[0].Rules[i]
		}
	}
	if rule == nil {
		t.Fatalf("the cluster's PrometheusRule has no PostgresArchivingFailing: %+v", shipped.Spec)
	}
	fast := monitoringv1.Duration("10s")
	rule.For = &fast
	fastRules := map[string]string{"lookout.test/rules": "archiving"}
	must(t, k8s.Create(testCtx, &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "archiving-fast", Labels: fastRules},
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "archiving-fast", Rules: []monitoringv1.Rule{*rule}}}},
	}))
	recv, promURL := runAlerting(t, ns,
		&metav1.LabelSelector{MatchLabels: map[string]string{pgcontract.LabelCluster: cluster}},
		&metav1.LabelSelector{MatchLabels: fastRules})
	archived := fmt.Sprintf(`%s{namespace=%q,cluster=%q}`, pgcontract.MetricArchiveLastArchived, ns, cluster)
	uri := userURI(t, ns, cluster)
	lookup := devenv.ServiceLookup(k8s)
	execURI(t, uri, lookup, `CREATE TABLE marks (id int PRIMARY KEY, note text); INSERT INTO marks VALUES (1, 'before')`)
	if err := node.WaitQuery(testCtx, promURL, archived+" > 0", 3*time.Minute); err != nil {
		t.Fatalf("Prometheus sees no segment archived: %v", err)
	}

	// S3 fails: the next segment (archive_timeout switches one within
	// 30 s of a write) cannot be archived.
	down := time.Now()
	t.Logf("S3 answers 503 from %s", down.UTC().Format("15:04:05.000"))
	s3.Down.Store(true)
	t.Cleanup(func() { s3.Down.Store(false) })
	execURI(t, uri, lookup, `INSERT INTO marks VALUES (2, 'while S3 fails')`)
	firing := waitAlert(t, recv, 6*time.Minute, "PostgresArchivingFailing firing at the webhook", clusterAlert(ns, cluster, "PostgresArchivingFailing", "firing", down))
	t.Logf("PostgresArchivingFailing reached the webhook %s after S3 began answering 503 (machine load %s): %s",
		firing.Time.Sub(down).Round(time.Second), loadavg(), devenv.LastBytes(firing.Body, 400))

	// S3 is back: the archiver's retry archives the segment, the alert
	// resolves.
	back := time.Now()
	s3.Down.Store(false)
	resolved := waitAlert(t, recv, 5*time.Minute, "PostgresArchivingFailing resolved at the webhook", clusterAlert(ns, cluster, "PostgresArchivingFailing", "resolved", back))
	t.Logf("the resolution reached the webhook %s after S3 came back", resolved.Time.Sub(back).Round(time.Second))
}
