package webhook

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/units"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lookout-operator/lookout/internal/render/scrape"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateServiceMonitor checks a ServiceMonitor the way the controller
// will when it renders the scrape jobs: selectors, every endpoint's port,
// durations, relabelings, HTTP client settings and Secret references.
func ValidateServiceMonitor(sm *monitoringv1.ServiceMonitor) field.ErrorList {
	spec := &sm.Spec
	sp := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, validateLabelSelector(sp.Child("selector"), &spec.Selector)...)
	errs = append(errs, validateNamespaceSelector(sp.Child("namespaceSelector"), &spec.NamespaceSelector)...)
	errs = append(errs, validateLabelNameList(sp.Child("targetLabels"), spec.TargetLabels)...)
	errs = append(errs, validateLabelNameList(sp.Child("podTargetLabels"), spec.PodTargetLabels)...)
	errs = append(errs, validateLimits(sp, map[string]*int64{
		"sampleLimit": spec.SampleLimit, "targetLimit": spec.TargetLimit, "labelLimit": spec.LabelLimit,
		"labelNameLengthLimit": spec.LabelNameLengthLimit, "labelValueLengthLimit": spec.LabelValueLengthLimit,
		"keepDroppedTargets": spec.KeepDroppedTargets, "nativeHistogramBucketLimit": spec.NativeHistogramBucketLimit,
	})...)
	errs = append(errs, validateScrapeProtocols(sp, spec.ScrapeProtocols, spec.FallbackScrapeProtocol)...)
	errs = append(errs, validateBodySizeLimit(sp.Child("bodySizeLimit"), spec.BodySizeLimit)...)
	for i := range spec.Endpoints {
		ep := &spec.Endpoints[i]
		p := sp.Child("endpoints").Index(i)
		switch {
		case ep.Port != "":
			errs = append(errs, validatePortPattern(p.Child("port"), ep.Port)...)
		case ep.TargetPort != nil:
			errs = append(errs, validateTargetPort(p.Child("targetPort"), *ep.TargetPort)...)
		}
		errs = append(errs, validateIntervalAndTimeout(p, string(ep.Interval), string(ep.ScrapeTimeout), "interval")...)
		errs = append(errs, validateRelabelConfigs(p.Child("relabelings"), ep.RelabelConfigs)...)
		errs = append(errs, validateRelabelConfigs(p.Child("metricRelabelings"), ep.MetricRelabelConfigs)...)
		if err := ep.HTTPConfigWithProxyAndTLSFiles.Validate(); err != nil {
			errs = append(errs, invalid(p, err.Error()))
		}
	}
	errs = append(errs, validateKeySelectors(sp, spec)...)
	return errs
}

func serviceMonitorWarnings(sm *monitoringv1.ServiceMonitor) []string {
	var w []string
	for i, ep := range sm.Spec.Endpoints {
		if ep.BearerTokenFile != "" {
			w = append(w, fmt.Sprintf("spec.endpoints[%d].bearerTokenFile is deprecated: use authorization", i))
		}
	}
	return w
}

