package rules

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"unicode/utf8"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	// v3, not the v2 the scrape package uses: v2 folds lines longer than 80 characters, which
	// would break long expressions and annotations over several lines in the ConfigMaps.
	"go.yaml.in/yaml/v3"
)

// The rule file as Prometheus reads it. Only fields Prometheus knows: it refuses unknown ones,
// so Thanos's partial_response_strategy is written only in the Thanos Ruler dialect.
type fileDocument struct {
	Groups []*groupDocument `yaml:"groups"`
}

type groupDocument struct {
	Name        string            `yaml:"name"`
	Interval    string            `yaml:"interval,omitempty"`
	QueryOffset string            `yaml:"query_offset,omitempty"`
	Limit       *int              `yaml:"limit,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	// PartialResponseStrategy is Thanos Ruler's only addition to the format.
	PartialResponseStrategy string          `yaml:"partial_response_strategy,omitempty"`
	Rules                   []*ruleDocument `yaml:"rules"`
}

type ruleDocument struct {
	Record        string            `yaml:"record,omitempty"`
	Alert         string            `yaml:"alert,omitempty"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for,omitempty"`
	KeepFiringFor string            `yaml:"keep_firing_for,omitempty"`
	Labels        map[string]string `yaml:"labels,omitempty"`
	Annotations   map[string]string `yaml:"annotations,omitempty"`
}

// renderer holds what the Prometheus decides for every rule file.
type renderer struct {
	// parser is configured like the Prometheus server's: expressions it refuses, the server
	// refuses too.
	parser     parser.Parser
	nameScheme model.ValidationScheme
	// enforcedLabel is spec.enforcedNamespaceLabel; excluded is spec.excludedFromEnforcement,
	// excludedRules the deprecated spec.prometheusRulesExcludedFromEnforce (both apply).
	enforcedLabel string
	excluded      []monitoringv1.ObjectReference
	excludedRules []monitoringv1.PrometheusRuleExcludeConfig
	// thanos: the files are for a Thanos Ruler, which also reads partial_response_strategy.
	thanos bool
}

// settings are the workload-level choices that shape the rule files, whatever the kind.
type settings struct {
	enforcedLabel  string
	excluded       []monitoringv1.ObjectReference
	excludedRules  []monitoringv1.PrometheusRuleExcludeConfig
	nameScheme     *monitoringv1.NameValidationSchemeOptions
	enableFeatures []monitoringv1.EnableFeature
	thanos         bool
}

func prometheusSettings(p *monitoringv1.Prometheus) settings {
	return settings{enforcedLabel: p.Spec.EnforcedNamespaceLabel, excluded: p.Spec.ExcludedFromEnforcement,
		excludedRules: p.Spec.PrometheusRulesExcludedFromEnforce, nameScheme: p.Spec.NameValidationScheme, enableFeatures: p.Spec.EnableFeatures}
}

// thanosRulerSettings: Thanos Ruler evaluates with Prometheus's PromQL engine and its own
// feature flags, which do not change the parser, so only enforcement carries over.
func thanosRulerSettings(tr *monitoringv1.ThanosRuler) settings {
	return settings{enforcedLabel: tr.Spec.EnforcedNamespaceLabel, excluded: tr.Spec.ExcludedFromEnforcement,
		excludedRules: tr.Spec.PrometheusRulesExcludedFromEnforce, thanos: true}
}

// Feature flags (spec.enableFeatures) that change what the PromQL parser accepts.
const (
	featureExperimentalFunctions = "promql-experimental-functions"
	featureExtendedRangeSelector = "promql-extended-range-selectors"
	featureBinopFillModifiers    = "promql-binop-fill-modifiers"
)

func newRenderer(p *monitoringv1.Prometheus) (*renderer, error) {
	return newRendererWith(prometheusSettings(p))
}

