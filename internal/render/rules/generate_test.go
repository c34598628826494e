package rules

import (
	"reflect"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// wantVerdict is what a test expects of one PrometheusRule's verdict.
type wantVerdict struct {
	key         string // namespace/name
	reason      string // "" when accepted
	message     string // exact message, when set
	msgContains []string
}

func TestGenerateVerdicts(t *testing.T) {
	legacyNames := newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
		s.NameValidationScheme = ptr(monitoringv1.LegacyNameValidationScheme)
	}))

	tests := []struct {
		name  string
		in    Input
		want  []wantVerdict
		check func(t *testing.T, res *Result)
	}{
		{
			name: "accepts a minimal PrometheusRule under its <namespace>-<name>-<uid>.yaml file",
			in:   newInput(newPrometheus(), rules(newRule("default", "app"))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if len(res.ConfigMaps) != 1 {
					t.Fatalf("got %d ConfigMaps, want 1", len(res.ConfigMaps))
				}
				if _, ok := res.ConfigMaps[0]["default-app-uid-app.yaml"]; !ok {
					t.Errorf("keys = %v, want default-app-uid-app.yaml", keys(res.ConfigMaps[0]))
				}
			},
		},
		{
			name: "rejects a rule whose expr does not parse and keeps the others",
			in: newInput(newPrometheus(), rules(
				newRule("team-b", "zeta"),
				newRule("team-a", "broken", withGroups(group("example",
					record("job:up:sum", "sum by (job) (up)"),
					alert("TargetDown", "up == == 0"),
				))),
				newRule("team-a", "alpha"),
			)),
			want: []wantVerdict{
				{key: "team-a/alpha"},
				{key: "team-a/broken", reason: ReasonInvalidPromQL, message: `group "example", rule 2 (alert TargetDown): expr: 1:7: parse error: unexpected <op:==>`},
				{key: "team-b/zeta"},
			},
			check: func(t *testing.T, res *Result) {
				if got := keys(res.ConfigMaps[0]); !reflect.DeepEqual(got, []string{"team-a-alpha-uid-alpha.yaml", "team-b-zeta-uid-zeta.yaml"}) {
					t.Errorf("files = %v", got)
				}
			},
		},
		{
			name: "rejects an empty expr",
			in:   newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g", record("r", "  ")))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidPromQL, message: `group "g", rule 1 (record r): expr: must not be empty`}},
		},
		{
			name: "rejects a function only experimental PromQL has unless the Prometheus enables it",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				record("r", `sort_by_label(up, "job")`),
			))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidPromQL, msgContains: []string{`rule 1 (record r): expr: `, "sort_by_label"}}},
		},
		{
			name: "accepts experimental PromQL functions when the Prometheus enables them",
			in: newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.EnableFeatures = []monitoringv1.EnableFeature{"promql-experimental-functions"}
			})), rules(newRule("default", "app", withGroups(group("g", record("r", `sort_by_label(up, "job")`)))))),
			want: []wantVerdict{{key: "default/app"}},
		},
		{
			name: "rejects a for duration Prometheus cannot parse with InvalidDuration",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				alert("A", "up == 0", forDuration("5x")),
			))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidDuration, message: `group "g", rule 1 (alert A): for: unknown unit "x" in duration "5x"`}},
		},
		{
			name: "rejects a negative keep_firing_for",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				alert("A", "up == 0", keepFiringFor("-1m")),
			))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidDuration, message: `group "g", rule 1 (alert A): keep_firing_for: not a valid duration string: "-1m"`}},
		},
		{
			name: "rejects a group interval and query_offset Prometheus cannot parse",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(groupWith("g", func(g *monitoringv1.RuleGroup) {
				g.Interval = ptr(monitoringv1.Duration("1 minute"))
				g.QueryOffset = ptr(monitoringv1.Duration("1m1h"))
			}, record("r", "up")))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidDuration,
				message: `group "g": interval: unknown unit " minute" in duration "1 minute"; group "g": query_offset: not a valid duration string: "1m1h"`}},
		},
		{
			name: "rejects two groups with the same name with DuplicateGroup",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(
				group("g", record("a", "up")),
				group("h", record("b", "up")),
				group("g", record("c", "up")),
			)))),
			want: []wantVerdict{{key: "default/app", reason: ReasonDuplicateGroup, message: `group "g": groups 1 and 3 share this name; group names must be unique within a PrometheusRule`}},
		},
		{
			name: "accepts the same group name in two PrometheusRules",
			in: newInput(newPrometheus(), rules(
				newRule("default", "a", withGroups(group("g", record("a", "up")))),
				newRule("default", "b", withGroups(group("g", record("b", "up")))),
			)),
			want: []wantVerdict{{key: "default/a"}, {key: "default/b"}},
		},
		{
			name: "rejects a group without a name, naming it by position",
			in:   newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g"), group("", alert("A", "up == 0")))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRules, message: `group 2: name must not be empty`}},
		},
		{
			name: "rejects a rule that sets both alert and record",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				monitoringv1.Rule{Alert: "A", Record: "r", Expr: intstr.FromString("up")},
			))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRules, message: `group "g", rule 1 (alert A): only one of 'record' and 'alert' must be set`}},
		},
		{
			name: "rejects a rule that sets neither alert nor record",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				monitoringv1.Rule{Expr: intstr.FromString("up")},
			))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRules, message: `group "g", rule 1 (neither alert nor record set): one of 'record' or 'alert' must be set`}},
		},
		{
			name: "rejects annotations and for on a recording rule",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				record("r", "up", annotations("summary", "x"), forDuration("5m")),
			))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRules,
				message: `group "g", rule 1 (record r): invalid field 'annotations' in recording rule; group "g", rule 1 (record r): invalid field 'for' in recording rule`}},
		},
		{
			name: "rejects a recording rule whose name holds a selector",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				record(`up{job="a"}`, "up"),
			))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRules, msgContains: []string{`group "g", rule 1 (record up{job="a"}): braces present in the recording rule name`}}},
		},
		{
			name: "rejects an alert whose annotation template does not parse",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				alert("A", "up == 0", annotations("summary", "{{ $labels.job ")),
			))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRules, msgContains: []string{`group "g", rule 1 (alert A): annotation "summary": `}}},
		},
		{
			name: "accepts UTF-8 label names by default",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				alert("A", "up == 0", ruleLabels("team.name", "sre")),
			))))),
			want: []wantVerdict{{key: "default/app"}},
		},
		{
			name: "rejects a rule label name the Prometheus's legacy name validation refuses",
			in: newInput(legacyNames, rules(newRule("default", "app", withGroups(group("g",
				alert("A", "up == 0", ruleLabels("team.name", "sre")),
			))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRules, message: `group "g", rule 1 (alert A): invalid label name: team.name`}},
		},
		{
			name: "rejects a group label name the Prometheus's legacy name validation refuses, naming the group",
			in: newInput(legacyNames, rules(newRule("default", "app", withGroups(
				groupWith("g", func(g *monitoringv1.RuleGroup) { g.Labels = pairs("group.label", "x", "__name__", "y") }, record("r", "up")),
			)))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRules,
				message: `group "g": labels: invalid label name "__name__"; group "g": labels: invalid label name "group.label"`}},
		},
		{
			name: "rejects a PrometheusRule with many problems, naming the first three in spec order",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(
				group("g", alert("A", "up ==", forDuration("x")), record("r", "sum(")),
				group("g", record("s", ")")),
			)))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidPromQL, message: `group "g", rule 1 (alert A): expr: 1:6: parse error: unexpected end of input; ` +
				`group "g", rule 1 (alert A): for: not a valid duration string: "x"; ` +
				`group "g", rule 2 (record r): expr: 1:5: parse error: unclosed left parenthesis; and 2 more`}},
		},
		{
			name: "renders an integer expr",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				monitoringv1.Rule{Alert: "Always", Expr: intstr.FromInt32(1)},
			))))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				rgs := mustParse(t, "file", fileOf(t, res, newRule("default", "app")))
				if got := rgs.Groups[0].Rules[0].Expr; got != "1" {
					t.Errorf("expr = %q, want 1", got)
				}
			},
		},
		{
			name: "writes group labels, limit, query_offset and keep_firing_for and drops partial_response_strategy",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(groupWith("g", func(g *monitoringv1.RuleGroup) {
				g.Interval = ptr(monitoringv1.Duration("30s"))
				g.QueryOffset = ptr(monitoringv1.Duration("1m"))
				g.Limit = ptr(10)
				g.Labels = pairs("team", "sre")
				g.PartialResponseStrategy = "warn"
			}, alert("A", "up == 0", forDuration("5m"), keepFiringFor("10m"))))))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				content := fileOf(t, res, newRule("default", "app"))
				if strings.Contains(content, "partial_response_strategy") {
					t.Errorf("partial_response_strategy written:\n%s", content)
				}
				g := mustParse(t, "file", content).Groups[0]
				if g.Interval.String() != "30s" || g.QueryOffset == nil || g.QueryOffset.String() != "1m" || g.Limit != 10 || g.Labels["team"] != "sre" {
					t.Errorf("group = %+v", g)
				}
				if r := g.Rules[0]; r.For.String() != "5m" || r.KeepFiringFor.String() != "10m" {
					t.Errorf("rule = %+v", r)
				}
			},
		},
		{
			name: "injects the namespace matcher into every selector",
			in: newInput(newPrometheus(withEnforcedNamespaceLabel("namespace")), rules(newRule("team-a", "app", withGroups(group("g",
				record("r", `sum by (job) (rate(http_requests_total{code=~"5.."}[5m])) / on (job) group_left() sum(rate(http_requests_total[5m] offset 1h)) > bool 0`),
				record("s", `max_over_time(deriv(node_load1{namespace="other"}[10m])[1h:1m] @ 1000) + absent(up{namespace=~".+", job="x"}) - vector(1)`),
			))))),
			want: []wantVerdict{{key: "team-a/app"}},
			check: func(t *testing.T, res *Result) {
				rgs := mustParse(t, "file", fileOf(t, res, newRule("team-a", "app")))
				got := []string{rgs.Groups[0].Rules[0].Expr, rgs.Groups[0].Rules[1].Expr}
				want := []string{
					`sum by (job) (rate(http_requests_total{code=~"5..",namespace="team-a"}[5m])) / on (job) group_left () sum(rate(http_requests_total{namespace="team-a"}[5m] offset 1h)) > bool 0`,
					`max_over_time(deriv(node_load1{namespace="team-a"}[10m])[1h:1m] @ 1000.000) + absent(up{job="x",namespace="team-a"}) - vector(1)`,
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("exprs:\n got %q\nwant %q", got, want)
				}
			},
		},
		{
			name: "sets the enforced label on alerts and recorded series, over the author's value",
			in: newInput(newPrometheus(withEnforcedNamespaceLabel("tenant")), rules(newRule("team-a", "app", withGroups(group("g",
				record("r", "up"),
				alert("A", "up == 0", ruleLabels("tenant", "someone-else", "severity", "page")),
			))))),
			want: []wantVerdict{{key: "team-a/app"}},
			check: func(t *testing.T, res *Result) {
				rs := mustParse(t, "file", fileOf(t, res, newRule("team-a", "app"))).Groups[0].Rules
				if !reflect.DeepEqual(rs[0].Labels, pairs("tenant", "team-a")) || !reflect.DeepEqual(rs[1].Labels, pairs("tenant", "team-a", "severity", "page")) {
					t.Errorf("labels = %v, %v", rs[0].Labels, rs[1].Labels)
				}
				if rs[0].Expr != `up{tenant="team-a"}` {
					t.Errorf("expr = %q", rs[0].Expr)
				}
			},
		},
		{
			name: "leaves PrometheusRules excluded from enforcement alone",
			in: newInput(newPrometheus(withEnforcedNamespaceLabel("namespace",
				monitoringv1.ObjectReference{Resource: monitoringv1.PrometheusRuleName, Namespace: "infra"},
				monitoringv1.ObjectReference{Group: "monitoring.coreos.com", Resource: monitoringv1.PrometheusRuleName, Namespace: "team-a", Name: "shared"},
				monitoringv1.ObjectReference{Resource: monitoringv1.ServiceMonitorName, Namespace: "team-b"},
			)), rules(
				newRule("infra", "any", withGroups(group("g", record("r", "up")))),
				newRule("team-a", "shared", withGroups(group("g", record("r", "up")))),
				newRule("team-a", "own", withGroups(group("g", record("r", "up")))),
				newRule("team-b", "own", withGroups(group("g", record("r", "up")))),
			)),
			want: []wantVerdict{{key: "infra/any"}, {key: "team-a/own"}, {key: "team-a/shared"}, {key: "team-b/own"}},
			check: func(t *testing.T, res *Result) {
				for _, c := range []struct {
					ns, name, expr string
				}{
					{"infra", "any", "up"},
					{"team-a", "shared", "up"},
					{"team-a", "own", `up{namespace="team-a"}`},
					{"team-b", "own", `up{namespace="team-b"}`},
				} {
					r := mustParse(t, c.name, fileOf(t, res, newRule(c.ns, c.name))).Groups[0].Rules[0]
					if r.Expr != c.expr {
						t.Errorf("%s/%s: expr = %q, want %q", c.ns, c.name, r.Expr, c.expr)
					}
				}
			},
		},
		{
			name: "leaves PrometheusRules listed in the deprecated prometheusRulesExcludedFromEnforce alone",
			in: newInput(newPrometheus(withEnforcedNamespaceLabel("namespace"), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.PrometheusRulesExcludedFromEnforce = []monitoringv1.PrometheusRuleExcludeConfig{{RuleNamespace: "team-a", RuleName: "shared"}}
			})), rules(
				newRule("team-a", "shared", withGroups(group("g", record("r", "up")))),
				newRule("team-a", "own", withGroups(group("g", record("r", "up")))),
				newRule("team-b", "shared", withGroups(group("g", record("r", "up")))),
			)),
			want: []wantVerdict{{key: "team-a/own"}, {key: "team-a/shared"}, {key: "team-b/shared"}},
			check: func(t *testing.T, res *Result) {
				for _, c := range []struct {
					ns, name, expr string
				}{
					{"team-a", "shared", "up"},
					{"team-a", "own", `up{namespace="team-a"}`},
					{"team-b", "shared", `up{namespace="team-b"}`},
				} {
					r := mustParse(t, c.name, fileOf(t, res, newRule(c.ns, c.name))).Groups[0].Rules[0]
					if r.Expr != c.expr {
						t.Errorf("%s/%s: expr = %q, want %q", c.ns, c.name, r.Expr, c.expr)
					}
				}
			},
		},
		{
			name: "keeps the author's expr formatting when nothing is enforced",
			in: newInput(newPrometheus(), rules(newRule("default", "app", withGroups(group("g",
				record("r", "sum by(job)(\n  up\n)"),
			))))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if got := mustParse(t, "file", fileOf(t, res, newRule("default", "app"))).Groups[0].Rules[0].Expr; got != "sum by(job)(\n  up\n)" {
					t.Errorf("expr = %q", got)
				}
			},
		},
		{
			name: "accepts a PrometheusRule without groups as an empty rule file",
			in:   newInput(newPrometheus(), rules(newRule("default", "app", withGroups([]monitoringv1.RuleGroup{}...)))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if got := fileOf(t, res, newRule("default", "app")); got != "groups: []\n" {
					t.Errorf("file = %q", got)
				}
			},
		},
		{
			name: "rejects the same PrometheusRule given twice",
			in: newInput(newPrometheus(), rules(
				newRule("default", "app", withGeneration(2)),
				newRule("default", "app", withGeneration(2)),
			)),
			want: []wantVerdict{{key: "default/app"}, {key: "default/app", reason: ReasonDuplicate, message: "PrometheusRule default/app was given more than once; only the first is used"}},
		},
		{
			name: "rejects a PrometheusRule whose file name another one already uses",
			in: newInput(newPrometheus(), rules(
				newRule("a", "b-c", withUID("")),
				newRule("a-b", "c", withUID("")),
			)),
			want: []wantVerdict{{key: "a-b/c"}, {key: "a/b-c", reason: ReasonDuplicate, message: `rule file name "a-b-c-.yaml" is already used by PrometheusRule a-b/c`}},
		},
		{
			name: "rejects a PrometheusRule whose file name is longer than a ConfigMap key may be",
			in:   newInput(newPrometheus(), rules(newRule("default", strings.Repeat("n", 230), withUID("0b9d1c52-8c1e-4f0e-9d51-6a0c5e3f7e11")))),
			want: []wantVerdict{{key: "default/" + strings.Repeat("n", 230), reason: ReasonNameTooLong, msgContains: []string{"is 280 characters long; a ConfigMap key may have at most 253"}}},
		},
		{
			name: "writes one empty ConfigMap when no rule is accepted",
			in:   newInput(newPrometheus(), rules(newRule("default", "bad", withGroups(group("g", record("r", "(")))))),
			want: []wantVerdict{{key: "default/bad", reason: ReasonInvalidPromQL}},
			check: func(t *testing.T, res *Result) {
				if len(res.ConfigMaps) != 1 || len(res.ConfigMaps[0]) != 0 {
					t.Errorf("ConfigMaps = %v, want one empty", res.ConfigMaps)
				}
			},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Generate(tt.in)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			checkVerdicts(t, res.Verdicts, tt.want)
			mustParseAll(t, tt.in.Prometheus, res)
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

func checkVerdicts(t *testing.T, got []Verdict, want []wantVerdict) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d verdicts, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		v := got[i]
		if key := v.Namespace + "/" + v.Name; key != w.key {
			t.Errorf("verdict %d is for %s, want %s", i, key, w.key)
		}
		if v.Kind != "PrometheusRule" || v.Generation == 0 {
			t.Errorf("verdict %d: kind %q generation %d", i, v.Kind, v.Generation)
		}
		if w.reason == "" {
			if !v.Accepted || v.Reason != "" || v.Message != "" {
				t.Errorf("%s: want accepted, got %+v", w.key, v)
			}
			continue
		}
		if v.Accepted || v.Reason != w.reason {
			t.Errorf("%s: want rejected with %s, got accepted=%v reason=%s message=%q", w.key, w.reason, v.Accepted, v.Reason, v.Message)
		}
		if v.Message == "" {
			t.Errorf("%s: rejected without a message", w.key)
		}
		if w.message != "" && v.Message != w.message {
			t.Errorf("%s: message\n got %q\nwant %q", w.key, v.Message, w.message)
		}
		for _, s := range w.msgContains {
			if !strings.Contains(v.Message, s) {
				t.Errorf("%s: message %q does not contain %q", w.key, v.Message, s)
			}
		}
	}
}

