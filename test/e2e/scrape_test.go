package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/localpod"
)

const (
	promURL     = "http://127.0.0.1:9090"
	reloaderURL = "http://127.0.0.1:8080"
)

func TestAServiceMonitorIsScrapedAndAChangeIsReloadedWithoutRestart(t *testing.T) {
	if err := devenv.CheckPortsFree(9090, 8080); err != nil {
		t.Fatal(err)
	}
	ns := "e2e-scrape"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	target := startTarget(t, ns, "app", 8080)

	mustCreate(t, &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e"}},
			ServiceDiscoveryRole:   ptr.To(monitoringv1.EndpointSliceRole),
			ScrapeInterval:         "1s",
		}},
	})
	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: map[string]string{"team": "e2e"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics", Interval: "1s"}},
		},
	}
	mustCreate(t, sm)

	pod := runPrometheusPod(t, ns, "main")
	// The scrape pool is serviceMonitor/<ns>/app/0; relabeling sets the job
	// label to the Service name, as the existing operator does.
	waitQuery(t, fmt.Sprintf(`up{job="app", namespace=%q, service="app", endpoint="metrics", instance=%q} == 1`, ns, target), "the target is scraped and up")
	before := runtimeInfo(t)
	reloadsBefore := reloaderReloads(t)
	pid := pod.Containers["prometheus"].Pid()

	// The team adds a relabeling. The operator rewrites the config Secret;
	// the reloader sees it through the API (not the kubelet's sync) and
	// reloads Prometheus in place.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(sm), sm); err != nil {
			return err
		}
		sm.Spec.Endpoints[0].RelabelConfigs = []monitoringv1.RelabelConfig{{
			TargetLabel: "environment", Replacement: ptr.To("e2e"), Action: "replace",
		}}
		return k8s.Update(testCtx, sm)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitQuery(t, fmt.Sprintf(`up{job="app", namespace=%q, environment="e2e"} == 1`, ns), "the new label appears on the scraped series")

	after := runtimeInfo(t)
	select {
	case <-pod.Containers["prometheus"].Exited():
		t.Fatal("Prometheus exited")
	default:
	}
	if got := pod.Containers["prometheus"].Pid(); got != pid {
		t.Errorf("Prometheus PID changed from %d to %d", pid, got)
	}
	if after.StartTime != before.StartTime {
		t.Errorf("Prometheus restarted: start time %s → %s", before.StartTime, after.StartTime)
	}
	// Prometheus's own reload timestamp has a resolution of one second, so
	// a reload within the second of the start would look like none: count
	// the reloads Prometheus accepted, as the reloader reports them.
	reloadsAfter := reloaderReloads(t)
	if !after.ReloadConfigSuccess || reloadsAfter <= reloadsBefore {
		t.Errorf("no successful reload recorded: reloads %v → %v, runtime info after %+v", reloadsBefore, reloadsAfter, after)
	}
	t.Logf("Prometheus PID %d reloaded in place (start %s, reloads %v → %v)", pid, after.StartTime.Format(time.RFC3339), reloadsBefore, reloadsAfter)
}

func startTarget(t *testing.T, ns, name string, port int32) string {
	t.Helper()
	host, addr, err := devenv.StartTarget(testCtx, k8s, ns, name, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)
	return addr
}

func runPrometheusPod(t *testing.T, ns, name string) *localpod.Pod {
	t.Helper()
	return runPrometheusPodIn(t, ns, name, t.TempDir())
}

// runPrometheusPodIn is runPrometheusPod with the pod's files (its volumes) under dir.
func runPrometheusPodIn(t *testing.T, ns, name, dir string) *localpod.Pod {
	t.Helper()
	return runStatefulSetPodIn(t, ns, "prometheus-"+name, dir)
}

// runStatefulSetPodIn runs the first pod of the generated StatefulSet ns/stsName, with its
// files under dir, until the test ends, and shows its logs when the test failed.
func runStatefulSetPodIn(t *testing.T, ns, stsName, dir string) *localpod.Pod {
	t.Helper()
	pod, err := devenv.RunStatefulSetPod(testCtx, k8s, cp, bins, ns, stsName, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pod.Stop()
		if t.Failed() {
			for _, c := range pod.Containers {
				b, _ := os.ReadFile(c.LogPath)
				t.Logf("--- %s log ---\n%s", c.Name, devenv.LastBytes(b, 3000))
			}
		}
	})
	return pod
}

type runtimeInfoData struct {
	StartTime           time.Time `json:"startTime"`
	ReloadConfigSuccess bool      `json:"reloadConfigSuccess"`
	LastConfigTime      time.Time `json:"lastConfigTime"`
}

// reloaderReloads is the number of reloads Prometheus accepted, from the
// config-reloader sidecar's metrics.
func reloaderReloads(t *testing.T) float64 {
	t.Helper()
	resp, err := http.Get(reloaderURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "lookout_reloader_reloads_total "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("reloader metrics: %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("reloader metrics lack lookout_reloader_reloads_total:\n%s", body)
	return 0
}

func runtimeInfo(t *testing.T) runtimeInfoData {
	t.Helper()
	var out struct {
		Data runtimeInfoData `json:"data"`
	}
	getJSON(t, promURL+"/api/v1/status/runtimeinfo", &out)
	return out.Data
}

// waitQuery waits until the PromQL query returns at least one series.
func waitQuery(t *testing.T, q, what string) {
	t.Helper()
	waitQueryAt(t, promURL, q, what)
}

// waitQueryAt waits until the PromQL query to the Prometheus at base returns at least one series.
func waitQueryAt(t *testing.T, base, q, what string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var out struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		getJSON(t, base+"/api/v1/query?query="+url.QueryEscape(q), &out)
		if len(out.Data.Result) > 0 {
			return
		}
		if time.Now().After(deadline) {
			var targets json.RawMessage
			getJSON(t, base+"/api/v1/targets", &targets)
			t.Fatalf("timed out waiting until %s (query %s); Prometheus targets: %s", what, q, devenv.LastBytes(targets, 2000))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", u, err)
	}
}

func mustCreate(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(testCtx, obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// selectsNoMonitor is the ServiceMonitor selector of a Prometheus that scrapes
// nothing but has its config managed: without any monitor selector, Lookout (as
// prometheus-operator) leaves the config Secret to the user.
var selectsNoMonitor = &metav1.LabelSelector{MatchLabels: map[string]string{"e2e.lookout.dev/selects": "nothing"}}
