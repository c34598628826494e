package prometheus

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
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

// validateAgentFields refuses what the agent's Prometheus version cannot do; the other
// fields are honoured, or refused, by the checks shared with Prometheus.
func validateAgentFields(a *monitoringv1alpha1.PrometheusAgent) *SpecError {
	v, err := ParsedVersion(AgentView(a))
	if err != nil {
		return nil // the shared checks name spec.version
	}
	needs := func(field string, major, minor int, what string) *SpecError {
		return &SpecError{Field: field, Reason: workload.ReasonUnsupportedField,
			Message: fmt.Sprintf("%s: an agent %s from Prometheus v%d.%d.0 on, spec.version is %s", field, what, major, minor, v.Tag())}
	}
	// Agent mode came with v2.32, behind a feature flag; an older Prometheus would ignore
	// the flag and run as a server.
	if !v.AtLeast(2, 32) {
		return needs("spec.version", 2, 32, "runs")
	}
	if ts := a.Spec.TSDB; ts != nil && ts.OutOfOrderTimeWindow != nil && !v.AtLeast(2, 54) {
		return needs("spec.tsdb.outOfOrderTimeWindow", 2, 54, "ingests out-of-order samples")
	}
	return nil
}

// agentModeArgs turn agent mode on, with the write-ahead log in the data volume: the
// --agent flag of Prometheus v3, the agent feature of v2, as the existing operator does
// (Prometheus v2 takes --enable-feature more than once).
func agentModeArgs(p *monitoringv1.Prometheus) []string {
	mode := "--agent"
	if v, err := ParsedVersion(p); err == nil && v.Major < 3 {
		mode = "--enable-feature=agent"
	}
	return []string{mode, "--storage.agent.path=" + storageDir}
}

// validateAgentDaemonSet refuses what makes no sense with one agent per node, exactly as
// the API's own validation rules do where the cluster checks them: a count of pods or
// shards, a sharding strategy, StatefulSet storage, and every kind of target that is not a
// pod on the agent's own node (ServiceMonitors, Probes, ScrapeConfigs, additional scrape
// configs). The StatefulSet's podManagementPolicy and updateStrategy, which those rules
// allow, have no meaning for a DaemonSet and are ignored, as with the existing operator.
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
		{"spec.shardingStrategy", s.ShardingStrategy != nil},
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
