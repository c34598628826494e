package rules

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// variedRules returns PrometheusRules that exercise the map-valued fields (labels,
// annotations), enforcement, several ConfigMaps, and some that are rejected.
func variedRules(t testing.TB) []*monitoringv1.PrometheusRule {
	var prs []*monitoringv1.PrometheusRule
	for i := range 40 {
		ns := fmt.Sprintf("ns-%d", i%7)
		name := fmt.Sprintf("rule-%02d", i)
		var pr *monitoringv1.PrometheusRule
		switch i % 5 {
		case 0:
			// Big enough that the files spill over into a second and a third ConfigMap.
			pr = sizedRule(t, ns, name, 100*1024)
		case 1:
			pr = newRule(ns, name, withGroups(group("g", alert("A", "up ==", forDuration("x")), record("r", "sum("))))
		default:
			pr = newRule(ns, name, withGroups(
				group("a",
					alert("A", `rate(errors_total{job="x"}[5m]) > 1`, ruleLabels("a", "1", "b", "2", "c", "3", "d", "4"), annotations("w", "1", "x", "2", "y", "3", "z", "{{ $value }}")),
					record("job:r:sum", "sum by (job) (r)", ruleLabels("e", "5", "f", "6")),
				),
				groupWith("b", func(g *monitoringv1.RuleGroup) { g.Labels = pairs("k", "v", "l", "w", "m", "x") }, record("s", "vector(1)")),
			))
		}
		prs = append(prs, pr)
	}
	return prs
}

func TestOutputIsDeterministicForShuffledInput(t *testing.T) {
	prs := variedRules(t)
	p := newPrometheus(withEnforcedNamespaceLabel("namespace",
		monitoringv1.ObjectReference{Resource: monitoringv1.PrometheusRuleName, Namespace: "ns-3"}))
	want, err := Generate(newInput(p, prs))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	mustParseAll(t, p, want)
	if len(want.ConfigMaps) < 2 {
		t.Fatalf("want the files spread over several ConfigMaps, got %d", len(want.ConfigMaps))
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		shuffled := append([]*monitoringv1.PrometheusRule(nil), prs...)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		got, err := Generate(newInput(p, shuffled))
		if err != nil {
			t.Fatalf("shuffle %d: Generate: %v", i, err)
		}
		if !reflect.DeepEqual(got.ConfigMaps, want.ConfigMaps) {
			t.Fatalf("shuffle %d: ConfigMaps differ from the unshuffled ones", i)
		}
		if !reflect.DeepEqual(got.Verdicts, want.Verdicts) {
			t.Fatalf("shuffle %d: verdicts differ:\n got %+v\nwant %+v", i, got.Verdicts, want.Verdicts)
		}
	}
}

func TestGenerateDoesNotModifyItsInput(t *testing.T) {
	prs := variedRules(t)
	p := newPrometheus(withEnforcedNamespaceLabel("namespace"))
	before := make([]*monitoringv1.PrometheusRule, len(prs))
	for i, pr := range prs {
		before[i] = pr.DeepCopy()
	}
	promBefore := p.DeepCopy()
	if _, err := Generate(newInput(p, prs)); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	for i := range prs {
		if !reflect.DeepEqual(prs[i], before[i]) {
			t.Errorf("PrometheusRule %s/%s was modified", prs[i].Namespace, prs[i].Name)
		}
	}
	if !reflect.DeepEqual(p, promBefore) {
		t.Error("Prometheus was modified")
	}
}

func TestGenerateSkipsNilRules(t *testing.T) {
	res, err := Generate(newInput(newPrometheus(), rules(nil, newRule("default", "app"), nil)))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	checkVerdicts(t, res.Verdicts, []wantVerdict{{key: "default/app"}})
}
