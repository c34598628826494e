package rules

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newThanosRuler(f func(*monitoringv1.ThanosRulerSpec)) *monitoringv1.ThanosRuler {
	tr := &monitoringv1.ThanosRuler{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "global"}}
	if f != nil {
		f(&tr.Spec)
	}
	return tr
}

func TestThanosRulerDialect(t *testing.T) {
	withStrategy := func(s string) *monitoringv1.PrometheusRule {
		return newRule("team-a", "partial", withGroups(groupWith("g", func(g *monitoringv1.RuleGroup) {
			g.PartialResponseStrategy = s
		}, alert("Up", "up == 0"))))
	}
	tests := []struct {
		name   string
		owner  Input
		rule   *monitoringv1.PrometheusRule
		reason string
		file   []string // substrings of the written file
		absent []string
	}{
		{
			name:  "writes partial_response_strategy for a ThanosRuler",
			owner: Input{ThanosRuler: newThanosRuler(nil)},
			rule:  withStrategy("warn"),
			file:  []string{"partial_response_strategy: warn"},
		},
		{
			name:   "never writes partial_response_strategy for a Prometheus, which refuses it",
			owner:  Input{Prometheus: newPrometheus()},
			rule:   withStrategy("abort"),
			absent: []string{"partial_response_strategy"},
		},
		{
			name:   "rejects a strategy Thanos does not know, naming the field",
			owner:  Input{ThanosRuler: newThanosRuler(nil)},
			rule:   withStrategy("maybe"),
			reason: ReasonInvalidRules,
		},
		{
			name:   "rejects a rule Prometheus's parser refuses in the Thanos dialect too",
			owner:  Input{ThanosRuler: newThanosRuler(nil)},
			rule:   newRule("team-a", "bad", withGroups(group("g", alert("Bad", "up ==")))),
			reason: ReasonInvalidPromQL,
		},
		{
			name: "enforces the ThanosRuler's namespace label on a rule no exclusion names",
			owner: Input{ThanosRuler: newThanosRuler(func(s *monitoringv1.ThanosRulerSpec) {
				s.EnforcedNamespaceLabel = "namespace"
				s.PrometheusRulesExcludedFromEnforce = []monitoringv1.PrometheusRuleExcludeConfig{{RuleNamespace: "team-a", RuleName: "other"}}
			})},
			rule: withStrategy(""),
			file: []string{`up{namespace="team-a"} == 0`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.owner
			in.Rules = rules(tt.rule)
			res, err := Generate(in)
			if err != nil {
				t.Fatal(err)
			}
			v := res.Verdicts[0]
			if v.Reason != tt.reason {
				t.Fatalf("verdict = %+v, want reason %q", v, tt.reason)
			}
			if tt.reason != "" {
				if !strings.Contains(v.Message, `group "g"`) {
					t.Errorf("message %q does not name the group", v.Message)
				}
				return
			}
			file := fileOf(t, res, tt.rule)
			for _, s := range tt.file {
				if !strings.Contains(file, s) {
					t.Errorf("file does not contain %q:\n%s", s, file)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(file, s) {
					t.Errorf("file contains %q:\n%s", s, file)
				}
			}
		})
	}
}