// ValidatePodMonitor checks a PodMonitor like ValidateServiceMonitor; an
// endpoint without a port scrapes every declared container port.
func ValidatePodMonitor(pm *monitoringv1.PodMonitor) field.ErrorList {
	spec := &pm.Spec
	sp := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, validateLabelSelector(sp.Child("selector"), &spec.Selector)...)
	errs = append(errs, validateNamespaceSelector(sp.Child("namespaceSelector"), &spec.NamespaceSelector)...)
	errs = append(errs, validateLabelNameList(sp.Child("podTargetLabels"), spec.PodTargetLabels)...)
	errs = append(errs, validateLimits(sp, map[string]*int64{
		"sampleLimit": spec.SampleLimit, "targetLimit": spec.TargetLimit, "labelLimit": spec.LabelLimit,
		"labelNameLengthLimit": spec.LabelNameLengthLimit, "labelValueLengthLimit": spec.LabelValueLengthLimit,
		"keepDroppedTargets": spec.KeepDroppedTargets, "nativeHistogramBucketLimit": spec.NativeHistogramBucketLimit,
	})...)
	errs = append(errs, validateScrapeProtocols(sp, spec.ScrapeProtocols, spec.FallbackScrapeProtocol)...)
	errs = append(errs, validateBodySizeLimit(sp.Child("bodySizeLimit"), spec.BodySizeLimit)...)
	for i := range spec.PodMetricsEndpoints {
		ep := &spec.PodMetricsEndpoints[i]
		p := sp.Child("podMetricsEndpoints").Index(i)
		if ep.Port != nil {
			errs = append(errs, validatePortPattern(p.Child("port"), *ep.Port)...)
		}
		if ep.PortNumber != nil {
			if msgs := validation.IsValidPortNum(int(*ep.PortNumber)); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("portNumber"), *ep.PortNumber, strings.Join(msgs, "; ")))
			}
		}
		if ep.TargetPort != nil {
			errs = append(errs, validateTargetPort(p.Child("targetPort"), *ep.TargetPort)...)
		}
		errs = append(errs, validateIntervalAndTimeout(p, string(ep.Interval), string(ep.ScrapeTimeout), "interval")...)
		errs = append(errs, validateRelabelConfigs(p.Child("relabelings"), ep.RelabelConfigs)...)
		errs = append(errs, validateRelabelConfigs(p.Child("metricRelabelings"), ep.MetricRelabelConfigs)...)
		if err := ep.HTTPConfigWithProxy.Validate(); err != nil {
			errs = append(errs, invalid(p, err.Error()))
		}
	}
	errs = append(errs, validateKeySelectors(sp, spec)...)
	return errs
}

func podMonitorWarnings(pm *monitoringv1.PodMonitor) []string {
	var w []string
	for i, ep := range pm.Spec.PodMetricsEndpoints {
		if ep.TargetPort != nil {
			w = append(w, fmt.Sprintf("spec.podMetricsEndpoints[%d].targetPort is deprecated: use port or portNumber", i))
		}
	}
	return w
}

// ValidateProbe checks a Probe: targets, prober, durations, relabelings,
// HTTP client settings and Secret references.
func ValidateProbe(pr *monitoringv1.Probe) field.ErrorList {
	spec := &pr.Spec
	sp := field.NewPath("spec")
	var errs field.ErrorList
	tp := sp.Child("targets")
	if spec.Targets.StaticConfig == nil && spec.Targets.Ingress == nil {
		errs = append(errs, field.Required(tp, "a Probe needs targets.staticConfig or targets.ingress"))
	}
	if sc := spec.Targets.StaticConfig; sc != nil {
		p := tp.Child("staticConfig")
		for i, t := range sc.Targets {
			if strings.TrimSpace(t) == "" {
				errs = append(errs, field.Required(p.Child("static").Index(i), "an empty target"))
			}
		}
		errs = append(errs, validateRuleLabels(p.Child("labels"), sc.Labels)...)
		errs = append(errs, validateRelabelConfigs(p.Child("relabelingConfigs"), sc.RelabelConfigs)...)
	}
	if in := spec.Targets.Ingress; in != nil {
		p := tp.Child("ingress")
		errs = append(errs, validateLabelSelector(p.Child("selector"), &in.Selector)...)
		errs = append(errs, validateNamespaceSelector(p.Child("namespaceSelector"), &in.NamespaceSelector)...)
		errs = append(errs, validateRelabelConfigs(p.Child("relabelingConfigs"), in.RelabelConfigs)...)
	}
	errs = append(errs, validateIntervalAndTimeout(sp, string(spec.Interval), string(spec.ScrapeTimeout), "interval")...)
	errs = append(errs, validateRelabelConfigs(sp.Child("metricRelabelings"), spec.MetricRelabelConfigs)...)
	errs = append(errs, validateLimits(sp, map[string]*int64{
		"sampleLimit": spec.SampleLimit, "targetLimit": spec.TargetLimit, "labelLimit": spec.LabelLimit,
		"labelNameLengthLimit": spec.LabelNameLengthLimit, "labelValueLengthLimit": spec.LabelValueLengthLimit,
		"keepDroppedTargets": spec.KeepDroppedTargets, "nativeHistogramBucketLimit": spec.NativeHistogramBucketLimit,
	})...)
	errs = append(errs, validateScrapeProtocols(sp, spec.ScrapeProtocols, spec.FallbackScrapeProtocol)...)
	if err := spec.HTTPConfig.Validate(); err != nil {
		errs = append(errs, invalid(sp, err.Error()))
	}
	errs = append(errs, validateKeySelectors(sp, spec)...)
	return errs
}

