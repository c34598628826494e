package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/localpod"
)

// TestAThanosRulerEvaluatesAgainstPrometheusAndAlertsThroughAlertmanager runs the pod the
// operator generates for a ThanosRuler — the real Thanos Ruler and the config reloader —
// with a real Prometheus (and its generated Thanos sidecar) as its query endpoint and a
// real Alertmanager: the always-true rule's alert reaches the Alertmanager's webhook
// receiver, without the replica label.
func TestAThanosRulerEvaluatesAgainstPrometheusAndAlertsThroughAlertmanager(t *testing.T) {
	ns := "e2e-thanos-ruler"
	// Every pod has a network namespace of its own on one bridge: no host port is used.
	network, recv, am, _ := startWebhookAlertmanager(t, ns, "ruler", map[string]string{"e2e": "thanos-ruler"})

	// Object storage on the local filesystem, for the sidecar and the ruler: Thanos reads
	// the Secret's config at start.
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "objstore"},
		StringData: map[string]string{"bucket.yaml": "type: FILESYSTEM\nconfig:\n  directory: bucket\n"}})
	objstore := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "objstore"}, Key: "bucket.yaml"}

	// The query endpoint: a Prometheus the operator generates, with the Thanos sidecar.
	mustCreate(t, &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "query"},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{ServiceMonitorSelector: selectsNoMonitor}, Thanos: &monitoringv1.ThanosSpec{ObjectStorageConfig: objstore}}})
	promHost, err := network.NewHost()
	if err != nil {
		t.Fatal(err)
	}
	prom, err := devenv.RunPrometheusPodOn(testCtx, k8s, cp, bins, promHost, ns, "query", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- Prometheus pod logs ---\n%s", devenv.PodLogs(prom, 3000))
		}
		prom.Stop()
		promHost.Close()
	})
	promURL := fmt.Sprintf("http://%s:9090", promHost.IP)
	// The sidecar is ready once it has read Prometheus's external labels (it refuses to
	// serve without them) through the URL Lookout gave it.
	if err := localpod.WaitHTTP(testCtx, fmt.Sprintf("http://%s:10902/-/ready", promHost.IP), 60*time.Second); err != nil {
		t.Fatalf("the Thanos sidecar is not ready: %v", err)
	}
	queriesBefore := prometheusQueries(t, promURL)

	mustCreate(t, rule(ns, "always", monitoringv1.RuleGroup{
		Name: "thanos-ruler-e2e", Interval: ptrDuration("1s"), PartialResponseStrategy: "warn",
		Rules: []monitoringv1.Rule{{
			Alert:  "ThanosRulerE2EAlwaysTrue",
			Expr:   intstr.FromString("vector(1)"),
			Labels: map[string]string{"severity": "page", "namespace": ns},
		}},
	}))
	mustCreate(t, &monitoringv1.ThanosRuler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ruler"},
		Spec: monitoringv1.ThanosRulerSpec{
			RuleSelector:        &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e"}},
			QueryEndpoints:      []string{promURL},
			AlertManagersURL:    []string{fmt.Sprintf("http://%s:9093", am.IPs()[0])},
			ObjectStorageConfig: objstore,
			EvaluationInterval:  "1s",
			Labels:              map[string]string{"cluster": "e2e"},
			ResendDelay:         ptr.To[monitoringv1.Duration]("1s"),
		},
	})
	ruler, err := devenv.RunThanosRulerPod(testCtx, k8s, cp, bins, network, ns, "ruler", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rulerReady := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- Thanos Ruler pod logs ---\n%s", ruler.Logs(4000))
		}
		ruler.Stop()
	})

	notification := waitRequest(t, recv, "the ThanosRuler's alert at the webhook", func(r devenv.Request) bool {
		return strings.Contains(string(r.Body), "ThanosRulerE2EAlwaysTrue")
	})
	var msg webhookMessage
	if err := json.Unmarshal(notification.Body, &msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Alerts) != 1 {
		t.Fatalf("notification has %d alerts, want 1: %s", len(msg.Alerts), notification.Body)
	}
	labels := msg.Alerts[0].Labels
	if _, ok := labels["thanos_ruler_replica"]; ok {
		t.Errorf("the replica label reached Alertmanager (it must be dropped so replicas deduplicate): %v", labels)
	}
	if labels["severity"] != "page" || labels["namespace"] != ns {
		t.Errorf("alert labels %v lack the rule's", labels)
	}
	if labels["cluster"] != "e2e" {
		t.Errorf("alert labels %v lack the ThanosRuler's spec.labels", labels)
	}
	if after := prometheusQueries(t, promURL); after <= queriesBefore {
		t.Errorf("Prometheus answered no queries (%v before, %v after): the rule was not evaluated against it", queriesBefore, after)
	}
	t.Logf("alert labels %v; Prometheus answered %v queries; notified %s after Thanos Ruler was ready",
		labels, prometheusQueries(t, promURL)-queriesBefore, notification.Time.Sub(rulerReady).Round(time.Millisecond))
}

// prometheusQueries is how many instant queries the Prometheus at base answered (none yet
// is 0: the metric appears with the first one).
func prometheusQueries(t *testing.T, base string) float64 {
	t.Helper()
	n, err := amMetric(base+"/metrics", "prometheus_http_requests_total", `handler="/api/v1/query"`)
	if err != nil && !strings.Contains(err.Error(), "no sample") {
		t.Fatal(err)
	}
	return n
}
