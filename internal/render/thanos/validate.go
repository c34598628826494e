package thanos

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Validate checks the ThanosRuler spec: values that would make a broken StatefulSet or a
// Thanos Ruler that refuses to start, and fields Lookout does not honour (refused by name,
// never ignored). It returns the first problem as a *workload.SpecError.
func Validate(tr *monitoringv1.ThanosRuler) error {
	return workload.FirstError(tr,
		validateImage,
		validateUnsupported,
		validateNames,
		func(tr *monitoringv1.ThanosRuler) *workload.SpecError { return podFields(tr).Check() },
		validateCounts,
		validateDurations,
		validateEndpoints,
		validateLabels,
		validateFlags,
	)
}

// podFields are the ThanosRuler's pod-level fields every workload kind has.
func podFields(tr *monitoringv1.ThanosRuler) workload.PodFields {
	return workload.PodFieldsOf(&tr.Spec)
}

func validateUnsupported(tr *monitoringv1.ThanosRuler) *workload.SpecError {
	s := &tr.Spec
	switch {
	case len(s.RemoteWrite) > 0:
		return workload.Unsupported("spec.remoteWrite", "the stateless ruler mode (remote write instead of a local TSDB) is not generated")
	case s.Web != nil:
		return workload.Unsupported("spec.web", "the web server's TLS and HTTP settings are not generated; Thanos Ruler serves plain HTTP")
	case s.PortName != "" && s.PortName != webPortName:
		return workload.Unsupported("spec.portName", "the web port is always named \"web\"")
	}
	if _, err := GRPCServerTLSArgs("spec.grpcServerTlsConfig", s.GRPCServerTLSConfig, rulerVersion(tr)); err != nil {
		return err
	}
	// The flags of newer Thanos releases.
	return rulerVersion(tr).Check(
		Gate{Field: "spec.ruleOutageTolerance", Set: workload.Value(s.RuleOutageTolerance) != "", Flag: "for-outage-tolerance", Major: 0, Minor: 30},
		Gate{Field: "spec.ruleGracePeriod", Set: workload.Value(s.RuleGracePeriod) != "", Flag: "for-grace-period", Major: 0, Minor: 30},
		Gate{Field: "spec.ruleConcurrentEval", Set: s.RuleConcurrentEval != nil, Flag: "rule-concurrent-evaluation", Major: 0, Minor: 37},
		Gate{Field: "spec.ruleQueryOffset", Set: workload.Value(s.RuleQueryOffset) != "", Flag: "rule-query-offset", Major: 0, Minor: 38},
		Gate{Field: "spec.enableFeatures", Set: len(s.EnableFeatures) > 0, Flag: "enable-feature", Major: 0, Minor: 39},
	)
}

// rulerVersion is the Thanos version the ruler runs; validateImage has refused one that
// does not parse.
func rulerVersion(tr *monitoringv1.ThanosRuler) Version {
	v, _ := ParseVersion("spec.version", workload.Value(tr.Spec.Version))
	return v
}

func validateNames(tr *monitoringv1.ThanosRuler) *workload.SpecError {
	if err := workload.CheckNames(tr.Name, StatefulSetName(tr.Name), tr.Spec.ServiceName); err != nil {
		return err
	}
	for _, c := range fileConfigs(tr) {
		if err := c.Check(); err != nil {
			return err
		}
	}
	return workload.CheckObjectNames(tr.Spec.ServiceAccountName, nil, nil)
}

func validateCounts(tr *monitoringv1.ThanosRuler) *workload.SpecError {
	if v := tr.Spec.RuleConcurrentEval; v != nil && *v < 1 {
		return workload.Invalid("spec.ruleConcurrentEval", "must be at least 1, got %d", *v)
	}
	return nil
}

func validateImage(tr *monitoringv1.ThanosRuler) *workload.SpecError {
	if err := ImageSpec(&tr.Spec.Image, workload.Value(tr.Spec.Version)).Check(); err != nil {
		if err.Field == "spec.baseImage" {
			err.Field = "spec.image"
			err.Message = strings.Replace(err.Message, "spec.baseImage", "spec.image", 1)
		}
		return err
	}
	return nil
}

func validateDurations(tr *monitoringv1.ThanosRuler) *workload.SpecError {
	s := &tr.Spec
	for _, d := range []struct {
		field string
		v     string
	}{
		{"spec.evaluationInterval", string(s.EvaluationInterval)},
		{"spec.retention", string(s.Retention)},
		{"spec.resendDelay", string(workload.Value(s.ResendDelay))},
		{"spec.ruleOutageTolerance", string(workload.Value(s.RuleOutageTolerance))},
		{"spec.ruleGracePeriod", string(workload.Value(s.RuleGracePeriod))},
		{"spec.ruleQueryOffset", string(workload.Value(s.RuleQueryOffset))},
	} {
		if d.v == "" {
			continue
		}
		if _, err := model.ParseDuration(d.v); err != nil {
			return workload.Invalid(d.field, "%q is not a duration, e.g. %q", d.v, "30s")
		}
	}
	return nil
}