// ValidateScrapeConfig checks a ScrapeConfig: static targets, durations,
// relabelings, limits, the HTTP authentication settings Prometheus allows
// only one of, and Secret references.
func ValidateScrapeConfig(sc *monitoringv1alpha1.ScrapeConfig) field.ErrorList {
	spec := &sc.Spec
	sp := field.NewPath("spec")
	var errs field.ErrorList
	for i, s := range spec.StaticConfigs {
		p := sp.Child("staticConfigs").Index(i)
		for j, t := range s.Targets {
			if strings.TrimSpace(string(t)) == "" {
				errs = append(errs, field.Required(p.Child("targets").Index(j), "an empty target"))
			}
		}
		errs = append(errs, validateRuleLabels(p.Child("labels"), s.Labels)...)
	}
	var interval, timeout string
	if spec.ScrapeInterval != nil {
		interval = string(*spec.ScrapeInterval)
	}
	if spec.ScrapeTimeout != nil {
		timeout = string(*spec.ScrapeTimeout)
	}
	errs = append(errs, validateIntervalAndTimeout(sp, interval, timeout, "scrapeInterval")...)
	errs = append(errs, validateRelabelConfigs(sp.Child("relabelings"), spec.RelabelConfigs)...)
	errs = append(errs, validateRelabelConfigs(sp.Child("metricRelabelings"), spec.MetricRelabelConfigs)...)
	errs = append(errs, validateLimits(sp, map[string]*int64{
		"sampleLimit": spec.SampleLimit, "targetLimit": spec.TargetLimit, "labelLimit": spec.LabelLimit,
		"labelNameLengthLimit": spec.LabelNameLengthLimit, "labelValueLengthLimit": spec.LabelValueLengthLimit,
		"keepDroppedTargets": spec.KeepDroppedTargets, "nativeHistogramBucketLimit": spec.NativeHistogramBucketLimit,
	})...)
	errs = append(errs, validateScrapeProtocols(sp, spec.ScrapeProtocols, spec.FallbackScrapeProtocol)...)
	errs = append(errs, validateBodySizeLimit(sp.Child("bodySizeLimit"), spec.BodySizeLimit)...)
	var auth []string
	if spec.BasicAuth != nil {
		auth = append(auth, "basicAuth")
	}
	if spec.Authorization != nil {
		auth = append(auth, "authorization")
	}
	if spec.OAuth2 != nil {
		auth = append(auth, "oauth2")
	}
	if len(auth) > 1 {
		errs = append(errs, field.Forbidden(sp.Child(auth[1]), fmt.Sprintf("at most one of basicAuth, authorization and oauth2; %s are set", strings.Join(auth, " and "))))
	}
	if err := spec.OAuth2.Validate(); err != nil {
		errs = append(errs, invalid(sp.Child("oauth2"), err.Error()))
	}
	if err := spec.TLSConfig.Validate(); err != nil {
		errs = append(errs, invalid(sp.Child("tlsConfig"), err.Error()))
	}
	errs = append(errs, validateKeySelectors(sp, spec)...)
	return errs
}

// validateDuration checks a Prometheus duration (1h30m, 15d, 0). Empty is
// unset: the CRD patterns allow it and nothing is written for it.
func validateDuration(path *field.Path, s string) field.ErrorList {
	if s == "" {
		return nil
	}
	if _, err := model.ParseDuration(s); err != nil {
		return field.ErrorList{field.Invalid(path, s, "not a Prometheus duration (like 30s, 5m, 1h30m or 2d): "+err.Error())}
	}
	return nil
}

