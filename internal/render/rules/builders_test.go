package rules

import (
	"testing"
	"unicode/utf8"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Small option-function builders for the objects the tests feed the generator.

type promOpt func(*monitoringv1.Prometheus)

func newPrometheus(opts ...promOpt) *monitoringv1.Prometheus {
	p := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main"},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withPromSpec(f func(*monitoringv1.PrometheusSpec)) promOpt {
	return func(p *monitoringv1.Prometheus) { f(&p.Spec) }
}

func withEnforcedNamespaceLabel(l string, excluded ...monitoringv1.ObjectReference) promOpt {
	return withPromSpec(func(s *monitoringv1.PrometheusSpec) {
		s.EnforcedNamespaceLabel = l
		s.ExcludedFromEnforcement = excluded
	})
}

type ruleOpt func(*monitoringv1.PrometheusRule)

// newRule is a PrometheusRule with a UID derived from its name and the given groups; without
// groups it has one group "example" with one alert.
func newRule(ns, name string, opts ...ruleOpt) *monitoringv1.PrometheusRule {
	pr := &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1, UID: types.UID("uid-" + name)},
	}
	for _, o := range opts {
		o(pr)
	}
	if pr.Spec.Groups == nil {
		pr.Spec.Groups = []monitoringv1.RuleGroup{group("example", alert("TargetDown", "up == 0"))}
	}
	return pr
}

func withGroups(gs ...monitoringv1.RuleGroup) ruleOpt {
	return func(pr *monitoringv1.PrometheusRule) { pr.Spec.Groups = gs }
}

func withUID(uid string) ruleOpt {
	return func(pr *monitoringv1.PrometheusRule) { pr.UID = types.UID(uid) }
}

func withGeneration(g int64) ruleOpt {
	return func(pr *monitoringv1.PrometheusRule) { pr.Generation = g }
}

func group(name string, rules ...monitoringv1.Rule) monitoringv1.RuleGroup {
	return monitoringv1.RuleGroup{Name: name, Rules: rules}
}

func groupWith(name string, f func(*monitoringv1.RuleGroup), rules ...monitoringv1.Rule) monitoringv1.RuleGroup {
	g := group(name, rules...)
	f(&g)
	return g
}

type ruleFieldOpt func(*monitoringv1.Rule)

func alert(name, expr string, opts ...ruleFieldOpt) monitoringv1.Rule {
	r := monitoringv1.Rule{Alert: name, Expr: intstr.FromString(expr)}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func record(name, expr string, opts ...ruleFieldOpt) monitoringv1.Rule {
	r := monitoringv1.Rule{Record: name, Expr: intstr.FromString(expr)}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func forDuration(d string) ruleFieldOpt {
	return func(r *monitoringv1.Rule) { r.For = ptr(monitoringv1.Duration(d)) }
}

func keepFiringFor(d string) ruleFieldOpt {
	return func(r *monitoringv1.Rule) { r.KeepFiringFor = ptr(monitoringv1.NonEmptyDuration(d)) }
}

func ruleLabels(kv ...string) ruleFieldOpt {
	return func(r *monitoringv1.Rule) { r.Labels = pairs(kv...) }
}

func annotations(kv ...string) ruleFieldOpt {
	return func(r *monitoringv1.Rule) { r.Annotations = pairs(kv...) }
}

func pairs(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func ptr[T any](v T) *T { return &v }

func rules(prs ...*monitoringv1.PrometheusRule) []*monitoringv1.PrometheusRule { return prs }

func newInput(p *monitoringv1.Prometheus, prs []*monitoringv1.PrometheusRule) Input {
	return Input{Prometheus: p, Rules: prs}
}

// mustParse parses a rule file the way a default Prometheus server loads it (strict fields,
// UTF-8 names, default parser), failing the test when Prometheus would refuse it.
func mustParse(t testing.TB, name, content string) *rulefmt.RuleGroups {
	t.Helper()
	return mustParseWith(t, model.UTF8Validation, parser.NewParser(parser.Options{ExperimentalDurationExpr: true}), name, content)
}

func mustParseWith(t testing.TB, scheme model.ValidationScheme, p parser.Parser, name, content string) *rulefmt.RuleGroups {
	t.Helper()
	rgs, errs := rulefmt.Parse([]byte(content), false, scheme, p, discardLogger)
	if len(errs) > 0 {
		t.Fatalf("Prometheus refuses rule file %s: %v\n%s", name, errs, content)
	}
	return rgs
}

// mustParseAll checks every file of every ConfigMap, with the name validation and PromQL
// features the Prometheus p runs with, and the size limit of each ConfigMap.
func mustParseAll(t testing.TB, p *monitoringv1.Prometheus, res *Result) {
	t.Helper()
	r, err := newRenderer(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ConfigMaps) == 0 || len(res.ConfigMaps) > MaxConfigMaps {
		t.Fatalf("got %d ConfigMaps, want 1 to %d", len(res.ConfigMaps), MaxConfigMaps)
	}
	for i, cm := range res.ConfigMaps {
		size := 0
		for name, content := range cm {
			size += len(name) + len(content)
			if !utf8.ValidString(content) {
				t.Errorf("rule file %s is not valid UTF-8", name)
			}
			mustParseWith(t, r.nameScheme, r.parser, name, content)
		}
		if size > MaxConfigMapBytes {
			t.Errorf("ConfigMap %d holds %d bytes, more than %d", i, size, MaxConfigMapBytes)
		}
	}
}

// fileOf returns the rule file of pr from whichever ConfigMap holds it.
func fileOf(t testing.TB, res *Result, pr *monitoringv1.PrometheusRule) string {
	t.Helper()
	name := FileName(pr)
	for _, cm := range res.ConfigMaps {
		if c, ok := cm[name]; ok {
			return c
		}
	}
	t.Fatalf("no rule file %s in the ConfigMaps", name)
	return ""
}

// configMapOf returns the index of the ConfigMap holding pr's file, -1 when none does.
func configMapOf(res *Result, pr *monitoringv1.PrometheusRule) int {
	name := FileName(pr)
	for i, cm := range res.ConfigMaps {
		if _, ok := cm[name]; ok {
			return i
		}
	}
	return -1
}
