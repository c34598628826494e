package webhook

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Builders: a PrometheusRule from groups, a group from rules, rules with options.

func promRule(groups ...monitoringv1.RuleGroup) *monitoringv1.PrometheusRule {
	r := &monitoringv1.PrometheusRule{}
	r.Name, r.Namespace = "rules", "default"
	r.Spec.Groups = groups
	return r
}

func group(name string, rules ...monitoringv1.Rule) monitoringv1.RuleGroup {
	return monitoringv1.RuleGroup{Name: name, Rules: rules}
}

func withInterval(g monitoringv1.RuleGroup, d string) monitoringv1.RuleGroup {
	g.Interval = ptrTo(monitoringv1.Duration(d))
	return g
}

type ruleOpt func(*monitoringv1.Rule)

func alertRule(name, expr string, opts ...ruleOpt) monitoringv1.Rule {
	r := monitoringv1.Rule{Alert: name, Expr: intstr.FromString(expr)}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func recordRule(name, expr string, opts ...ruleOpt) monitoringv1.Rule {
	r := monitoringv1.Rule{Record: name, Expr: intstr.FromString(expr)}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func forDuration(d string) ruleOpt {
	return func(r *monitoringv1.Rule) { r.For = ptrTo(monitoringv1.Duration(d)) }
}

func keepFiringFor(d string) ruleOpt {
	return func(r *monitoringv1.Rule) { r.KeepFiringFor = ptrTo(monitoringv1.NonEmptyDuration(d)) }
}

func labels(kv ...string) ruleOpt {
	return func(r *monitoringv1.Rule) {
		r.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			r.Labels[kv[i]] = kv[i+1]
		}
	}
}

func annotations(kv ...string) ruleOpt {
	return func(r *monitoringv1.Rule) {
		r.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			r.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func TestValidatePrometheusRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule *monitoringv1.PrometheusRule
		want []string
	}{
		{
			name: "accepts alerting and recording rules with durations, labels and templates",
			rule: promRule(withInterval(group("node",
				alertRule("NodeDown", `up{job="node"} == 0`, forDuration("5m"), keepFiringFor("10m"),
					labels("severity", "critical"), annotations("summary", "{{ $labels.instance }} is down for {{ $value }}")),
				recordRule("job:up:sum", "sum by (job) (up)", labels("team", "platform")),
			), "30s")),
		},
		{
			name: "accepts an empty PrometheusRule",
			rule: promRule(),
		},
		{
			name: "accepts an expression given as a number",
			rule: promRule(group("g", monitoringv1.Rule{Record: "one", Expr: intstr.FromInt(1)})),
		},
		{
			name: "accepts experimental PromQL functions, which a Prometheus with the feature flag runs",
			rule: promRule(group("g", recordRule("x", "sort_by_label(up, \"job\")"))),
		},
		{
			name: "accepts a UTF-8 metric name, which Prometheus 3 accepts",
			rule: promRule(group("g", recordRule("http.requests:rate5m", "rate(x[5m])"))),
		},
		{
			name: "accepts a recording rule with for: 0s",
			rule: promRule(group("g", recordRule("x", "up", forDuration("0s")))),
		},
		{
			name: "rejects an expression that does not parse, with the parser's position and text",
			rule: promRule(group("g", alertRule("A", "up"), alertRule("B", "up =="))),
			want: []string{`spec.groups[0].rules[1].expr: Invalid value: "up ==": 1:6: parse error: unexpected end of input`},
		},
		{
			name: "rejects an empty expression",
			rule: promRule(group("g", alertRule("A", " "))),
			want: []string{"spec.groups[0].rules[0].expr: Required value"},
		},
		{
			name: "rejects a for that is not a Prometheus duration",
			rule: promRule(group("g", alertRule("A", "up", forDuration("5 minutes")))),
			want: []string{`spec.groups[0].rules[0].for: Invalid value: "5 minutes": not a Prometheus duration`},
		},
		{
			name: "rejects a keep_firing_for that is not a Prometheus duration",
			rule: promRule(group("g", alertRule("A", "up", keepFiringFor("1x")))),
			want: []string{`spec.groups[0].rules[0].keep_firing_for: Invalid value: "1x"`},
		},
		{
			name: "rejects a group interval that is not a Prometheus duration",
			rule: promRule(withInterval(group("g", alertRule("A", "up")), "1.5m")),
			want: []string{`spec.groups[0].interval: Invalid value: "1.5m"`},
		},
		{
			name: "rejects two groups of the same name",
			rule: promRule(group("g", alertRule("A", "up")), group("h", alertRule("A", "up")), group("g", alertRule("B", "up"))),
			want: []string{`spec.groups[2].name: Duplicate value: "g"`},
		},
		{
			name: "rejects a group without a name",
			rule: promRule(group("", alertRule("A", "up"))),
			want: []string{"spec.groups[0].name: Required value"},
		},
		{
			name: "rejects a rule that is both alert and record",
			rule: promRule(group("g", monitoringv1.Rule{Alert: "A", Record: "r", Expr: intstr.FromString("up")})),
			want: []string{"spec.groups[0].rules[0].record: Invalid value: \"r\": a rule is either a recording rule (record) or an alerting rule (alert), not both"},
		},
		{
			name: "rejects a rule that is neither alert nor record",
			rule: promRule(group("g", monitoringv1.Rule{Expr: intstr.FromString("up")})),
			want: []string{"spec.groups[0].rules[0].alert: Required value: a rule needs either alert"},
		},
		{
			name: "rejects a recording rule whose name is a PromQL selector",
			rule: promRule(group("g", recordRule(`up{job="x"}`, "up"))),
			want: []string{"spec.groups[0].rules[0].record: Invalid value: \"up{job=\\\"x\\\"}\": a metric name with braces"},
		},
		{
			name: "rejects annotations and for on a recording rule",
			rule: promRule(group("g", recordRule("r", "up", forDuration("5m"), annotations("summary", "x")))),
			want: []string{
				"spec.groups[0].rules[0].annotations: Forbidden: only alerting rules have annotations",
				"spec.groups[0].rules[0].for: Forbidden: only alerting rules wait before firing",
			},
		},
		{
			name: "rejects a label named __name__",
			rule: promRule(group("g", alertRule("A", "up", labels("__name__", "x")))),
			want: []string{"spec.groups[0].rules[0].labels[__name__]: Invalid value: \"__name__\": the metric name cannot be set as a label"},
		},
		{
			name: "rejects an empty label name",
			rule: promRule(group("g", alertRule("A", "up", labels("", "x")))),
			want: []string{"spec.groups[0].rules[0].labels[]: Invalid value: \"\": not a valid label name"},
		},
		{
			name: "rejects an annotation template that does not parse",
			rule: promRule(group("g", alertRule("A", "up", annotations("summary", "{{ $labels.instance ")))),
			want: []string{"spec.groups[0].rules[0].annotations[summary]: Invalid value: \"{{ $labels.instance \": template: __alert_A:1: unclosed action"},
		},
		{
			name: "rejects a label template that uses an undefined variable",
			rule: promRule(group("g", alertRule("A", "up", labels("instance", "{{ $nope }}")))),
			want: []string{`spec.groups[0].rules[0].labels[instance]: Invalid value: "{{ $nope }}": template: __alert_A:1: undefined variable "$nope"`},
		},
		{
			name: "rejects a negative group limit",
			rule: promRule(monitoringv1.RuleGroup{Name: "g", Limit: ptrTo(-1), Rules: []monitoringv1.Rule{alertRule("A", "up")}}),
			want: []string{"spec.groups[0].limit: Invalid value: -1: must not be negative"},
		},
		{
			name: "rejects an unknown partial_response_strategy",
			rule: promRule(monitoringv1.RuleGroup{Name: "g", PartialResponseStrategy: "ignore", Rules: []monitoringv1.Rule{alertRule("A", "up")}}),
			want: []string{`spec.groups[0].partial_response_strategy: Unsupported value: "ignore"`},
		},
		{
			name: "reports every problem at once",
			rule: promRule(group("g", alertRule("A", "up =="), alertRule("B", "rate(x[5m]", forDuration("x")))),
			want: []string{
				"spec.groups[0].rules[0].expr",
				"spec.groups[0].rules[1].expr",
				"spec.groups[0].rules[1].for",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePrometheusRule(tc.rule), tc.want)
		})
	}
}