// validateEndpoints checks spec.queryEndpoints and spec.alertmanagersUrl as Thanos reads
// them: an address or URL, optionally behind a DNS discovery prefix (dns+, dnssrv+,
// dnssrvnoa+).
func validateEndpoints(tr *monitoringv1.ThanosRuler) *workload.SpecError {
	s := &tr.Spec
	if len(s.QueryEndpoints) > 0 && s.QueryConfig != nil {
		return workload.Invalid("spec.queryConfig", "is used instead of spec.queryEndpoints: set one of them")
	}
	// Thanos Ruler exits at start without something to query ("no query configuration
	// parameter was given"); the existing operator refuses this before writing anything.
	if len(s.QueryEndpoints) == 0 && s.QueryConfig == nil {
		return workload.Invalid("spec.queryEndpoints", "is empty and spec.queryConfig is not set: Thanos Ruler needs at least one query endpoint to evaluate rules against")
	}
	// It also exits on an address given twice ("Address ... is duplicated for --query
	// flag").
	for i, e := range s.QueryEndpoints {
		if j := slices.Index(s.QueryEndpoints[:i], e); j >= 0 {
			return workload.Invalid(fmt.Sprintf("spec.queryEndpoints[%d]", i), "%q is spec.queryEndpoints[%d] again: Thanos Ruler refuses a query address given twice", e, j)
		}
	}
	if len(s.AlertManagersURL) > 0 && s.AlertManagersConfig != nil {
		return workload.Invalid("spec.alertmanagersConfig", "is used instead of spec.alertmanagersUrl: set one of them")
	}
	for field, list := range map[string][]string{"spec.queryEndpoints": s.QueryEndpoints, "spec.alertmanagersUrl": s.AlertManagersURL} {
		for i, e := range list {
			if err := checkEndpoint(e); err != nil {
				return workload.Invalid(fmt.Sprintf("%s[%d]", field, i), "%q %v", e, err)
			}
		}
	}
	if u := s.AlertQueryURL; u != "" {
		if p, err := url.Parse(u); err != nil || p.Host == "" || (p.Scheme != "http" && p.Scheme != "https") {
			return workload.Invalid("spec.alertQueryUrl", "%q must be an absolute http:// or https:// URL", u)
		}
	}
	return nil
}

func checkEndpoint(e string) error {
	if e == "" || strings.TrimSpace(e) != e || strings.ContainsAny(e, " \t\n") {
		return fmt.Errorf("is not an address: it is empty or has spaces")
	}
	addr := e
	for _, prefix := range []string{"dns+", "dnssrv+", "dnssrvnoa+"} {
		if strings.HasPrefix(addr, prefix) {
			addr = strings.TrimPrefix(addr, prefix)
			break
		}
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return fmt.Errorf("is not an address or URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("has scheme %q; Thanos speaks http and https", u.Scheme)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("names no host")
	}
	return nil
}

func validateLabels(tr *monitoringv1.ThanosRuler) *workload.SpecError {
	s := &tr.Spec
	for _, k := range workload.SortedKeys(s.Labels) {
		if !model.LegacyValidation.IsValidLabelName(k) {
			return workload.Invalid("spec.labels", "%q is not a valid label name", k)
		}
		if k == ReplicaLabel {
			return workload.Invalid("spec.labels", "%q is set by Lookout to the pod's name; each replica needs its own value", k)
		}
		if !model.LabelValue(s.Labels[k]).IsValid() {
			return workload.Invalid("spec.labels."+k, "%q is not a valid label value", s.Labels[k])
		}
	}
	for i, l := range s.AlertDropLabels {
		if !model.LegacyValidation.IsValidLabelName(l) {
			return workload.Invalid(fmt.Sprintf("spec.alertDropLabels[%d]", i), "%q is not a valid label name", l)
		}
	}
	return nil
}

func validateFlags(tr *monitoringv1.ThanosRuler) *workload.SpecError {
	s := &tr.Spec
	if err := workload.CheckLogFlags(s.LogLevel, s.LogFormat); err != nil {
		return err
	}
	if r := s.RoutePrefix; r != "" && !strings.HasPrefix(r, "/") {
		return workload.Invalid("spec.routePrefix", "%q must start with /", r)
	}
	for i, f := range s.EnableFeatures {
		if f == "" || strings.ContainsAny(string(f), ", ") {
			return workload.Invalid(fmt.Sprintf("spec.enableFeatures[%d]", i), "%q is not a feature name", f)
		}
	}
	args, _ := generatedArgs(tr)
	return CheckAdditionalArgs("spec", args, s.AdditionalArgs)
}
