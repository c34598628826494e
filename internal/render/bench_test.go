package render

import (
	"fmt"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lookout-operator/lookout/internal/render/scrape"
)

// benchInputs is one Prometheus selecting monitors ServiceMonitors in 500
// namespaces, each with two endpoints (so 5,000 monitors = 10,000 jobs).
func benchInputs(monitors int) Inputs {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main", UID: "p-uid", Generation: 1}}
	p.Spec.ServiceMonitorSelector = &metav1.LabelSelector{} // Lookout writes the configuration
	in := Inputs{Prometheus: p, ServiceAccountExists: true, ReloaderImage: "lookout-reloader:dev"}
	for i := range monitors {
		ep := func(port string) monitoringv1.Endpoint {
			return monitoringv1.Endpoint{Port: port, Interval: "30s", RelabelConfigs: []monitoringv1.RelabelConfig{
				{Action: "labeldrop", Regex: "pod_template_hash"},
				{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_node_name"}, TargetLabel: "node"},
			}}
		}
		in.ServiceMonitors = append(in.ServiceMonitors, &monitoringv1.ServiceMonitor{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: fmt.Sprintf("team-%03d", i%500), Name: fmt.Sprintf("app-%05d", i),
				UID: types.UID(fmt.Sprintf("uid-%d", i)), Generation: 1, ResourceVersion: "1",
			},
			Spec: monitoringv1.ServiceMonitorSpec{
				Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%05d", i)}},
				Endpoints: []monitoringv1.Endpoint{ep("web"), ep("metrics")},
			},
		})
	}
	return in
}

// BenchmarkRender10000Endpoints renders one Prometheus whose 5,000
// ServiceMonitors have 10,000 endpoints: every object, config pieces gzipped.
//
//	cold:       no cache, every monitor built and loaded by Prometheus's loader;
//	one-change: with the cache of the previous render, one monitor changed.
func BenchmarkRender10000Endpoints(b *testing.B) {
	b.Run("cold", func(b *testing.B) {
		in := benchInputs(5000)
		b.ReportAllocs()
		for b.Loop() {
			d, err := Prometheus(in)
			if err != nil {
				b.Fatal(err)
			}
			if len(d.Verdicts) != 5000 || !d.Verdicts[4999].Accepted {
				b.Fatalf("got %d verdicts", len(d.Verdicts))
			}
		}
	})
	b.Run("one-change", func(b *testing.B) {
		in := benchInputs(5000)
		in.Cache = NewCache()
		first, err := Prometheus(in)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			sm := in.ServiceMonitors[(i*7919)%len(in.ServiceMonitors)]
			sm.Generation++
			sm.Spec.Endpoints[0].Interval = monitoringv1.Duration(fmt.Sprintf("%ds", 10+i%50))
			i++
			if _, err := Prometheus(in); err != nil {
				b.Fatal(err)
			}
			if in.Cache.Scrape.Misses != 1 {
				b.Fatalf("%d monitors rendered again, want 1", in.Cache.Scrape.Misses)
			}
		}
		// What the Secrets (the gzipped config and its pieces) carry.
		total := 0
		for _, o := range first.Objects {
			if s, ok := o.(*corev1.Secret); ok {
				for _, v := range s.Data {
					total += len(v)
				}
			}
		}
		b.ReportMetric(float64(total)/1024, "KiB-in-Secrets")
	})
	// As the controller renders a change: the changed monitor is a new object (an informer
	// replaces what changes), and the render is told so by a Delta.
	b.Run("one-change-delta", func(b *testing.B) {
		in := benchInputs(5000)
		in.Cache = NewCache()
		in.ServiceMonitors = slices.Clone(in.ServiceMonitors)
		var seq uint64 = 1
		in.Delta = &scrape.Delta{To: seq}
		if _, err := Prometheus(in); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			at := (i * 7919) % len(in.ServiceMonitors)
			old := in.ServiceMonitors[at]
			sm := old.DeepCopy()
			sm.Generation++
			sm.Spec.Endpoints[0].Interval = monitoringv1.Duration(fmt.Sprintf("%ds", 10+i%50))
			in.ServiceMonitors[at] = sm
			i++
			in.Delta = &scrape.Delta{From: seq, To: seq + 1, Gone: []metav1.Object{old}, Came: []metav1.Object{sm}}
			seq++
			if _, err := Prometheus(in); err != nil {
				b.Fatal(err)
			}
			if c := in.Cache.Scrape; c.Misses != 1 || !c.Patched {
				b.Fatalf("%d monitors rendered again (want 1), order from the Delta: %v", c.Misses, c.Patched)
			}
		}
	})
}
