package selection

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// FuzzMatch feeds random selectors and labels through the ServiceMonitor
// selector: it never panics, an invalid selector is an error (never a
// silent match), and Match agrees with Kubernetes's own selector semantics.
func FuzzMatch(f *testing.F) {
	f.Add("team", "platform", "In", "a", "team", "platform", "monitoring", true)
	f.Add("app", "", "Exists", "", "app", "x", "other", false)
	f.Add("", "", "NotIn", "b", "k", "b", "monitoring", true)
	f.Add("bad key!", "v", "Near", "x", "k", "v", "monitoring", false)
	f.Fuzz(func(t *testing.T, key, value, op, opValue, objKey, objValue, ns string, allNamespaces bool) {
		sel := &metav1.LabelSelector{}
		if key != "" {
			sel.MatchLabels = map[string]string{key: value}
		}
		if op != "" {
			req := metav1.LabelSelectorRequirement{Key: objKey, Operator: metav1.LabelSelectorOperator(op)}
			if opValue != "" {
				req.Values = []string{opValue}
			}
			sel.MatchExpressions = []metav1.LabelSelectorRequirement{req}
		}
		p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "k8s"}}
		p.Spec.ServiceMonitorSelector = sel
		if allNamespaces {
			p.Spec.ServiceMonitorNamespaceSelector = &metav1.LabelSelector{}
		}
		s, err := ServiceMonitors(p)
		want, convErr := metav1.LabelSelectorAsSelector(sel)
		if (err != nil) != (convErr != nil) {
			t.Fatalf("ServiceMonitors err %v, Kubernetes says %v", err, convErr)
		}
		if err != nil {
			return
		}
		objLabels := map[string]string{objKey: objValue}
		v := s.Match(ns, objLabels, nil)
		nsOK := allNamespaces || ns == "monitoring"
		if v.Selected != (nsOK && want.Matches(labels.Set(objLabels))) {
			t.Fatalf("Match = %+v, want selected=%v", v, nsOK && want.Matches(labels.Set(objLabels)))
		}
		if !v.Selected && v.Message == "" {
			t.Fatal("a verdict that does not select must say why")
		}
	})
}
