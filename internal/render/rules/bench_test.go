package rules

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

func BenchmarkGenerate(b *testing.B) {
	prs := variedRules(b)
	in := newInput(newPrometheus(withEnforcedNamespaceLabel("namespace",
		monitoringv1.ObjectReference{Resource: monitoringv1.PrometheusRuleName, Namespace: "ns-3"})), prs)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(in); err != nil {
			b.Fatal(err)
		}
	}
}
