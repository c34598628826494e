package pge2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/node"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// TestAPostgresAlertReachesTheTeamsReceiverAndResolves runs what a team
// would: a one-instance PostgresCluster, a Prometheus selecting the PodMonitor
// and PrometheusRule Lookout renders for it, an Alertmanager with the team's
// AlertmanagerConfig (a webhook), all run from what the operator generated.
// The primary hangs (every process stopped): the shipped
// PostgresPrimaryMissing alert fires and reaches the webhook; the primary
// resumes and the webhook hears the resolution.
func TestAPostgresAlertReachesTheTeamsReceiverAndResolves(t *testing.T) {
	const cluster = "solo"
	ns := fmt.Sprintf("pgalert-%d", time.Now().UnixNano()%1e6)
	must(t, k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, k8s.Create(testCtx, &postgresv1beta1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster},
		Spec: postgresv1beta1.PostgresClusterSpec{
			PostgresVersion: 15,
			// The default lease (30 s): the hang (until the alert fires, a
			// minute and more) outlasts it, so the primary fences itself
			// when it resumes, gives the Lease up, and is elected again.
			InstanceSets: []postgresv1beta1.PostgresInstanceSetSpec{{Name: "instance1", Replicas: ptr.To[int32](1),
				DataVolumeClaimSpec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				}}},
		},
	}))
	pods, err := devenv.RunPostgresPods(testCtx, k8s, cp, bins, network, ns, cluster, filepath.Join(work, ns))
	must(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			logPods(t, pods, ns)
		}
		pods.Stop()
	})
	pgc, err := devenv.WaitPostgresCluster(testCtx, k8s, client.ObjectKey{Namespace: ns, Name: cluster}, startDeadline, func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "1/1" && c.Status.Primary != ""
	})
	if err != nil {
		t.Fatalf("no ready primary: %v; pod errors: %v", err, pods.Errors())
	}
	selected := &metav1.LabelSelector{MatchLabels: map[string]string{pgcontract.LabelCluster: cluster}}
	recv, promURL := runAlerting(t, ns, selected, selected)

	// Healthy first: the primary is scraped.
	primaryUp := fmt.Sprintf(`%s{namespace=%q,cluster=%q,role=%q} == 1`, pgcontract.MetricRole, ns, cluster, pgcontract.RolePrimary)
	if err := node.WaitQuery(testCtx, promURL, primaryUp, 3*time.Minute); err != nil {
		t.Fatalf("Prometheus does not scrape the primary's role: %v", err)
	}

	// The primary hangs: no one answers, no instance is primary.
	victim := pods.Pod(pgc.Status.Primary)
	if victim == nil {
		t.Fatalf("the primary %s is not among the running pods", pgc.Status.Primary)
	}
	frozen := time.Now()
	must(t, victim.Freeze())
	t.Cleanup(func() { _ = victim.Thaw() })
	firing := waitAlert(t, recv, 4*time.Minute, "PostgresPrimaryMissing firing at the webhook", clusterAlert(ns, cluster, "PostgresPrimaryMissing", "firing", frozen))
	t.Logf("PostgresPrimaryMissing reached the webhook %s after the primary hung (machine load %s): %s",
		firing.Time.Sub(frozen).Round(time.Second), loadavg(), devenv.LastBytes(firing.Body, 600))
	var m webhookMessage
	must(t, json.Unmarshal(firing.Body, &m))
	if m.CommonLabels["severity"] != "critical" || len(m.Alerts) != 1 || !strings.Contains(m.Alerts[0].Annotations["description"], ns+"/"+cluster) {
		t.Errorf("the notification does not say which cluster lost its primary, critically: %s", firing.Body)
	}

	// It resumes: the alert resolves.
	thawed := time.Now()
	must(t, victim.Thaw())
	resolved := waitAlert(t, recv, 3*time.Minute, "PostgresPrimaryMissing resolved at the webhook", clusterAlert(ns, cluster, "PostgresPrimaryMissing", "resolved", thawed))
	t.Logf("the resolution reached the webhook %s after the primary resumed", resolved.Time.Sub(thawed).Round(time.Second))
	if err := node.WaitQuery(testCtx, promURL, primaryUp, time.Minute); err != nil {
		t.Errorf("after the resolution Prometheus sees no primary: %v", err)
	}
}

