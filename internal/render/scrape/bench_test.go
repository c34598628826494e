package scrape

import (
	"fmt"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

func BenchmarkGenerate1000Monitors(b *testing.B) {
	sms := make([]*monitoringv1.ServiceMonitor, 0, 1000)
	for i := range 1000 {
		sms = append(sms, newServiceMonitor(fmt.Sprintf("team-%02d", i%50), fmt.Sprintf("app-%04d", i),
			withEndpoints(endpoint(interval("15s"), relabelings(relabelCfg("labeldrop", nil, "", "pod_template_hash"))))))
	}
	in := newInput(newPrometheus(withShards(2)), sms)
	b.ReportAllocs()
	for b.Loop() {
		res, err := Generate(in)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Verdicts) != 1000 {
			b.Fatalf("got %d verdicts", len(res.Verdicts))
		}
	}
}
