package amconfig

import (
	"fmt"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/alertmanager/matcher/compat"
	"github.com/prometheus/alertmanager/pkg/labels"
	"github.com/prometheus/common/model"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// route is one entry of Alertmanager's routing tree; field order is the order written.
type route struct {
	Receiver string   `yaml:"receiver,omitempty"`
	GroupBy  []string `yaml:"group_by,omitempty"`
	Matchers []string `yaml:"matchers,omitempty"`
	// Match and MatchRE replace Matchers for Alertmanagers before v0.22.
	Match               map[string]string `yaml:"match,omitempty"`
	MatchRE             map[string]string `yaml:"match_re,omitempty"`
	Continue            bool              `yaml:"continue,omitempty"`
	GroupWait           string            `yaml:"group_wait,omitempty"`
	GroupInterval       string            `yaml:"group_interval,omitempty"`
	RepeatInterval      string            `yaml:"repeat_interval,omitempty"`
	MuteTimeIntervals   []string          `yaml:"mute_time_intervals,omitempty"`
	ActiveTimeIntervals []string          `yaml:"active_time_intervals,omitempty"`
	Routes              []*route          `yaml:"routes,omitempty"`
}

type inhibitRule struct {
	SourceMatchers []string `yaml:"source_matchers,omitempty"`
	TargetMatchers []string `yaml:"target_matchers,omitempty"`
	// The maps replace the matchers for Alertmanagers before v0.22.
	SourceMatch   map[string]string `yaml:"source_match,omitempty"`
	SourceMatchRE map[string]string `yaml:"source_match_re,omitempty"`
	TargetMatch   map[string]string `yaml:"target_match,omitempty"`
	TargetMatchRE map[string]string `yaml:"target_match_re,omitempty"`
	Equal         []string          `yaml:"equal,omitempty"`
}

// sinceMatchers is the release that reads matchers, source_matchers and target_matchers
// (and mute_time_intervals); before it, equality and regex matchers are written as the
// match and match_re maps, as the existing operator does.
var sinceMatchers = workload.Version{Minor: 22}

// toV1Matchers rewrites p's matchers for an Alertmanager before v0.22; a negative matcher
// has no such form and is refused.
func toV1Matchers(p *piece) error {
	if len(p.timeIntervals) > 0 {
		return reject(ReasonUnsupportedVersion, "spec.muteTimeIntervals: requires Alertmanager v0.22.0 or later")
	}
	var walk func(r *route) error
	walk = func(r *route) error {
		var err error
		if r.Match, r.MatchRE, err = v1Maps(r.Matchers); err != nil {
			return err
		}
		r.Matchers = nil
		if len(r.MuteTimeIntervals) > 0 || len(r.ActiveTimeIntervals) > 0 {
			return reject(ReasonUnsupportedVersion, "time intervals on routes require Alertmanager v0.22.0 or later")
		}
		for _, c := range r.Routes {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if p.route != nil {
		if err := walk(p.route); err != nil {
			return err
		}
	}
	for _, ir := range p.inhibitRules {
		var err error
		if ir.SourceMatch, ir.SourceMatchRE, err = v1Maps(ir.SourceMatchers); err != nil {
			return err
		}
		if ir.TargetMatch, ir.TargetMatchRE, err = v1Maps(ir.TargetMatchers); err != nil {
			return err
		}
		ir.SourceMatchers, ir.TargetMatchers = nil, nil
	}
	return nil
}

func v1Maps(matchers []string) (match, matchRE map[string]string, err error) {
	for _, s := range matchers {
		m, err := labels.ParseMatcher(s)
		if err != nil {
			return nil, nil, err
		}
		var dst *map[string]string
		switch m.Type {
		case labels.MatchEqual:
			dst = &match
		case labels.MatchRegexp:
			dst = &matchRE
		default:
			return nil, nil, reject(ReasonUnsupportedVersion, "the matcher %s: negative matchers require Alertmanager v0.22.0 or later", s)
		}
		if *dst == nil {
			*dst = map[string]string{}
		}
		if _, dup := (*dst)[m.Name]; dup {
			return nil, nil, reject(ReasonUnsupportedVersion, "the matcher %s: two matchers on one label require Alertmanager v0.22.0 or later", s)
		}
		(*dst)[m.Name] = m.Value
	}
	return match, matchRE, nil
}

type timeInterval struct {
	Name          string        `yaml:"name"`
	TimeIntervals []timePeriods `yaml:"time_intervals"`
}

type timePeriods struct {
	Times       []timeRange `yaml:"times,omitempty"`
	Weekdays    []string    `yaml:"weekdays,flow,omitempty"`
	DaysOfMonth []string    `yaml:"days_of_month,flow,omitempty"`
	Months      []string    `yaml:"months,flow,omitempty"`
	Years       []string    `yaml:"years,flow,omitempty"`
}

type timeRange struct {
	StartTime string `yaml:"start_time"`
	EndTime   string `yaml:"end_time"`
}

// maxRouteDepth bounds the recursion through child routes (each level is a JSON document
// in the API object, so the depth is the user's to choose).
const maxRouteDepth = 64

// convertRoute converts r and its children; receiver and time interval names are those
// of the AlertmanagerConfig, prefixed in the output.
func convertRoute(field string, r *monitoringv1alpha1.Route, prefix string, receivers, intervals map[string]bool, depth int) (*route, error) {
	if depth > maxRouteDepth {
		return nil, reject(ReasonInvalidRoute, "%s: routes are nested more than %d levels deep", field, maxRouteDepth)
	}
	out := &route{GroupBy: r.GroupBy, Continue: r.Continue}
	if r.Receiver != "" {
		if !receivers[r.Receiver] {
			return nil, reject(ReasonUnknownReceiver, "%s.receiver: receiver %q is not defined in spec.receivers (%s)", field, r.Receiver, nameList(receivers))
		}
		out.Receiver = prefix + r.Receiver
	}
	var err error
	if out.GroupWait, err = duration(field+".groupWait", r.GroupWait); err != nil {
		return nil, err
	}
	if out.GroupInterval, err = duration(field+".groupInterval", r.GroupInterval); err != nil {
		return nil, err
	}
	if out.RepeatInterval, err = duration(field+".repeatInterval", r.RepeatInterval); err != nil {
		return nil, err
	}
	if out.Matchers, err = convertMatchers(field+".matchers", r.Matchers); err != nil {
		return nil, err
	}
	for i, name := range r.MuteTimeIntervals {
		if !intervals[name] {
			return nil, reject(ReasonUnknownTimeInterval, "%s.muteTimeIntervals[%d]: time interval %q is not defined in spec.muteTimeIntervals (%s)", field, i, name, nameList(intervals))
		}
		out.MuteTimeIntervals = append(out.MuteTimeIntervals, prefix+name)
	}
	for i, name := range r.ActiveTimeIntervals {
		if !intervals[name] {
			return nil, reject(ReasonUnknownTimeInterval, "%s.activeTimeIntervals[%d]: time interval %q is not defined in spec.muteTimeIntervals (%s)", field, i, name, nameList(intervals))
		}
		out.ActiveTimeIntervals = append(out.ActiveTimeIntervals, prefix+name)
	}
	children, err := r.ChildRoutes()
	if err != nil {
		return nil, reject(ReasonInvalidRoute, "%s.routes: %v", field, err)
	}
	for i := range children {
		child, err := convertRoute(fmt.Sprintf("%s.routes[%d]", field, i), &children[i], prefix, receivers, intervals, depth+1)
		if err != nil {
			return nil, err
		}
		out.Routes = append(out.Routes, child)
	}
	return out, nil
}

func duration(field string, d *monitoringv1.NonEmptyDuration) (string, error) {
	if d == nil {
		return "", nil
	}
	if _, err := model.ParseDuration(string(*d)); err != nil {
		return "", reject(ReasonInvalidRoute, "%s: %q is not a duration: %v", field, string(*d), err)
	}
	return string(*d), nil
}

// convertMatchers writes matchers in Alertmanager's matcher syntax, checked by its parser.
func convertMatchers(field string, ms []monitoringv1alpha1.Matcher) ([]string, error) {
	var out []string
	for i, m := range ms {
		f := fmt.Sprintf("%s[%d]", field, i)
		if strings.TrimSpace(m.Name) == "" {
			return nil, reject(ReasonInvalidMatcher, "%s.name: must be set", f)
		}
		mt := m.MatchType
		if mt == "" {
			// The deprecated regex flag applies only without a matchType.
			mt = monitoringv1alpha1.MatchEqual
			if m.Regex {
				mt = monitoringv1alpha1.MatchRegexp
			}
		}
		var t labels.MatchType
		switch mt {
		case monitoringv1alpha1.MatchEqual:
			t = labels.MatchEqual
		case monitoringv1alpha1.MatchNotEqual:
			t = labels.MatchNotEqual
		case monitoringv1alpha1.MatchRegexp:
			t = labels.MatchRegexp
		case monitoringv1alpha1.MatchNotRegexp:
			t = labels.MatchNotRegexp
		default:
			return nil, reject(ReasonInvalidMatcher, "%s.matchType: %q is not one of =, !=, =~, !~", f, string(mt))
		}
		lm, err := labels.NewMatcher(t, m.Name, m.Value)
		if err != nil {
			return nil, reject(ReasonInvalidMatcher, "%s: %v", f, err)
		}
		// The config is parsed with Alertmanager's configured matcher syntax, which may
		// not accept every label name the label package does.
		if _, err := compat.Matcher(lm.String(), "config"); err != nil {
			return nil, reject(ReasonInvalidMatcher, "%s: Alertmanager does not accept the matcher %s: %v", f, lm.String(), err)
		}
		out = append(out, lm.String())
	}
	return out, nil
}

func namespaceMatcher(ns string) string {
	return "namespace=" + strconv.Quote(ns)
}

// convertTimeInterval converts one named time interval, checked by the API types' own
// validation (Alertmanager's parser checks it again when the whole config loads).
func convertTimeInterval(field, name string, mti monitoringv1alpha1.MuteTimeInterval) (*timeInterval, error) {
	if err := mti.Validate(); err != nil {
		return nil, reject(ReasonInvalidTimeInterval, "%s: %v", field, err)
	}
	out := &timeInterval{Name: name}
	for _, ti := range mti.TimeIntervals {
		var p timePeriods
		for _, t := range ti.Times {
			p.Times = append(p.Times, timeRange{StartTime: string(t.StartTime), EndTime: string(t.EndTime)})
		}
		for _, w := range ti.Weekdays {
			p.Weekdays = append(p.Weekdays, string(w))
		}
		for _, d := range ti.DaysOfMonth {
			if d.End == 0 || d.End == d.Start {
				p.DaysOfMonth = append(p.DaysOfMonth, strconv.Itoa(d.Start))
			} else {
				p.DaysOfMonth = append(p.DaysOfMonth, fmt.Sprintf("%d:%d", d.Start, d.End))
			}
		}
		for _, m := range ti.Months {
			p.Months = append(p.Months, string(m))
		}
		for _, y := range ti.Years {
			p.Years = append(p.Years, string(y))
		}
		out.TimeIntervals = append(out.TimeIntervals, p)
	}
	return out, nil
}