// validateIntervalAndTimeout checks both durations and that the timeout is
// not longer than the interval, which Prometheus refuses. Without an
// interval the Prometheus's global one applies; unknown here.
func validateIntervalAndTimeout(path *field.Path, interval, timeout, intervalField string) field.ErrorList {
	var errs field.ErrorList
	var iv, tv model.Duration
	var err error
	if interval != "" {
		if iv, err = model.ParseDuration(interval); err != nil {
			errs = append(errs, validateDuration(path.Child(intervalField), interval)...)
		}
	}
	if timeout != "" {
		if tv, err = model.ParseDuration(timeout); err != nil {
			errs = append(errs, validateDuration(path.Child("scrapeTimeout"), timeout)...)
		}
	}
	if len(errs) == 0 && interval != "" && timeout != "" && iv > 0 && tv > iv {
		errs = append(errs, field.Invalid(path.Child("scrapeTimeout"), timeout,
			fmt.Sprintf("longer than the %s %s; Prometheus refuses a scrape timeout longer than the interval", intervalField, time.Duration(iv))))
	}
	return errs
}

func validateTargetPort(path *field.Path, tp intstr.IntOrString) field.ErrorList {
	if tp.Type == intstr.Int {
		if msgs := validation.IsValidPortNum(int(tp.IntVal)); len(msgs) > 0 {
			return field.ErrorList{field.Invalid(path, tp.IntVal, strings.Join(msgs, "; "))}
		}
		return nil
	}
	return validatePortPattern(path, tp.StrVal)
}

// validatePortPattern accepts a port name as the existing operator does: as the regex of the
// port's keep rule ("http|metrics" selects both ports).
func validatePortPattern(path *field.Path, port string) field.ErrorList {
	if err := scrape.PortPattern(port); err != nil {
		return field.ErrorList{field.Invalid(path, port, err.Error())}
	}
	return nil
}

func validateLabelSelector(path *field.Path, sel *metav1.LabelSelector) field.ErrorList {
	return metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
}

func validateNamespaceSelector(path *field.Path, ns *monitoringv1.NamespaceSelector) field.ErrorList {
	var errs field.ErrorList
	for i, n := range ns.MatchNames {
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path.Child("matchNames").Index(i), n, "not a namespace name: "+strings.Join(msgs, "; ")))
		}
	}
	return errs
}

func validateLabelNameList(path *field.Path, names []string) field.ErrorList {
	var errs field.ErrorList
	for i, n := range names {
		if n == "" {
			errs = append(errs, field.Required(path.Index(i), "a label name"))
		}
	}
	return errs
}

func validateLimits(path *field.Path, limits map[string]*int64) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(limits) {
		if v := limits[name]; v != nil && *v < 0 {
			errs = append(errs, field.Invalid(path.Child(name), *v, "must not be negative"))
		}
	}
	return errs
}

var scrapeProtocols = []monitoringv1.ScrapeProtocol{
	monitoringv1.PrometheusProto, monitoringv1.PrometheusText0_0_4, monitoringv1.PrometheusText1_0_0,
	monitoringv1.OpenMetricsText0_0_1, monitoringv1.OpenMetricsText1_0_0,
}

func validateScrapeProtocols(path *field.Path, protocols []monitoringv1.ScrapeProtocol, fallback *monitoringv1.ScrapeProtocol) field.ErrorList {
	var errs field.ErrorList
	supported := make([]string, len(scrapeProtocols))
	for i, p := range scrapeProtocols {
		supported[i] = string(p)
	}
	for i, p := range protocols {
		if !slices.Contains(scrapeProtocols, p) {
			errs = append(errs, field.NotSupported(path.Child("scrapeProtocols").Index(i), p, supported))
		}
	}
	if fallback != nil && !slices.Contains(scrapeProtocols, *fallback) {
		errs = append(errs, field.NotSupported(path.Child("fallbackScrapeProtocol"), *fallback, supported))
	}
	return errs
}