// runAlerting runs what a team runs to hear of its clusters in namespace
// ns: an AlertmanagerConfig with a webhook (the returned receiver), an
// Alertmanager selecting it, and a Prometheus selecting podMonitors and
// rules that sends to it (scraping and evaluating every 2 s), all as pods
// the operator generated. It returns the receiver and Prometheus's URL.
func runAlerting(t *testing.T, ns string, podMonitors, rules *metav1.LabelSelector) (*devenv.Receiver, string) {
	t.Helper()
	recv, err := devenv.StartReceiver(network)
	must(t, err)
	t.Cleanup(recv.Close)
	team := map[string]string{"team": "db"}
	second := func(n int) *monitoringv1.NonEmptyDuration {
		d := monitoringv1.NonEmptyDuration(fmt.Sprintf("%ds", n))
		return &d
	}
	for _, o := range []client.Object{
		&monitoringv1alpha1.AlertmanagerConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oncall", Labels: team},
			Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
				Route: &monitoringv1alpha1.Route{Receiver: "webhook", GroupBy: []string{"alertname"},
					GroupWait: second(1), GroupInterval: second(1), RepeatInterval: second(3600)},
				Receivers: []monitoringv1alpha1.Receiver{{Name: "webhook", WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
					URL: ptr.To(recv.URL("/postgres")), SendResolved: ptr.To(true)}}}},
			},
		},
		&monitoringv1.Alertmanager{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
			Spec:       monitoringv1.AlertmanagerSpec{Replicas: ptr.To[int32](1), AlertmanagerConfigSelector: &metav1.LabelSelector{MatchLabels: team}},
		},
		&monitoringv1.Prometheus{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "postgres"},
			Spec: monitoringv1.PrometheusSpec{
				CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
					PodMonitorSelector:   podMonitors,
					ScrapeInterval:       "2s",
					ServiceDiscoveryRole: ptr.To(monitoringv1.EndpointSliceRole),
				},
				EvaluationInterval: "2s",
				RuleSelector:       rules,
				Alerting: &monitoringv1.AlertingSpec{Alertmanagers: []monitoringv1.AlertmanagerEndpoints{{
					Name: "alertmanager-operated", Port: intstr.FromString("web"),
				}}},
				Rules: monitoringv1.Rules{Alert: monitoringv1.RulesAlert{ResendDelay: "1s"}},
			},
		},
	} {
		must(t, k8s.Create(testCtx, o))
	}
	am, err := devenv.RunAlertmanagerPods(testCtx, k8s, cp, bins, network, ns, "main", t.TempDir())
	must(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- Alertmanager logs ---\n%s", am.Logs(3000))
		}
		am.Stop()
	})
	host, err := network.NewHost()
	must(t, err)
	t.Cleanup(host.Close)
	prom, err := devenv.RunPrometheusPodOn(testCtx, k8s, cp, bins, host, ns, "postgres", t.TempDir())
	must(t, err)
	t.Cleanup(prom.Stop)
	return recv, "http://" + host.IP + ":9090"
}

// clusterAlert matches a notification of alert about ns/cluster in status
// sent after since. (Before the first scrape an alert may be pending: on a
// slow start it may have fired and resolved already.)
func clusterAlert(ns, cluster, alert, status string, since time.Time) func(devenv.Request) bool {
	return func(r devenv.Request) bool {
		var m webhookMessage
		return r.Path == "/postgres" && r.Time.After(since) && json.Unmarshal(r.Body, &m) == nil && m.Status == status &&
			m.CommonLabels["alertname"] == alert && m.CommonLabels["namespace"] == ns && m.CommonLabels["cluster"] == cluster
	}
}

// webhookMessage is Alertmanager's webhook payload, the parts the test reads.
type webhookMessage struct {
	Status       string            `json:"status"`
	CommonLabels map[string]string `json:"commonLabels"`
	Alerts       []struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"alerts"`
}

// waitAlert waits for a notification match accepts.
func waitAlert(t *testing.T, recv *devenv.Receiver, deadline time.Duration, what string, match func(devenv.Request) bool) devenv.Request {
	t.Helper()
	var got devenv.Request
	waitFor(t, deadline, what, func() (bool, string) {
		var paths []string
		for _, r := range recv.Requests() {
			if match(r) {
				got = r
				return true, ""
			}
			var m webhookMessage
			_ = json.Unmarshal(r.Body, &m)
			paths = append(paths, fmt.Sprintf("%s at %s: %s %v", r.Path, r.Time.UTC().Format("15:04:05.000"), m.Status, m.CommonLabels))
		}
		return false, fmt.Sprintf("%d notifications: %s", len(paths), strings.Join(paths, "; "))
	})
	return got
}
