package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/localpod"
)

// With reloadStrategy ProcessSignal Prometheus runs without its lifecycle API, and the
// reloader, in the pod's own process namespace, reloads it with SIGHUP. The other
// tests' Prometheus processes on this machine are outside that namespace: the reloader
// finds exactly this pod's.
func TestAPrometheusReloadedByProcessSignalPicksUpANewServiceMonitorWithoutRestart(t *testing.T) {
	if err := devenv.CheckPortsFree(9090, 8080); err != nil {
		t.Fatal(err)
	}
	ns := "e2e-processsignal"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	mustCreate(t, &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "signal"}},
			ServiceDiscoveryRole:   ptr.To(monitoringv1.EndpointSliceRole),
			ReloadStrategy:         ptr.To(monitoringv1.ProcessSignalReloadStrategyType),
		}},
	})
	serviceMonitor := func(name string) *monitoringv1.ServiceMonitor {
		return &monitoringv1.ServiceMonitor{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "signal"}},
			Spec: monitoringv1.ServiceMonitorSpec{
				Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Endpoints: []monitoringv1.Endpoint{{Port: "metrics"}},
			},
		}
	}
	mustCreate(t, serviceMonitor("first"))
	pod := runPrometheusPod(t, ns, "main")
	if err := localpod.WaitHTTP(testCtx, promURL+"/-/ready", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	waitConfigJob(t, "serviceMonitor/"+ns+"/first/0")

	// No lifecycle API: a reload through HTTP is refused.
	resp, err := http.Post(promURL+"/-/reload", "", nil) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /-/reload: %s, want 403 (lifecycle API off)", resp.Status)
	}

	before := runtimeInfo(t)
	reloadsBefore := reloaderReloads(t)
	created := time.Now()
	mustCreate(t, serviceMonitor("second"))
	waitConfigJob(t, "serviceMonitor/"+ns+"/second/0")
	loaded := time.Since(created)

	after := runtimeInfo(t)
	select {
	case <-pod.Containers["prometheus"].Exited():
		t.Fatal("Prometheus exited")
	default:
	}
	if !after.StartTime.Equal(before.StartTime) {
		t.Errorf("Prometheus restarted: start time %s → %s", before.StartTime, after.StartTime)
	}
	if !after.ReloadConfigSuccess {
		t.Errorf("the last reload failed: runtime info %+v", after)
	}
	// The reloader counts the reload once it has seen Prometheus's reload timestamp
	// move, on its next read of /metrics: a little after the job is visible.
	var reloadsAfter float64
	waitFor(t, "the reloader counts the confirmed reload", func() bool {
		reloadsAfter = reloaderReloads(t)
		return reloadsAfter > reloadsBefore
	})
	t.Logf("Prometheus reloaded by SIGHUP in place, the new job loaded %s after the ServiceMonitor was created (start %s, reloads %v → %v)",
		loaded.Round(time.Millisecond), after.StartTime.Format(time.RFC3339Nano), reloadsBefore, reloadsAfter)
}

// waitConfigJob waits until Prometheus's loaded configuration has the scrape job.
func waitConfigJob(t *testing.T, job string) {
	t.Helper()
	waitFor(t, "Prometheus's loaded configuration has job "+job, func() bool {
		var out struct {
			Data struct {
				YAML string `json:"yaml"`
			} `json:"data"`
		}
		getJSON(t, promURL+"/api/v1/status/config", &out)
		return strings.Contains(out.Data.YAML, fmt.Sprintf("job_name: %s\n", job))
	})
}