func TestGenerateRefusesAnInvalidPrometheus(t *testing.T) {
	tests := []struct {
		name string
		p    *monitoringv1.Prometheus
		want string
	}{
		{name: "refuses a nil Prometheus", want: "render rule files: no Prometheus or ThanosRuler given"},
		{
			name: "refuses an enforcedNamespaceLabel that is not UTF-8",
			p:    newPrometheus(withEnforcedNamespaceLabel("\xff")),
			want: `render rule files for Prometheus monitoring/main: spec.enforcedNamespaceLabel: "\xff" is not a valid label name`,
		},
		{
			name: "refuses __name__ as enforcedNamespaceLabel",
			p:    newPrometheus(withEnforcedNamespaceLabel("__name__")),
			want: `render rule files for Prometheus monitoring/main: spec.enforcedNamespaceLabel: "__name__" is not a valid label name`,
		},
		{
			name: "refuses an enforcedNamespaceLabel legacy validation rejects",
			p: newPrometheus(withEnforcedNamespaceLabel("k8s.namespace"), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.NameValidationScheme = ptr(monitoringv1.LegacyNameValidationScheme)
			})),
			want: `render rule files for Prometheus monitoring/main: spec.enforcedNamespaceLabel: "k8s.namespace" is not a valid label name`,
		},
		{
			name: "refuses an unknown nameValidationScheme",
			p: newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.NameValidationScheme = ptr(monitoringv1.NameValidationSchemeOptions("Latin1"))
			})),
			want: `render rule files for Prometheus monitoring/main: spec.nameValidationScheme: unknown value "Latin1"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Generate(newInput(tt.p, rules(newRule("default", "app"))))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFileName(t *testing.T) {
	if got := FileName(newRule("monitoring", "kube-rules", withUID("0b9d1c52-8c1e-4f0e-9d51-6a0c5e3f7e11"))); got != "monitoring-kube-rules-0b9d1c52-8c1e-4f0e-9d51-6a0c5e3f7e11.yaml" {
		t.Errorf("FileName = %q", got)
	}
}

func keys(m map[string]string) []string { return sortedKeys(m) }

// Prometheus's parser reports label problems in map order; the message must not change
// from one run to the next, or every reconcile would rewrite the status.
func TestRejectionMessageIsStable(t *testing.T) {
	p := newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
		s.NameValidationScheme = ptr(monitoringv1.LegacyNameValidationScheme)
	}))
	pr := newRule("default", "app", withGroups(group("g",
		alert("A", "up == 0", ruleLabels("a.1", "x", "b.2", "x", "c.3", "x", "d.4", "x", "e.5", "x")),
	)))
	want := `group "g", rule 1 (alert A): invalid label name: a.1; group "g", rule 1 (alert A): invalid label name: b.2; group "g", rule 1 (alert A): invalid label name: c.3; and 2 more`
	for i := range 20 {
		res, err := Generate(newInput(p, rules(pr)))
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Verdicts[0].Message; got != want {
			t.Fatalf("run %d: message\n got %q\nwant %q", i, got, want)
		}
	}
}
