package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/devenv"
)

// BenchmarkServiceMonitorCreatedToFirstScrape measures what a team waits
// for: from creating a ServiceMonitor to Prometheus having scraped its target
// once. The path: watch → reconcile → config Secret → the reloader's API
// watch → /-/reload → discovery → first scrape (scrape interval 1s, so up to
// one interval of the figure is the scrape schedule itself).
//
//	go test ./test/e2e -run '^$' -bench FirstScrape -benchtime=1x
func BenchmarkServiceMonitorCreatedToFirstScrape(b *testing.B) {
	const samples = 20
	if err := devenv.CheckPortsFree(9090, 8080); err != nil {
		b.Fatal(err)
	}
	ns := "bench-first-scrape"
	if err := k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	host, _, err := devenv.StartTarget(testCtx, k8s, ns, "app", 8080)
	if err != nil {
		b.Fatal(err)
	}
	defer host.Close()
	if err := k8s.Create(testCtx, &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "bench"}},
			ServiceDiscoveryRole:   ptr.To(monitoringv1.EndpointSliceRole),
			ScrapeInterval:         "1s",
		}},
	}); err != nil {
		b.Fatal(err)
	}
	pod, err := devenv.RunPrometheusPod(testCtx, k8s, cp, bins, ns, "bench", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer pod.Stop()

	b.ResetTimer()
	var d []time.Duration
	for i := range samples {
		start := time.Now()
		sm := &monitoringv1.ServiceMonitor{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("sample-%d", i), Labels: map[string]string{"team": "bench"}},
			Spec: monitoringv1.ServiceMonitorSpec{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
				Endpoints: []monitoringv1.Endpoint{{Port: "metrics", Interval: "1s", RelabelConfigs: []monitoringv1.RelabelConfig{{
					TargetLabel: "sample", Replacement: ptr.To(fmt.Sprint(i)), Action: "replace",
				}}}},
			},
		}
		if err := k8s.Create(testCtx, sm); err != nil {
			b.Fatal(err)
		}
		q := fmt.Sprintf(`up{namespace=%q, sample="%d"} == 1`, ns, i)
		for {
			if hasResult(q) {
				break
			}
			if time.Since(start) > 60*time.Second {
				b.Fatalf("sample %d: not scraped within 60s", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	p50, p90, max := d[len(d)/2], d[len(d)*9/10-1], d[len(d)-1]
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p90), "p90-ms")
	b.ReportMetric(ms(max), "max-ms")
	b.Logf("ServiceMonitor created → first successful scrape over %d samples: p50 %s, p90 %s, max %s", len(d), p50, p90, max)
}

func hasResult(q string) bool {
	resp, err := http.Get("http://127.0.0.1:9090/api/v1/query?query=" + url.QueryEscape(q)) //nolint:noctx // bench
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	return json.NewDecoder(resp.Body).Decode(&out) == nil && len(out.Data.Result) > 0
}