func validateBodySizeLimit(path *field.Path, limit *monitoringv1.ByteSize) field.ErrorList {
	if limit == nil || *limit == "" {
		return nil
	}
	if _, err := units.ParseBase2Bytes(string(*limit)); err != nil {
		return field.ErrorList{field.Invalid(path, string(*limit), "not a size like 10MB or 512KiB: "+err.Error())}
	}
	return nil
}

// actionsNeedingTarget write their result to targetLabel.
var actionsNeedingTarget = []relabel.Action{
	relabel.Replace, relabel.HashMod, relabel.Lowercase, relabel.Uppercase, relabel.KeepEqual, relabel.DropEqual,
}

// validateRelabelConfigs checks each rule the way Prometheus will load it,
// naming the field: the action, the source labels, the regex, what the
// action requires (targetLabel, modulus), then Prometheus's own check.
func validateRelabelConfigs(path *field.Path, rcs []monitoringv1.RelabelConfig) field.ErrorList {
	var errs field.ErrorList
	for i := range rcs {
		errs = append(errs, validateRelabelConfig(path.Index(i), &rcs[i])...)
	}
	return errs
}

func validateRelabelConfig(path *field.Path, rc *monitoringv1.RelabelConfig) field.ErrorList {
	var errs field.ErrorList
	action := relabel.Action(strings.ToLower(rc.Action))
	if action == "" {
		action = relabel.Replace
	}
	// The same list the controller's renderer checks against.
	if !slices.Contains(scrape.RelabelActions, action) {
		supported := make([]string, len(scrape.RelabelActions))
		for i, a := range scrape.RelabelActions {
			supported[i] = string(a)
		}
		return field.ErrorList{field.NotSupported(path.Child("action"), rc.Action, supported)}
	}

	cfg := relabel.DefaultRelabelConfig
	cfg.Action = action
	cfg.TargetLabel = rc.TargetLabel
	for j, l := range rc.SourceLabels {
		if !nameScheme.IsValidLabelName(string(l)) {
			errs = append(errs, field.Invalid(path.Child("sourceLabels").Index(j), string(l), "not a valid label name"))
		}
		cfg.SourceLabels = append(cfg.SourceLabels, model.LabelName(l))
	}
	if rc.Separator != nil {
		cfg.Separator = *rc.Separator
	}
	if rc.Regex != "" {
		re, err := relabel.NewRegexp(rc.Regex)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("regex"), rc.Regex, regexError(rc.Regex, err)))
		} else {
			cfg.Regex = re
		}
	}
	if rc.Replacement != nil {
		cfg.Replacement = *rc.Replacement
	}
	switch {
	case rc.Modulus < 0:
		errs = append(errs, field.Invalid(path.Child("modulus"), rc.Modulus, "must not be negative"))
	case action == relabel.HashMod && rc.Modulus == 0:
		errs = append(errs, field.Required(path.Child("modulus"), "the hashmod action needs a modulus greater than 0"))
	default:
		cfg.Modulus = uint64(rc.Modulus)
	}
	if slices.Contains(actionsNeedingTarget, action) && rc.TargetLabel == "" {
		errs = append(errs, field.Required(path.Child("targetLabel"), fmt.Sprintf("the %s action writes its result to targetLabel", action)))
	}
	if len(errs) > 0 {
		return errs
	}
	if err := cfg.Validate(nameScheme); err != nil {
		// Prometheus speaks of its own field names; the rule is the best
		// path we have.
		errs = append(errs, field.Invalid(path, rc.Action, err.Error()))
	}
	return errs
}

// regexError describes a regex Prometheus cannot compile. Prometheus
// compiles the expression inside an anchored group; the error for the
// expression as written is the one the user can act on.
func regexError(expr string, err error) string {
	err = scrape.RegexCause(expr, err)
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("not a valid regular expression: %s: `%s`", se.Code, se.Expr)
	}
	return "not a valid regular expression: " + err.Error()
}
