package scrape

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
)

// RelabelActions are the actions Prometheus accepts, spelled as it writes them. The CRD also
// allows CamelCase spellings; they are lowercased before the lookup. The admission webhook
// checks against the same list.
var RelabelActions = []relabel.Action{
	relabel.Replace, relabel.Keep, relabel.Drop, relabel.KeepEqual, relabel.DropEqual,
	relabel.HashMod, relabel.LabelMap, relabel.LabelDrop, relabel.LabelKeep,
	relabel.Lowercase, relabel.Uppercase,
}

func knownAction(a string) bool {
	for _, known := range RelabelActions {
		if a == string(known) {
			return true
		}
	}
	return false
}

func actionList() string {
	names := make([]string, len(RelabelActions))
	for i, a := range RelabelActions {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

// userRelabelings converts relabel configs written in a CR, validating each the way
// Prometheus will, so that the message can name the exact rule and field.
func (g *generator) userRelabelings(field string, in []monitoringv1.RelabelConfig) ([]*relabelRule, *rejection) {
	out := make([]*relabelRule, 0, len(in))
	for i := range in {
		r, rej := g.userRelabeling(fmt.Sprintf("%s[%d]", field, i), &in[i])
		if rej != nil {
			return nil, rej
		}
		out = append(out, r)
	}
	return out, nil
}

func (g *generator) userRelabeling(field string, rc *monitoringv1.RelabelConfig) (*relabelRule, *rejection) {
	action := strings.ToLower(rc.Action)
	if action == "" {
		action = string(relabel.Replace)
	}
	if !knownAction(action) {
		return nil, reject(ReasonUnknownRelabelAction, "%s.action: unknown relabel action %q (valid: %s)", field, rc.Action, actionList())
	}

	// cfg is what Prometheus will hold after loading the rule written below.
	cfg := relabel.DefaultRelabelConfig
	cfg.Action = relabel.Action(action)
	r := &relabelRule{Action: action, TargetLabel: rc.TargetLabel}
	cfg.TargetLabel = rc.TargetLabel

	if len(rc.SourceLabels) > 0 {
		r.SourceLabels = make([]string, len(rc.SourceLabels))
		cfg.SourceLabels = make(model.LabelNames, len(rc.SourceLabels))
		for j, l := range rc.SourceLabels {
			// Source labels are parsed with the process-wide scheme, which Prometheus pins to UTF-8.
			if !model.UTF8Validation.IsValidLabelName(string(l)) {
				return nil, reject(ReasonInvalidRelabelConfig, "%s.sourceLabels[%d]: %q is not a valid label name", field, j, string(l))
			}
			r.SourceLabels[j] = string(l)
			cfg.SourceLabels[j] = model.LabelName(l)
		}
	}
	if rc.Separator != nil {
		r.Separator = ptr(*rc.Separator)
		cfg.Separator = *rc.Separator
	}
	if rc.Regex != "" {
		re, err := relabel.NewRegexp(rc.Regex)
		if err != nil {
			return nil, reject(ReasonInvalidRegex, "%s.regex: %s", field, regexError(rc.Regex, err))
		}
		r.Regex = ptr(rc.Regex)
		cfg.Regex = re
	}
	if rc.Modulus < 0 {
		return nil, reject(ReasonInvalidRelabelConfig, "%s.modulus: must not be negative, got %d", field, rc.Modulus)
	}
	r.Modulus = uint64(rc.Modulus)
	cfg.Modulus = uint64(rc.Modulus)
	if rc.Replacement != nil {
		r.Replacement = ptr(*rc.Replacement)
		cfg.Replacement = *rc.Replacement
	}
	if err := cfg.Validate(g.nameScheme); err != nil {
		return nil, reject(ReasonInvalidRelabelConfig, "%s: %v", field, err)
	}
	return r, nil
}

// RegexCause returns the error of a regex Prometheus cannot compile as the user can act on it:
// Prometheus compiles the expression wrapped in an anchored group, so its own error may point
// at the wrapper rather than at what was written.
func RegexCause(expr string, err error) error {
	if _, rawErr := regexp.Compile(expr); rawErr != nil {
		return rawErr
	}
	return err
}

// regexError describes a regex Prometheus cannot compile.
func regexError(expr string, err error) string {
	err = RegexCause(expr, err)
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("error parsing regexp: %s: %q", se.Code, se.Expr)
	}
	return err.Error()
}

// PortPattern checks a monitor's port name (ServiceMonitor endpoints[].port, PodMonitor port
// and a named targetPort): the existing operator writes it as the regex of the port's keep
// rule, so a pattern such as "http|metrics" selects several ports. It must compile as the
// regex Prometheus makes of it. The admission webhook checks the same.
func PortPattern(port string) error {
	if _, err := relabel.NewRegexp(port); err != nil {
		return fmt.Errorf("not a valid port name pattern (a regular expression, as the existing operator uses it): %s", regexError(port, err))
	}
	return nil
}

// Constructors for the rules the generator writes itself.

func copyRule(source, target string) *relabelRule {
	return &relabelRule{SourceLabels: []string{source}, TargetLabel: target}
}

func setRule(target, value string) *relabelRule {
	return &relabelRule{TargetLabel: target, Replacement: ptr(value)}
}

func keepRule(regex string, sources ...string) *relabelRule {
	return &relabelRule{SourceLabels: sources, Regex: ptr(regex), Action: string(relabel.Keep)}
}

func dropRule(regex string, sources ...string) *relabelRule {
	return &relabelRule{SourceLabels: sources, Regex: ptr(regex), Action: string(relabel.Drop)}
}

// copyNonEmptyRule copies source to target only when source has a value, so that an absent
// label does not overwrite what an earlier rule wrote.
func copyNonEmptyRule(source, target string) *relabelRule {
	return &relabelRule{SourceLabels: []string{source}, TargetLabel: target, Regex: ptr("(.+)"), Replacement: ptr("${1}")}
}

// shardingRules keep only the targets whose source label (the address, or for Probes the
// probed target, since every Probe target has the prober's address) hashes to this shard. A
// target keeps a __tmp_hash set by an earlier rule, and one with __tmp_disable_sharding set is
// scraped by every shard.
func shardingRules(shards uint64, source string) []*relabelRule {
	return []*relabelRule{
		{
			SourceLabels: []string{source, "__tmp_hash"},
			TargetLabel:  "__tmp_hash",
			Regex:        ptr("(.+);"),
			Replacement:  ptr("${1}"),
			Action:       string(relabel.Replace),
		},
		{
			SourceLabels: []string{"__tmp_hash"},
			TargetLabel:  "__tmp_hash",
			Modulus:      shards,
			Action:       string(relabel.HashMod),
		},
		keepRule(shardPlaceholder+";|.+;.+", "__tmp_hash", "__tmp_disable_sharding"),
	}
}

// hasHashmod reports whether rules shard the targets themselves.
func hasHashmod(rules []*relabelRule) bool {
	for _, r := range rules {
		if strings.EqualFold(r.Action, string(relabel.HashMod)) {
			return true
		}
	}
	return false
}
