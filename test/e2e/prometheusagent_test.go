package e2e

import (
	"fmt"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/devenv"
)

// TestAPrometheusAgentScrapesAndRemoteWritesWithItsExternalLabels runs the pod Lookout
// generated for a PrometheusAgent — Prometheus with --agent and the reloader, as local
// processes — next to a plain Prometheus with the remote write receiver: the agent scrapes
// the target and the sample arrives at the receiver with the agent's external labels.
func TestAPrometheusAgentScrapesAndRemoteWritesWithItsExternalLabels(t *testing.T) {
	if err := devenv.CheckPortsFree(9090, 8080); err != nil {
		t.Fatal(err)
	}
	receiver := startReceivingPrometheus(t)
	ns := "e2e-agent"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	startTarget(t, ns, "app", 8080)

	mustCreate(t, &monitoringv1alpha1.PrometheusAgent{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: monitoringv1alpha1.PrometheusAgentSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e"}},
			ServiceDiscoveryRole:   ptr.To(monitoringv1.EndpointSliceRole),
			ScrapeInterval:         "1s",
			ExternalLabels:         map[string]string{"cluster": "edge"},
			RemoteWrite: []monitoringv1.RemoteWriteSpec{{
				URL:         monitoringv1.URL(receiver + "/api/v1/write"),
				QueueConfig: &monitoringv1.QueueConfig{BatchSendDeadline: ptr.To(monitoringv1.Duration("1s"))},
			}},
		}},
	})
	mustCreate(t, &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: map[string]string{"team": "e2e"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics", Interval: "1s"}},
		},
	})

	runStatefulSetPodIn(t, ns, "prom-agent-edge", t.TempDir())
	// The agent serves no queries: what it scraped is seen at the receiver.
	waitQueryAt(t, receiver, fmt.Sprintf(`up{job="app", namespace=%q, cluster="edge", prometheus=%q, prometheus_replica="prom-agent-edge-0"} == 1`, ns, ns+"/edge"),
		"the agent's scraped sample arrives at the receiver with its external labels")
	// And it runs in agent mode, as its flags say.
	var flags struct {
		Data map[string]string `json:"data"`
	}
	getJSON(t, promURL+"/api/v1/status/flags", &flags)
	if flags.Data["agent"] != "true" {
		t.Errorf("the generated pod's Prometheus does not run in agent mode: --agent=%q", flags.Data["agent"])
	}
}
