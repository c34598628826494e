package alertmanager

import (
	"strings"

	"github.com/alecthomas/units"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Validate checks the Alertmanager spec: values that would make a broken StatefulSet and
// fields Lookout does not honour (refused by name, never ignored). It returns the first
// problem as a *workload.SpecError.
func Validate(am *monitoringv1.Alertmanager) error {
	return workload.FirstError(am,
		validateNames,
		func(am *monitoringv1.Alertmanager) *workload.SpecError { return podFields(am).Check() },
		validateLimits,
		validateImage,
		validateDurations,
		validateFlags,
		validateUnsupported,
	)
}

// podFields are the Alertmanager's pod-level fields every workload kind has.
func podFields(am *monitoringv1.Alertmanager) workload.PodFields {
	return workload.PodFieldsOf(&am.Spec)
}

func imageSpec(am *monitoringv1.Alertmanager) workload.ImageSpec {
	return workload.ImageSpec{Image: am.Spec.Image, BaseImage: am.Spec.BaseImage, Tag: am.Spec.Tag, SHA: am.Spec.SHA,
		Version: am.Spec.Version, DefaultBase: DefaultBaseImage, DefaultVersion: DefaultVersion}
}

func validateNames(am *monitoringv1.Alertmanager) *workload.SpecError {
	if err := workload.CheckNames(am.Name, StatefulSetName(am.Name), am.Spec.ServiceName); err != nil {
		return err
	}
	if n := am.Spec.ConfigSecret; n != "" {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return workload.Invalid("spec.configSecret", "%q is not a valid Secret name: %s", n, strings.Join(errs, "; "))
		}
	}
	return workload.CheckObjectNames(am.Spec.ServiceAccountName, am.Spec.Secrets, am.Spec.ConfigMaps)
}

func validateLimits(am *monitoringv1.Alertmanager) *workload.SpecError {
	if l := am.Spec.Limits; l != nil {
		if l.MaxSilences != nil && *l.MaxSilences < 0 {
			return workload.Invalid("spec.limits.maxSilences", "must not be negative, got %d", *l.MaxSilences)
		}
		if l.MaxPerSilenceBytes != nil {
			if _, err := units.ParseBase2Bytes(string(*l.MaxPerSilenceBytes)); err != nil || !workload.ByteSizeRE.MatchString(string(*l.MaxPerSilenceBytes)) {
				return workload.Invalid("spec.limits.maxPerSilenceBytes", "%q is not a valid size, e.g. %q", *l.MaxPerSilenceBytes, "5KiB")
			}
		}
	}
	return nil
}

// minVersion is the oldest Alertmanager Lookout generates for: the existing operator
// refuses older ones too (their flags have other names).
var minVersion = workload.Version{Minor: 15}

func validateImage(am *monitoringv1.Alertmanager) *workload.SpecError {
	if err := imageSpec(am).Check(); err != nil {
		return err
	}
	if v := version(am); !atLeast(v, minVersion) {
		return workload.Invalid("spec.version", "Alertmanager %s is older than %s, the oldest release Lookout (like the existing operator) runs", v.Tag(), minVersion.Tag())
	}
	return nil
}

func validateDurations(am *monitoringv1.Alertmanager) *workload.SpecError {
	s := &am.Spec
	for field, v := range map[string]monitoringv1.GoDuration{
		"spec.retention":               s.Retention,
		"spec.clusterGossipInterval":   s.ClusterGossipInterval,
		"spec.clusterPushpullInterval": s.ClusterPushpullInterval,
		"spec.clusterPeerTimeout":      s.ClusterPeerTimeout,
	} {
		if err := workload.CheckGoDuration(field, string(v)); err != nil {
			return err
		}
	}
	return nil
}

func validateFlags(am *monitoringv1.Alertmanager) *workload.SpecError {
	s := &am.Spec
	if err := workload.CheckLogFlags(s.LogLevel, s.LogFormat); err != nil {
		return err
	}
	if u := s.ExternalURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return workload.Invalid("spec.externalUrl", "%q must be an absolute http:// or https:// URL", u)
	}
	if r := s.RoutePrefix; r != "" && !strings.HasPrefix(r, "/") {
		return workload.Invalid("spec.routePrefix", "%q must start with /", r)
	}
	for i, f := range s.EnableFeatures {
		if f == "" || strings.ContainsAny(f, ", ") {
			return workload.Invalid("spec.enableFeatures["+itoa(i)+"]", "%q is not a feature name", f)
		}
	}
	switch s.AlertmanagerConfigMatcherStrategy.Type {
	case "", monitoringv1.OnNamespaceConfigMatcherStrategyType, monitoringv1.OnNamespaceExceptForAlertmanagerNamespaceConfigMatcherStrategyType, monitoringv1.NoneConfigMatcherStrategyType:
	default:
		return workload.Invalid("spec.alertmanagerConfigMatcherStrategy.type", "%q is not one of OnNamespace, OnNamespaceExceptForAlertmanagerNamespace, None", s.AlertmanagerConfigMatcherStrategy.Type)
	}
	return workload.CheckAdditionalArgs(generatedArgs(am), s.AdditionalArgs, "data.maintenance-interval", "Alertmanager")
}

func validateUnsupported(am *monitoringv1.Alertmanager) *workload.SpecError {
	s := &am.Spec
	if ct := s.ClusterTLS; ct != nil {
		if !atLeast(version(am), sinceClusterTLS) {
			return workload.Invalid("spec.clusterTLS", "Alertmanager %s has no --cluster.tls-config (it arrived in %s): its replicas would gossip in plain text", version(am).Tag(), sinceClusterTLS.Tag())
		}
		// Client certificates are what mutual TLS between the replicas is for: no
		// probe reaches the mesh port, so every clientAuthType is fine there.
		if err := ct.ServerTLS.Validate(); err != nil {
			return workload.Invalid("spec.clusterTLS.server", "%v", err)
		}
		if err := ct.ClientTLS.Validate(); err != nil {
			return workload.Invalid("spec.clusterTLS.client", "%v", err)
		}
	}
	if err := workload.CheckWebTLS("spec.web.tlsConfig", webTLS(am)); err != nil {
		return err
	}
	if s.Web != nil && (s.Web.TLSConfig != nil || s.Web.HTTPConfig != nil) && !atLeast(version(am), sinceWebConfigFile) {
		return workload.Invalid("spec.web", "Alertmanager %s has no --web.config.file (it arrived in %s): TLS and HTTP settings of its web server need a later release", version(am).Tag(), sinceWebConfigFile.Tag())
	}
	if n := s.PortName; n != "" {
		if errs := validation.IsValidPortName(n); len(errs) > 0 {
			return workload.Invalid("spec.portName", "%q is not a valid port name: %s", n, strings.Join(errs, "; "))
		}
		if n == meshTCPPortName || n == meshUDPPortName {
			return workload.Invalid("spec.portName", "%q is the name of a mesh port of the governing Service", n)
		}
	}
	return nil
}

// ParsedVersion is the Alertmanager version am runs: spec.version, else the default.
func ParsedVersion(am *monitoringv1.Alertmanager) (workload.Version, error) {
	return imageSpec(am).ParsedVersion()
}
