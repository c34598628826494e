package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/template"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// nameScheme is how metric and label names are checked. Prometheus 3 accepts
// any UTF-8 name; the webhook does not know which Prometheus will load the
// object, so it refuses only what no version accepts and warns about names
// older versions refuse.
var nameScheme = model.UTF8Validation

// PromQL parsers: the permissive one accepts everything a Prometheus with
// every feature flag accepts (refusing a rule that runs on someone's
// Prometheus would be wrong); the strict one, a Prometheus without flags,
// tells when a rule needs them. Duration expressions are always on in the
// Prometheus server (and in the controller's rule renderer).
var (
	permissivePromQL = parser.NewParser(parser.Options{
		EnableExperimentalFunctions:  true,
		ExperimentalDurationExpr:     true,
		EnableExtendedRangeSelectors: true,
		EnableBinopFillModifiers:     true,
	})
	strictPromQL = parser.NewParser(parser.Options{ExperimentalDurationExpr: true})
)

// ValidatePrometheusRule checks what Prometheus checks when it loads the
// rule file: every expression parses, durations are Prometheus durations,
// group names are unique, each rule is either a recording rule with a valid
// metric name or an alerting rule, label names and templates are valid.
func ValidatePrometheusRule(r *monitoringv1.PrometheusRule) field.ErrorList {
	var errs field.ErrorList
	groupsPath := field.NewPath("spec", "groups")
	seen := map[string]bool{}
	for i := range r.Spec.Groups {
		g := &r.Spec.Groups[i]
		gp := groupsPath.Index(i)
		switch {
		case g.Name == "":
			errs = append(errs, field.Required(gp.Child("name"), "a rule group needs a name"))
		case seen[g.Name]:
			errs = append(errs, field.Duplicate(gp.Child("name"), g.Name))
		}
		seen[g.Name] = true
		if g.Interval != nil {
			errs = append(errs, validateDuration(gp.Child("interval"), string(*g.Interval))...)
		}
		if g.QueryOffset != nil {
			errs = append(errs, validateDuration(gp.Child("query_offset"), string(*g.QueryOffset))...)
		}
		if g.Limit != nil && *g.Limit < 0 {
			errs = append(errs, field.Invalid(gp.Child("limit"), *g.Limit, "must not be negative"))
		}
		switch strings.ToLower(g.PartialResponseStrategy) {
		case "", "warn", "abort":
		default:
			errs = append(errs, field.NotSupported(gp.Child("partial_response_strategy"), g.PartialResponseStrategy, []string{"warn", "abort"}))
		}
		errs = append(errs, validateRuleLabels(gp.Child("labels"), g.Labels)...)
		for j := range g.Rules {
			errs = append(errs, validateRule(gp.Child("rules").Index(j), &g.Rules[j])...)
		}
	}
	if len(errs) == 0 {
		// Anything Prometheus's own rule-file parser still refuses: the
		// checks above name the field; this one makes sure nothing that
		// would break the rule file gets through.
		errs = append(errs, parseWithRulefmt(r)...)
	}
	return errs
}

func validateRule(path *field.Path, r *monitoringv1.Rule) field.ErrorList {
	var errs field.ErrorList
	switch {
	case r.Record != "" && r.Alert != "":
		errs = append(errs, field.Invalid(path.Child("record"), r.Record, "a rule is either a recording rule (record) or an alerting rule (alert), not both"))
	case r.Record == "" && r.Alert == "":
		errs = append(errs, field.Required(path.Child("alert"), "a rule needs either alert (an alerting rule) or record (a recording rule)"))
	}
	if r.Alert != "" && !model.LabelValue(r.Alert).IsValid() {
		// The alert name becomes the alertname label.
		errs = append(errs, field.Invalid(path.Child("alert"), r.Alert, "not valid UTF-8"))
	}

	expr := r.Expr.String()
	if strings.TrimSpace(expr) == "" {
		errs = append(errs, field.Required(path.Child("expr"), "the PromQL expression to evaluate"))
	} else if _, err := permissivePromQL.ParseExpr(expr); err != nil {
		errs = append(errs, field.Invalid(path.Child("expr"), expr, err.Error()))
	}

	if r.For != nil {
		errs = append(errs, validateDuration(path.Child("for"), string(*r.For))...)
	}
	if r.KeepFiringFor != nil {
		errs = append(errs, validateDuration(path.Child("keep_firing_for"), string(*r.KeepFiringFor))...)
	}

	if r.Record != "" {
		if !nameScheme.IsValidMetricName(r.Record) {
			errs = append(errs, field.Invalid(path.Child("record"), r.Record, "not a valid metric name"))
		} else if strings.ContainsAny(r.Record, "{}") {
			errs = append(errs, field.Invalid(path.Child("record"), r.Record, "a metric name with braces: does this belong in expr?"))
		}
		if len(r.Annotations) > 0 {
			errs = append(errs, field.Forbidden(path.Child("annotations"), "only alerting rules have annotations"))
		}
		if r.For != nil && !isZeroDuration(string(*r.For)) {
			errs = append(errs, field.Forbidden(path.Child("for"), "only alerting rules wait before firing"))
		}
		if r.KeepFiringFor != nil && !isZeroDuration(string(*r.KeepFiringFor)) {
			errs = append(errs, field.Forbidden(path.Child("keep_firing_for"), "only alerting rules keep firing"))
		}
	}

	errs = append(errs, validateRuleLabels(path.Child("labels"), r.Labels)...)
	for _, k := range sortedKeys(r.Annotations) {
		if !nameScheme.IsValidLabelName(k) {
			errs = append(errs, field.Invalid(path.Child("annotations").Key(k), k, "not a valid annotation name"))
		}
	}
	if r.Alert != "" {
		for _, k := range sortedKeys(r.Labels) {
			if err := parseAlertTemplate(r.Alert, r.Labels[k]); err != nil {
				errs = append(errs, field.Invalid(path.Child("labels").Key(k), r.Labels[k], err.Error()))
			}
		}
		for _, k := range sortedKeys(r.Annotations) {
			if err := parseAlertTemplate(r.Alert, r.Annotations[k]); err != nil {
				errs = append(errs, field.Invalid(path.Child("annotations").Key(k), r.Annotations[k], err.Error()))
			}
		}
	}
	return errs
}