func newRendererWith(spec settings) (*renderer, error) {
	r := &renderer{
		nameScheme:    model.UTF8Validation,
		enforcedLabel: spec.enforcedLabel,
		excluded:      spec.excluded,
		excludedRules: spec.excludedRules,
		thanos:        spec.thanos,
	}
	if spec.nameScheme != nil {
		switch *spec.nameScheme {
		case monitoringv1.LegacyNameValidationScheme:
			r.nameScheme = model.LegacyValidation
		case monitoringv1.UTF8NameValidationScheme:
			r.nameScheme = model.UTF8Validation
		default:
			return nil, fmt.Errorf("spec.nameValidationScheme: unknown value %q", *spec.nameScheme)
		}
	}
	// Duration expressions are always on in the Prometheus server; the rest follow its flags.
	opts := parser.Options{ExperimentalDurationExpr: true}
	for _, f := range spec.enableFeatures {
		switch string(f) {
		case featureExperimentalFunctions:
			opts.EnableExperimentalFunctions = true
		case featureExtendedRangeSelector:
			opts.EnableExtendedRangeSelectors = true
		case featureBinopFillModifiers:
			opts.EnableBinopFillModifiers = true
		}
	}
	r.parser = parser.NewParser(opts)
	// __name__ passes the name check but would overwrite every metric name in every expr.
	if l := r.enforcedLabel; l != "" && (!r.nameScheme.IsValidLabelName(l) || l == model.MetricNameLabel) {
		return nil, fmt.Errorf("spec.enforcedNamespaceLabel: %q is not a valid label name", l)
	}
	return r, nil
}

// rejection is why one PrometheusRule is left out.
type rejection struct {
	reason  string
	message string
}

// problem is one thing wrong with a PrometheusRule, placed so that problems sort in spec order.
type problem struct {
	group, rule int // 0-based; rule -1 for the group itself
	reason      string
	message     string
}

// maxProblemsInMessage keeps a status message short when a PrometheusRule is wrong everywhere.
const maxProblemsInMessage = 3

// rejectFor turns the problems of one PrometheusRule into its rejection: the reason of the
// first, the messages of the first few. Problems of the same group or rule keep their order.
func rejectFor(problems []problem) *rejection {
	if len(problems) == 0 {
		return nil
	}
	sort.SliceStable(problems, func(i, j int) bool {
		a, b := problems[i], problems[j]
		if a.group != b.group {
			return a.group < b.group
		}
		return a.rule < b.rule
	})
	n := min(len(problems), maxProblemsInMessage)
	msgs := make([]string, 0, n+1)
	for _, p := range problems[:n] {
		msgs = append(msgs, p.message)
	}
	if more := len(problems) - n; more > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", more))
	}
	return &rejection{reason: problems[0].reason, message: strings.Join(msgs, "; ")}
}

