package prometheus

import (
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// AgentDaemonSet reports whether a runs one agent per node (spec.mode DaemonSet).
func AgentDaemonSet(a *monitoringv1alpha1.PrometheusAgent) bool {
	return a.Spec.Mode != nil && *a.Spec.Mode == monitoringv1alpha1.DaemonSetPrometheusAgentMode
}

// ValidateAgent checks a PrometheusAgent: what only an agent can get wrong (its mode,
// fields an agent or its mode has no use for), then everything Validate checks for a
// Prometheus on the shared fields. It returns the first problem as a *SpecError naming the
// field.
func ValidateAgent(a *monitoringv1alpha1.PrometheusAgent) error {
	if err := workload.FirstError(a, validateAgentMode, validateAgentFields, validateAgentDaemonSet); err != nil {
		return err
	}
	return Validate(AgentView(a))
}

func validateAgentMode(a *monitoringv1alpha1.PrometheusAgent) *SpecError {
	if m := a.Spec.Mode; m != nil {
		switch *m {
		case monitoringv1alpha1.StatefulSetPrometheusAgentMode, monitoringv1alpha1.DaemonSetPrometheusAgentMode:
		default:
			return invalid("spec.mode", "%q is not one of StatefulSet, DaemonSet", *m)
		}
	}
	return nil
}

// validateAgentFields refuses the shared fields the agent does not honour; the others are
// honoured, or refused, by the checks shared with Prometheus.
func validateAgentFields(a *monitoringv1alpha1.PrometheusAgent) *SpecError {
	s := &a.Spec
	if v, err := imageSpec(AgentView(a)).ParsedVersion(); err == nil && v.Major < 3 {
		return unsupported("spec.version", "agents are run with the --agent flag of Prometheus v3 or later, spec.version is "+imageSpec(AgentView(a)).VersionOrDefault())
	}
	if s.TSDB != nil {
		return unsupported("spec.tsdb", "an agent keeps a write-ahead log only, no TSDB to configure; remove the field")
	}
	return nil
}

// validateAgentDaemonSet refuses what makes no sense with one agent per node, as the API's
// own validation rules do where the cluster checks them: a count of pods or shards, StatefulSet storage and policies, and every kind of target that is not a pod on the
// agent's own node (ServiceMonitors, Probes, ScrapeConfigs, additional scrape configs).
func validateAgentDaemonSet(a *monitoringv1alpha1.PrometheusAgent) *SpecError {
	if !AgentDaemonSet(a) {
		return nil
	}
	s := &a.Spec
	const why = "a DaemonSet runs one agent per node and scrapes the pods of PodMonitors on that node only; remove the field or use mode StatefulSet"
	set := []struct {
		field string
		isSet bool
	}{
		{"spec.replicas", s.Replicas != nil},
		{"spec.shards", s.Shards != nil && *s.Shards > 1}, // the API defaults it to 1
		{"spec.storage", s.Storage != nil},
		{"spec.persistentVolumeClaimRetentionPolicy", s.PersistentVolumeClaimRetentionPolicy != nil},
		{"spec.podManagementPolicy", s.PodManagementPolicy != nil},
		{"spec.updateStrategy", s.UpdateStrategy != nil},
		{"spec.serviceMonitorSelector", s.ServiceMonitorSelector != nil},
		{"spec.serviceMonitorNamespaceSelector", s.ServiceMonitorNamespaceSelector != nil},
		{"spec.probeSelector", s.ProbeSelector != nil},
		{"spec.probeNamespaceSelector", s.ProbeNamespaceSelector != nil},
		{"spec.scrapeConfigSelector", s.ScrapeConfigSelector != nil},
		{"spec.scrapeConfigNamespaceSelector", s.ScrapeConfigNamespaceSelector != nil},
		{"spec.additionalScrapeConfigs", s.AdditionalScrapeConfigs != nil},
	}
	for _, f := range set {
		if f.isSet {
			return unsupported(f.field, why)
		}
	}
	return nil
}
