package webhook

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/relabel"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FuzzValidatePrometheusRule: whatever the rule, validation does not panic,
// every error names a field under spec, and an accepted rule loads with
// Prometheus's rule-file parser.
func FuzzValidatePrometheusRule(f *testing.F) {
	for _, s := range [][7]string{
		{"up == 0", "A", "", "5m", "severity", "page", "{{ $labels.instance }}"},
		{"up ==", "", "r", "", "__name__", "x", ""},
		{"sum(rate(x[5m])", "B", "b", "5 minutes", "", "", "{{ .Nope"},
		{"1", "", "a:b{c}", "0s", "\xff", "\xfe", ""},
		{`sort_by_label(up, "job")`, "", "x", "", "a.b", "c", "{{ $x }}"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6])
	}
	f.Fuzz(func(t *testing.T, expr, alert, record, forDuration, labelKey, labelValue, annotation string) {
		rule := monitoringv1.Rule{Alert: alert, Record: record, Expr: intstr.FromString(expr),
			Labels: map[string]string{labelKey: labelValue}, Annotations: map[string]string{"summary": annotation}}
		if forDuration != "" {
			rule.For = ptrTo(monitoringv1.Duration(forDuration))
		}
		r := promRule(group("g", rule))
		errs := ValidatePrometheusRule(r)
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.") {
				t.Errorf("error without a spec field: %v", e)
			}
		}
		if len(errs) == 0 {
			if backstop := parseWithRulefmt(r); len(backstop) > 0 {
				t.Errorf("accepted, but Prometheus refuses it: %v", backstop.ToAggregate())
			}
		}
		_ = prometheusRuleWarnings(r)
	})
}

// FuzzValidateRelabelConfig: an accepted relabeling is one Prometheus loads
// (its YAML form unmarshals and validates); a refused one names a field of
// the rule.
func FuzzValidateRelabelConfig(f *testing.F) {
	for _, s := range []struct {
		action, regex, source, target, replacement string
		modulus                                    int64
	}{
		{"replace", "(.*)", "__address__", "instance", "$1", 0},
		{"HashMod", "", "__address__", "__tmp_hash", "", 4},
		{"hashmod", "", "a", "", "", 0},
		{"labelmap", "__meta_(.+)", "", "", "${1}", 0},
		{"LabelDrop", "tmp_.*", "", "x", "", 0},
		{"keepequal", "", "a", "b", "", 0},
		{"lowercase", "", "a", "b", "x", 0},
		{"explode", "(", "", "", "", -1},
		{"drop", "a**", "\xff", "", "", 0},
	} {
		f.Add(s.action, s.regex, s.source, s.target, s.replacement, s.modulus)
	}
	f.Fuzz(func(t *testing.T, action, regex, source, target, replacement string, modulus int64) {
		rc := monitoringv1.RelabelConfig{Action: action, Regex: regex, TargetLabel: target, Modulus: modulus}
		if source != "" {
			rc.SourceLabels = []monitoringv1.LabelName{monitoringv1.LabelName(source)}
		}
		if replacement != "" {
			rc.Replacement = ptrTo(replacement)
		}
		path := field.NewPath("spec", "endpoints").Index(0).Child("relabelings").Index(0)
		errs := validateRelabelConfig(path, &rc)
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, path.String()) {
				t.Errorf("error outside the rule: %v", e)
			}
		}
		if len(errs) > 0 {
			return
		}
		// The rule as the controller writes it into prometheus.yaml.
		y := map[string]any{"action": strings.ToLower(action)}
		if action == "" {
			y["action"] = "replace"
		}
		if source != "" {
			y["source_labels"] = []string{source}
		}
		if regex != "" {
			y["regex"] = regex
		}
		if target != "" {
			y["target_label"] = target
		}
		if modulus != 0 {
			y["modulus"] = modulus
		}
		if replacement != "" {
			y["replacement"] = replacement
		}
		out, err := yaml.Marshal(y)
		if err != nil {
			t.Skip(err)
		}
		var cfg relabel.Config
		if err := yaml.Unmarshal(out, &cfg); err != nil {
			t.Fatalf("accepted %+v, but Prometheus cannot read it: %v\n%s", rc, err, out)
		}
		if err := cfg.Validate(nameScheme); err != nil {
			t.Fatalf("accepted %+v, but Prometheus refuses it: %v", rc, err)
		}
	})
}
