package webhook

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	monitoringv1beta1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The two AlertmanagerConfig versions differ in details (muteTimeIntervals
// became timeIntervals, the deprecated matcher regex flag went away); the
// checks run on this common shape, with the field names of each version.

type amSpec struct {
	route         *amRoute
	receivers     []string
	inhibitRules  []amInhibitRule
	intervals     []string
	intervalsPath *field.Path
	// decodeRoute reads a child route (stored as raw JSON to allow nesting).
	decodeRoute func([]byte) (*amRoute, error)
}

type amRoute struct {
	receiver                                 string
	groupWait, groupInterval, repeatInterval *monitoringv1.NonEmptyDuration
	matchers                                 []amMatcher
	muteTimeIntervals, activeTimeIntervals   []string
	routes                                   []apiextensionsv1.JSON
}

type amMatcher struct {
	name, value string
	matchType   string
	regex       bool // deprecated v1alpha1 flag, used when matchType is empty
}

type amInhibitRule struct {
	sourceMatch, targetMatch []amMatcher
}

// maxRouteDepth bounds the recursion through child routes.
const maxRouteDepth = 64

// ValidateAlertmanagerConfig checks a v1alpha1 AlertmanagerConfig: receiver
// names unique, every route names a defined receiver and defined time
// intervals, matchers and durations valid, receiver settings consistent,
// Secret references complete.
func ValidateAlertmanagerConfig(c *monitoringv1alpha1.AlertmanagerConfig) field.ErrorList {
	sp := field.NewPath("spec")
	s := amSpec{intervalsPath: sp.Child("muteTimeIntervals"), decodeRoute: decodeV1alpha1Route}
	if c.Spec.Route != nil {
		s.route = fromV1alpha1Route(c.Spec.Route)
	}
	for _, r := range c.Spec.Receivers {
		s.receivers = append(s.receivers, r.Name)
	}
	for _, ir := range c.Spec.InhibitRules {
		s.inhibitRules = append(s.inhibitRules, amInhibitRule{sourceMatch: fromV1alpha1Matchers(ir.SourceMatch), targetMatch: fromV1alpha1Matchers(ir.TargetMatch)})
	}
	var errs field.ErrorList
	for i, ti := range c.Spec.MuteTimeIntervals {
		s.intervals = append(s.intervals, ti.Name)
		if err := ti.Validate(); err != nil {
			errs = append(errs, field.Invalid(s.intervalsPath.Index(i), ti.Name, err.Error()))
		}
	}
	errs = append(errs, validateAMSpec(sp, &s)...)
	for i := range c.Spec.Receivers {
		errs = append(errs, validateReceiverSettings(sp.Child("receivers").Index(i), &c.Spec.Receivers[i])...)
		for j, w := range c.Spec.Receivers[i].WebhookConfigs {
			if (w.URL == nil || *w.URL == "") && w.URLSecret == nil {
				errs = append(errs, field.Required(sp.Child("receivers").Index(i).Child("webhookConfigs").Index(j).Child("url"), "one of url or urlSecret"))
			}
		}
	}
	errs = append(errs, validateKeySelectors(sp, &c.Spec)...)
	return errs
}

// ValidateAlertmanagerConfigV1beta1 is ValidateAlertmanagerConfig for v1beta1.
func ValidateAlertmanagerConfigV1beta1(c *monitoringv1beta1.AlertmanagerConfig) field.ErrorList {
	sp := field.NewPath("spec")
	s := amSpec{intervalsPath: sp.Child("timeIntervals"), decodeRoute: decodeV1beta1Route}
	if c.Spec.Route != nil {
		s.route = fromV1beta1Route(c.Spec.Route)
	}
	for _, r := range c.Spec.Receivers {
		s.receivers = append(s.receivers, r.Name)
	}
	for _, ir := range c.Spec.InhibitRules {
		s.inhibitRules = append(s.inhibitRules, amInhibitRule{sourceMatch: fromV1beta1Matchers(ir.SourceMatch), targetMatch: fromV1beta1Matchers(ir.TargetMatch)})
	}
	var errs field.ErrorList
	for i, ti := range c.Spec.TimeIntervals {
		s.intervals = append(s.intervals, ti.Name)
		if err := ti.Validate(); err != nil {
			errs = append(errs, field.Invalid(s.intervalsPath.Index(i), ti.Name, err.Error()))
		}
	}
	errs = append(errs, validateAMSpec(sp, &s)...)
	for i := range c.Spec.Receivers {
		errs = append(errs, validateReceiverSettings(sp.Child("receivers").Index(i), &c.Spec.Receivers[i])...)
		for j, w := range c.Spec.Receivers[i].WebhookConfigs {
			if (w.URL == nil || *w.URL == "") && w.URLSecret == nil {
				errs = append(errs, field.Required(sp.Child("receivers").Index(i).Child("webhookConfigs").Index(j).Child("url"), "one of url or urlSecret"))
			}
		}
	}
	errs = append(errs, validateKeySelectors(sp, &c.Spec)...)
	return errs
}

func alertmanagerConfigWarnings(c *monitoringv1alpha1.AlertmanagerConfig) []string {
	var w []string
	if r := c.Spec.Route; r != nil {
		for i, m := range r.Matchers {
			if m.Regex && m.MatchType == "" {
				w = append(w, fmt.Sprintf("spec.route.matchers[%d].regex is deprecated: use matchType: =~", i))
			}
		}
	}
	return w
}

func validateAMSpec(sp *field.Path, s *amSpec) field.ErrorList {
	var errs field.ErrorList
	rp := sp.Child("receivers")
	seen := map[string]bool{}
	for i, name := range s.receivers {
		switch {
		case name == "":
			errs = append(errs, field.Required(rp.Index(i).Child("name"), "a receiver needs a name"))
		case seen[name]:
			errs = append(errs, field.Duplicate(rp.Index(i).Child("name"), name))
		}
		seen[name] = true
	}
	seenIntervals := map[string]bool{}
	for i, name := range s.intervals {
		if name != "" && seenIntervals[name] {
			errs = append(errs, field.Duplicate(s.intervalsPath.Index(i).Child("name"), name))
		}
		seenIntervals[name] = true
	}
	if s.route != nil {
		if s.route.receiver == "" {
			errs = append(errs, field.Required(sp.Child("route", "receiver"), "the top-level route needs a receiver"))
		}
		errs = append(errs, validateAMRoute(sp.Child("route"), s.route, s, seen, seenIntervals, 0)...)
	}
	for i, ir := range s.inhibitRules {
		p := sp.Child("inhibitRules").Index(i)
		errs = append(errs, validateAMMatchers(p.Child("sourceMatch"), ir.sourceMatch)...)
		errs = append(errs, validateAMMatchers(p.Child("targetMatch"), ir.targetMatch)...)
	}
	return errs
}

func validateAMRoute(p *field.Path, r *amRoute, s *amSpec, receivers, intervals map[string]bool, depth int) field.ErrorList {
	var errs field.ErrorList
	if depth > maxRouteDepth {
		return field.ErrorList{field.TooMany(p.Child("routes"), depth, maxRouteDepth)}
	}
	if r.receiver != "" && !receivers[r.receiver] {
		errs = append(errs, field.NotFound(p.Child("receiver"), r.receiver))
		errs[len(errs)-1].Detail = "no receiver of this name in spec.receivers" + definedNames(receivers)
	}
	for name, d := range map[string]*monitoringv1.NonEmptyDuration{"groupWait": r.groupWait, "groupInterval": r.groupInterval, "repeatInterval": r.repeatInterval} {
		if d != nil {
			errs = append(errs, validateDuration(p.Child(name), string(*d))...)
		}
	}
	errs = append(errs, validateAMMatchers(p.Child("matchers"), r.matchers)...)
	for fieldName, names := range map[string][]string{"muteTimeIntervals": r.muteTimeIntervals, "activeTimeIntervals": r.activeTimeIntervals} {
		for i, n := range names {
			if !intervals[n] {
				errs = append(errs, field.NotFound(p.Child(fieldName).Index(i), n))
				errs[len(errs)-1].Detail = "no time interval of this name in " + s.intervalsPath.String() + definedNames(intervals)
			}
		}
	}
	for i, raw := range r.routes {
		cp := p.Child("routes").Index(i)
		child, err := s.decodeRoute(raw.Raw)
		if err != nil {
			errs = append(errs, invalid(cp, "not a route: "+err.Error()))
			continue
		}
		errs = append(errs, validateAMRoute(cp, child, s, receivers, intervals, depth+1)...)
	}
	sortErrors(errs)
	return errs
}

// definedNames lists what could have been meant.
func definedNames(names map[string]bool) string {
	list := sortedKeys(names)
	list = slices.DeleteFunc(list, func(s string) bool { return s == "" })
	if len(list) == 0 {
		return " (none are defined)"
	}
	return " (defined: " + strings.Join(list, ", ") + ")"
}

// sortErrors orders the errors of one route by field for a stable message;
// the durations and intervals come from map iteration.
func sortErrors(errs field.ErrorList) {
	slices.SortStableFunc(errs, func(a, b *field.Error) int { return strings.Compare(a.Field, b.Field) })
}

var matchTypes = []string{"=", "!=", "=~", "!~"}

func validateAMMatchers(p *field.Path, ms []amMatcher) field.ErrorList {
	var errs field.ErrorList
	for i, m := range ms {
		mp := p.Index(i)
		if m.name == "" {
			errs = append(errs, field.Required(mp.Child("name"), "the label to match"))
		}
		mt := m.matchType
		if mt == "" {
			mt = "="
			if m.regex {
				mt = "=~"
			}
		} else if !slices.Contains(matchTypes, mt) {
			errs = append(errs, field.NotSupported(mp.Child("matchType"), mt, matchTypes))
			continue
		}
		if mt == "=~" || mt == "!~" {
			// Alertmanager anchors matcher regexes.
			if _, err := regexp.Compile("^(?:" + m.value + ")$"); err != nil {
				errs = append(errs, field.Invalid(mp.Child("value"), m.value, regexError(m.value, err)))
			}
		}
	}
	return errs
}

// validateReceiverSettings runs the API types' own consistency checks
// (Slack actions, OpsGenie responders, HTTP client settings, ...) on every
// receiver integration. A value whose Validate ran is not searched further:
// its Validate covers what it holds.
func validateReceiverSettings(p *field.Path, receiver any) field.ErrorList {
	var errs field.ErrorList
	walkValidators(p, receiver, 0, &errs)
	return errs
}

type validator interface{ Validate() error }

func walkValidators(p *field.Path, v any, depth int, errs *field.ErrorList) {
	if depth > maxRefDepth || v == nil {
		return
	}
	if val, ok := v.(validator); ok && depth > 0 {
		if err := val.Validate(); err != nil {
			*errs = append(*errs, invalid(p, err.Error()))
		}
		return
	}
	forEachChild(p, v, func(cp *field.Path, child any) { walkValidators(cp, child, depth+1, errs) })
}

// Converters to the common shape.

func fromV1alpha1Route(r *monitoringv1alpha1.Route) *amRoute {
	return &amRoute{
		receiver: r.Receiver, groupWait: r.GroupWait, groupInterval: r.GroupInterval, repeatInterval: r.RepeatInterval,
		matchers: fromV1alpha1Matchers(r.Matchers), muteTimeIntervals: r.MuteTimeIntervals, activeTimeIntervals: r.ActiveTimeIntervals,
		routes: r.Routes,
	}
}

func fromV1alpha1Matchers(ms []monitoringv1alpha1.Matcher) []amMatcher {
	out := make([]amMatcher, len(ms))
	for i, m := range ms {
		out[i] = amMatcher{name: m.Name, value: m.Value, matchType: string(m.MatchType), regex: m.Regex}
	}
	return out
}

func decodeV1alpha1Route(raw []byte) (*amRoute, error) {
	var r monitoringv1alpha1.Route
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return fromV1alpha1Route(&r), nil
}

func fromV1beta1Route(r *monitoringv1beta1.Route) *amRoute {
	return &amRoute{
		receiver: r.Receiver, groupWait: r.GroupWait, groupInterval: r.GroupInterval, repeatInterval: r.RepeatInterval,
		matchers: fromV1beta1Matchers(r.Matchers), muteTimeIntervals: r.MuteTimeIntervals, activeTimeIntervals: r.ActiveTimeIntervals,
		routes: r.Routes,
	}
}

func fromV1beta1Matchers(ms []monitoringv1beta1.Matcher) []amMatcher {
	out := make([]amMatcher, len(ms))
	for i, m := range ms {
		out[i] = amMatcher{name: m.Name, value: m.Value, matchType: string(m.MatchType)}
	}
	return out
}

func decodeV1beta1Route(raw []byte) (*amRoute, error) {
	var r monitoringv1beta1.Route
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return fromV1beta1Route(&r), nil
}