// renderFile renders one PrometheusRule into a rule file. Checks that can name their field
// (durations, PromQL, group names) run first; the file that passes them is then parsed by
// Prometheus's own rule-file parser, which has the last word.
func (r *renderer) renderFile(pr *monitoringv1.PrometheusRule) ([]byte, *rejection) {
	enforce := r.enforces(pr)
	doc := &fileDocument{Groups: make([]*groupDocument, 0, len(pr.Spec.Groups))}
	var problems []problem
	firstUse := make(map[string]int, len(pr.Spec.Groups))

	for gi := range pr.Spec.Groups {
		g := &pr.Spec.Groups[gi]
		gd := &groupDocument{Name: g.Name, Limit: g.Limit, Labels: g.Labels, Rules: make([]*ruleDocument, 0, len(g.Rules))}
		where := groupName(gi, g.Name)
		groupProblem := func(reason, format string, args ...any) {
			problems = append(problems, problem{group: gi, rule: -1, reason: reason, message: where + ": " + fmt.Sprintf(format, args...)})
		}

		if g.Name == "" {
			groupProblem(ReasonInvalidRules, "name must not be empty")
		} else if first, dup := firstUse[g.Name]; dup {
			groupProblem(ReasonDuplicateGroup, "groups %d and %d share this name; group names must be unique within a PrometheusRule", first+1, gi+1)
		} else {
			firstUse[g.Name] = gi
		}
		if s, err := duration(g.Interval); err != nil {
			groupProblem(ReasonInvalidDuration, "interval: %v", err)
		} else {
			gd.Interval = s
		}
		if r.thanos && g.PartialResponseStrategy != "" {
			switch strings.ToLower(g.PartialResponseStrategy) {
			case "warn", "abort":
				gd.PartialResponseStrategy = g.PartialResponseStrategy
			default:
				groupProblem(ReasonInvalidRules, "partial_response_strategy: %q is not one of warn, abort", g.PartialResponseStrategy)
			}
		}
		if s, err := duration(g.QueryOffset); err != nil {
			groupProblem(ReasonInvalidDuration, "query_offset: %v", err)
		} else {
			gd.QueryOffset = s
		}
		// Prometheus reports bad group labels without naming the group, so check them here.
		for _, k := range sortedKeys(g.Labels) {
			if !r.nameScheme.IsValidLabelName(k) || k == model.MetricNameLabel {
				groupProblem(ReasonInvalidRules, "labels: invalid label name %q", k)
			}
			if !model.LabelValue(g.Labels[k]).IsValid() {
				groupProblem(ReasonInvalidRules, "labels.%s: invalid label value %q", k, g.Labels[k])
			}
		}

		for ri := range g.Rules {
			rd, rps := r.renderRule(pr, enforce, gi, ri, &g.Rules[ri])
			problems = append(problems, rps...)
			gd.Rules = append(gd.Rules, rd)
		}
		doc.Groups = append(doc.Groups, gd)
	}
	if rej := rejectFor(problems); rej != nil {
		return nil, rej
	}

	out, err := marshal(doc)
	if err != nil {
		return nil, &rejection{reason: ReasonInvalidRules, message: fmt.Sprintf("cannot write the rule file: %v", err)}
	}
	// ConfigMap data is JSON text: invalid UTF-8 would be replaced on the way to the API server.
	// The encoder writes such strings as base64 !!binary, so this only guards the encoder.
	if !utf8.Valid(out) {
		return nil, &rejection{reason: ReasonInvalidRules, message: "the rule file is not valid UTF-8"}
	}
	if rej := rejectFor(r.check(out, doc)); rej != nil {
		return nil, rej
	}
	return out, nil
}

func (r *renderer) renderRule(pr *monitoringv1.PrometheusRule, enforce bool, gi, ri int, rule *monitoringv1.Rule) (*ruleDocument, []problem) {
	rd := &ruleDocument{
		Record:      rule.Record,
		Alert:       rule.Alert,
		Labels:      rule.Labels,
		Annotations: rule.Annotations,
	}
	var problems []problem
	where := ruleName(pr.Spec.Groups[gi].Name, gi, ri, rule.Alert, rule.Record)
	add := func(reason, format string, args ...any) {
		problems = append(problems, problem{group: gi, rule: ri, reason: reason, message: where + ": " + fmt.Sprintf(format, args...)})
	}

	expr := rule.Expr.String()
	if strings.TrimSpace(expr) == "" {
		add(ReasonInvalidPromQL, "expr: must not be empty")
	} else if parsed, err := r.parser.ParseExpr(expr); err != nil {
		add(ReasonInvalidPromQL, "expr: %s", oneLine(err.Error()))
	} else if enforce {
		rd.Expr = enforceMatcher(parsed, r.enforcedLabel, pr.Namespace)
	} else {
		// Untouched expressions keep the author's formatting.
		rd.Expr = expr
	}

	if rule.For != nil {
		if s, err := duration(rule.For); err != nil {
			add(ReasonInvalidDuration, "for: %v", err)
		} else {
			rd.For = s
		}
	}
	if rule.KeepFiringFor != nil {
		d := monitoringv1.Duration(*rule.KeepFiringFor)
		if s, err := duration(&d); err != nil {
			add(ReasonInvalidDuration, "keep_firing_for: %v", err)
		} else {
			rd.KeepFiringFor = s
		}
	}

	if enforce {
		// The label goes on every series a recording rule writes and every alert, so that
		// results cannot claim to come from another namespace.
		labels := make(map[string]string, len(rule.Labels)+1)
		for k, v := range rule.Labels {
			labels[k] = v
		}
		labels[r.enforcedLabel] = pr.Namespace
		rd.Labels = labels
	}
	return rd, problems
}

