package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/devenv"
)

// TestTheRealPrometheusRunsTheSectionsTheSpecSets: the real Prometheus loads the storage,
// runtime and otlp sections and the query log file a Prometheus spec sets (it writes the
// log into the emptyDir Lookout mounts), and a change to spec.runtime.goGC reaches the
// running process through a reload, without a restart.
func TestTheRealPrometheusRunsTheSectionsTheSpecSets(t *testing.T) {
	if err := devenv.CheckPortsFree(9090, 8080); err != nil {
		t.Fatal(err)
	}
	ns := "e2e-fields"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	p := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{ServiceMonitorSelector: selectsNoMonitor,
				ScrapeInterval:     "1s",
				EnableOTLPReceiver: ptr.To(true),
				OTLP:               &monitoringv1.OTLPConfig{PromoteResourceAttributes: []string{"service.instance.id"}},
				TSDB:               &monitoringv1.TSDBSpec{OutOfOrderTimeWindow: ptr.To(monitoringv1.Duration("10m"))},
				Runtime:            &monitoringv1.RuntimeConfig{GoGC: ptr.To(int32(80))},
			},
			Exemplars:    &monitoringv1.Exemplars{MaxSize: ptr.To(int64(5000))},
			QueryLogFile: "query.log",
		},
	}
	mustCreate(t, p)
	dir := t.TempDir()
	runPrometheusPodIn(t, ns, "main", dir)

	var cfg struct {
		Data struct {
			YAML string `json:"yaml"`
		} `json:"data"`
	}
	waitFor(t, "the running Prometheus has loaded the sections", func() bool {
		if err := tryJSON(promURL+"/api/v1/status/config", &cfg); err != nil {
			return false
		}
		y := cfg.Data.YAML
		return strings.Contains(y, "out_of_order_time_window: 10m") && strings.Contains(y, "max_exemplars: 5000") &&
			strings.Contains(y, "gogc: 80") && strings.Contains(y, "- service.instance.id") &&
			strings.Contains(y, "query_log_file: /var/log/prometheus/query.log")
	})
	gogc := func() string {
		var out struct {
			Data struct {
				GOGC string `json:"GOGC"`
			} `json:"data"`
		}
		if err := tryJSON(promURL+"/api/v1/status/runtimeinfo", &out); err != nil {
			return ""
		}
		return out.Data.GOGC
	}
	waitFor(t, "Prometheus runs with GOGC 80", func() bool { return gogc() == "80" })
	start := runtimeInfo(t).StartTime

	// A query is logged to the file in the emptyDir.
	waitQuery(t, "vector(1)", "a query answers")
	logFile := filepath.Join(dir, "volumes", "log-file", "query.log")
	waitFor(t, "the query log is written in the emptyDir", func() bool {
		b, err := os.ReadFile(logFile)
		return err == nil && strings.Contains(string(b), "vector(1)")
	})

	// goGC is reloadable: the new value reaches the process without a restart.
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Runtime.GoGC = ptr.To(int32(60))
	if err := k8s.Update(testCtx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Prometheus runs with GOGC 60 after the reload", func() bool { return gogc() == "60" })
	if now := runtimeInfo(t).StartTime; !now.Equal(start) {
		t.Errorf("Prometheus restarted (start time %s → %s); a reload was expected", start, now)
	}
}
