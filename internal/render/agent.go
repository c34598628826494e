package render

import (
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"

	"github.com/lookout-operator/lookout/internal/render/prometheus"
)

// PrometheusAgent renders one PrometheusAgent on the path a Prometheus takes: in holds
// what was gathered for prometheus.AgentView(a) (the selected monitors, Secrets,
// additional scrape configs). What differs is the flavour the view carries (names,
// labels, agent mode, no rules) and the mode passed on here.
func PrometheusAgent(a *monitoringv1alpha1.PrometheusAgent, in Inputs) (*Desired, error) {
	if err := prometheus.ValidateAgent(a); err != nil {
		return nil, specError(err)
	}
	in.Prometheus = prometheus.AgentView(a)
	in.Rules = nil
	in.AdditionalAlertManagerConfigs, in.AdditionalAlertRelabelConfigs = nil, nil
	in.daemonSet = prometheus.AgentDaemonSet(a)
	return Prometheus(in)
}