// check parses a rendered file the way the Prometheus server loads rule files and turns what
// it refuses into problems that name the group and the rule.
func (r *renderer) check(out []byte, doc *fileDocument) []problem {
	if r.thanos {
		// Thanos Ruler takes partial_response_strategy out of each group and hands the rest
		// to Prometheus's parser: check what that parser sees.
		plain := &fileDocument{Groups: make([]*groupDocument, len(doc.Groups))}
		for i, g := range doc.Groups {
			c := *g
			c.PartialResponseStrategy = ""
			plain.Groups[i] = &c
		}
		var err error
		if out, err = marshal(plain); err != nil {
			return []problem{{group: len(doc.Groups), reason: ReasonInvalidRules, message: fmt.Sprintf("cannot write the rule file: %v", err)}}
		}
	}
	_, errs := rulefmt.Parse(out, false, r.nameScheme, r.parser, discardLogger)
	if len(errs) == 0 {
		return nil
	}
	groupIndex := make(map[string]int, len(doc.Groups))
	for i, g := range doc.Groups {
		groupIndex[g.Name] = i
	}
	problems := make([]problem, 0, len(errs))
	for _, err := range errs {
		var rerr *rulefmt.Error
		gi, ok := -1, false
		if errors.As(err, &rerr) {
			gi, ok = groupIndex[rerr.Group]
		}
		if !ok || rerr.Rule < 1 || rerr.Rule > len(doc.Groups[gi].Rules) {
			// Not tied to a rule; sorts after everything that is.
			problems = append(problems, problem{group: len(doc.Groups), reason: ReasonInvalidRules,
				message: "Prometheus refuses the rule file: " + oneLine(err.Error())})
			continue
		}
		ri := rerr.Rule - 1
		rd := doc.Groups[gi].Rules[ri]
		// The inner error, without the line and column in the generated file: they mean
		// nothing to the author of the PrometheusRule.
		msg := err.Error()
		if inner := errors.Unwrap(&rerr.Err); inner != nil {
			msg = inner.Error()
		}
		problems = append(problems, problem{group: gi, rule: ri, reason: ReasonInvalidRules,
			message: ruleName(rerr.Group, gi, ri, rd.Alert, rd.Record) + ": " + oneLine(msg)})
	}
	// The parser walks label and annotation maps, so its errors come in random order.
	sort.Slice(problems, func(i, j int) bool { return problems[i].message < problems[j].message })
	return problems
}

// enforces says whether the Prometheus's enforcedNamespaceLabel applies to pr.
func (r *renderer) enforces(pr *monitoringv1.PrometheusRule) bool {
	if r.enforcedLabel == "" {
		return false
	}
	for _, ref := range r.excluded {
		group := ref.Group
		if group == "" {
			group = monitoringv1.SchemeGroupVersion.Group
		}
		if group == monitoringv1.SchemeGroupVersion.Group &&
			ref.Resource == monitoringv1.PrometheusRuleName &&
			ref.Namespace == pr.Namespace &&
			(ref.Name == "" || ref.Name == pr.Name) {
			return false
		}
	}
	for _, ex := range r.excludedRules {
		if ex.RuleNamespace == pr.Namespace && ex.RuleName == pr.Name {
			return false
		}
	}
	return true
}

// duration checks a duration as Prometheus parses it and returns it as written, so the file
// reads like the PrometheusRule. Unset and empty both mean "not set".
func duration(d *monitoringv1.Duration) (string, error) {
	if d == nil || *d == "" {
		return "", nil
	}
	if _, err := model.ParseDuration(string(*d)); err != nil {
		return "", err
	}
	return string(*d), nil
}

// groupName names a group in messages: by its name, or by its position (from 1) when it has none.
func groupName(gi int, name string) string {
	if name == "" {
		return fmt.Sprintf("group %d", gi+1)
	}
	return fmt.Sprintf("group %q", name)
}

// ruleName names a rule in messages the way Prometheus counts: groups by name, rules from 1.
func ruleName(group string, gi, ri int, alert, record string) string {
	var what string
	switch {
	case alert != "":
		what = "alert " + alert
	case record != "":
		what = "record " + record
	default:
		what = "neither alert nor record set"
	}
	return fmt.Sprintf("%s, rule %d (%s)", groupName(gi, group), ri+1, what)
}

// marshal writes the document with two-space indentation and no line folding.
func marshal(doc *fileDocument) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

var discardLogger = slog.New(slog.DiscardHandler)

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