func validateRuleLabels(path *field.Path, labels map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(labels) {
		switch {
		case k == model.MetricNameLabel:
			errs = append(errs, field.Invalid(path.Key(k), k, "the metric name cannot be set as a label"))
		case !nameScheme.IsValidLabelName(k):
			errs = append(errs, field.Invalid(path.Key(k), k, "not a valid label name"))
		}
		if !model.LabelValue(labels[k]).IsValid() {
			errs = append(errs, field.Invalid(path.Key(k), labels[k], "not valid UTF-8"))
		}
	}
	return errs
}

// templateVariables are the variables Prometheus defines before expanding an
// alert's labels and annotations.
const templateVariables = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"

func parseAlertTemplate(alert, text string) error {
	if !strings.Contains(text, "{{") {
		return nil
	}
	return template.NewTemplateExpander(context.Background(), templateVariables+text, "__alert_"+alert, nil, 0, nil, nil, nil).ParseTest()
}

// ruleFile is the rule file Prometheus reads for a PrometheusRule, in the
// fields Prometheus knows (Thanos's partial_response_strategy left out).
type ruleFile struct {
	Groups []ruleFileGroup `yaml:"groups"`
}

type ruleFileGroup struct {
	Name        string            `yaml:"name"`
	Interval    string            `yaml:"interval,omitempty"`
	QueryOffset string            `yaml:"query_offset,omitempty"`
	Limit       int               `yaml:"limit,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Rules       []ruleFileRule    `yaml:"rules"`
}

type ruleFileRule struct {
	Record        string            `yaml:"record,omitempty"`
	Alert         string            `yaml:"alert,omitempty"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for,omitempty"`
	KeepFiringFor string            `yaml:"keep_firing_for,omitempty"`
	Labels        map[string]string `yaml:"labels,omitempty"`
	Annotations   map[string]string `yaml:"annotations,omitempty"`
}

var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// parseWithRulefmt renders the rule file and loads it with Prometheus's
// parser. Its errors name a group and a 1-based rule; they are mapped back
// to the PrometheusRule's fields.
func parseWithRulefmt(r *monitoringv1.PrometheusRule) field.ErrorList {
	var f ruleFile
	for _, g := range r.Spec.Groups {
		fg := ruleFileGroup{Name: g.Name, Labels: g.Labels, Rules: []ruleFileRule{}}
		if g.Interval != nil {
			fg.Interval = string(*g.Interval)
		}
		if g.QueryOffset != nil {
			fg.QueryOffset = string(*g.QueryOffset)
		}
		if g.Limit != nil {
			fg.Limit = *g.Limit
		}
		for _, rule := range g.Rules {
			fr := ruleFileRule{Record: rule.Record, Alert: rule.Alert, Expr: rule.Expr.String(), Labels: rule.Labels, Annotations: rule.Annotations}
			if rule.For != nil {
				fr.For = string(*rule.For)
			}
			if rule.KeepFiringFor != nil {
				fr.KeepFiringFor = string(*rule.KeepFiringFor)
			}
			fg.Rules = append(fg.Rules, fr)
		}
		f.Groups = append(f.Groups, fg)
	}
	out, err := yaml.Marshal(f)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), fmt.Errorf("render the rule file: %w", err))}
	}
	_, parseErrs := rulefmt.Parse(out, false, nameScheme, permissivePromQL, discardLogger)
	var errs field.ErrorList
	for _, err := range parseErrs {
		path := field.NewPath("spec", "groups")
		detail := err.Error()
		var re *rulefmt.Error
		if errors.As(err, &re) {
			if i := slices.IndexFunc(r.Spec.Groups, func(g monitoringv1.RuleGroup) bool { return g.Name == re.Group }); i >= 0 {
				path = path.Index(i).Child("rules").Index(re.Rule - 1)
			}
			// The line and column point into the rendered file, which the
			// user never sees; the wrapped error is the useful part.
			if inner := errors.Unwrap(&re.Err); inner != nil {
				detail = inner.Error()
			}
		}
		errs = append(errs, invalid(path, detail))
	}
	return errs
}

// prometheusRuleWarnings: rules that load only on some Prometheus versions
// or with feature flags.
func prometheusRuleWarnings(r *monitoringv1.PrometheusRule) []string {
	var w []string
	for i, g := range r.Spec.Groups {
		for j, rule := range g.Rules {
			p := field.NewPath("spec", "groups").Index(i).Child("rules").Index(j)
			expr := rule.Expr.String()
			if _, err := strictPromQL.ParseExpr(expr); err != nil {
				if _, err := permissivePromQL.ParseExpr(expr); err == nil {
					w = append(w, fmt.Sprintf("%s: the expression needs a Prometheus feature flag (promql-experimental-functions or similar)", p.Child("expr")))
				}
			}
			if rule.Record != "" && nameScheme.IsValidMetricName(rule.Record) && !model.LegacyValidation.IsValidMetricName(rule.Record) {
				w = append(w, fmt.Sprintf("%s: %q needs Prometheus 3 (UTF-8 metric names)", p.Child("record"), rule.Record))
			}
		}
	}
	return w
}

func isZeroDuration(s string) bool {
	d, err := model.ParseDuration(s)
	return err == nil && d == 0
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