func TestRulefmtErrorsAreMappedToTheRule(t *testing.T) {
	// The field checks run first; rulefmt is the backstop. Feed it a rule
	// only it refuses by calling it directly.
	r := promRule(group("a", alertRule("A", "up")), group("b", alertRule("B", "up"), recordRule("r", "up ==")))
	errs := parseWithRulefmt(r)
	expectErrors(t, errs, []string{"spec.groups[1].rules[1]: Invalid value: could not parse expression: 1:6: parse error"})
	if strings.Contains(errs[0].Error(), "group \"b\"") {
		t.Errorf("the message repeats the position in the rendered file: %v", errs[0])
	}
}

func TestPrometheusRuleWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule *monitoringv1.PrometheusRule
		want []string
	}{
		{
			name: "warns about an expression that needs a feature flag",
			rule: promRule(group("g", recordRule("x", `sort_by_label(up, "job")`))),
			want: []string{"spec.groups[0].rules[0].expr: the expression needs a Prometheus feature flag"},
		},
		{
			name: "warns about a UTF-8 record name",
			rule: promRule(group("g", recordRule("a.b", "up"))),
			want: []string{`spec.groups[0].rules[0].record: "a.b" needs Prometheus 3`},
		},
		{
			name: "says nothing about a duration expression, which needs no flag",
			rule: promRule(group("g", recordRule("x", "rate(up[5m * 2])"))),
		},
		{
			name: "says nothing about a plain rule",
			rule: promRule(group("g", alertRule("A", "up == 0"))),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := prometheusRuleWarnings(tc.rule)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings = %q, want %d", got, len(tc.want))
			}
			for i := range tc.want {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("warning %d = %q, want it to contain %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}
