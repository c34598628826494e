package install

import (
	_ "embed"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// DashboardJSON is the Grafana dashboard of the operator. Its queries use
// only metrics the operator exports (the install tests check them against a
// running operator).
//
//go:embed dashboard.json
var DashboardJSON string

// Dashboard ships DashboardJSON in a ConfigMap labelled for Grafana's
// dashboard sidecar (grafana_dashboard: "1").
func Dashboard(o Options) *corev1.ConfigMap {
	o.defaults()
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(DashboardName, o.Namespace, map[string]string{"grafana_dashboard": "1"}),
		Data:       map[string]string{"lookout.json": DashboardJSON},
	}
}

// ReloaderPodMonitor scrapes the config reloader next to every server the
// operator runs (its reload outcomes feed LookoutConfigNotReloaded): the pods
// of Prometheus, PrometheusAgent, Alertmanager and ThanosRuler, in the
// namespaces the operator watches.
func ReloaderPodMonitor(o Options) *monitoringv1.PodMonitor {
	o.defaults()
	nsSel := monitoringv1.NamespaceSelector{Any: true}
	if len(o.WatchNamespaces) > 0 {
		nsSel = monitoringv1.NamespaceSelector{MatchNames: o.WatchNamespaces}
	}
	port := workload.ReloaderPortName
	return &monitoringv1.PodMonitor{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "PodMonitor"},
		ObjectMeta: meta(ReloaderPodMonitorName, o.Namespace, nil),
		Spec: monitoringv1.PodMonitorSpec{
			NamespaceSelector: nsSel,
			Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpIn, Values: ReloadedApps,
			}}},
			PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: &port}},
		},
	}
}

// ReloadedApps are the app.kubernetes.io/name labels of the pods that run
// a reloader: Prometheus, PrometheusAgent, Alertmanager and ThanosRuler (a
// test holds them to the labels the renderers give).
var ReloadedApps = []string{"prometheus", "prometheus-agent", "alertmanager", "thanos-ruler"}

// ReloaderPodMonitorName names ReloaderPodMonitor.
const ReloaderPodMonitorName = "lookout-reloaders"

func alert(name, expr, forDuration, severity, summary, description string) monitoringv1.Rule {
	d := monitoringv1.Duration(forDuration)
	return monitoringv1.Rule{
		Alert:  name,
		Expr:   intstr.FromString(expr),
		For:    &d,
		Labels: map[string]string{"severity": severity},
		Annotations: map[string]string{
			"summary":     summary,
			"description": description,
		},
	}
}

// PrometheusRule alerts on the operator itself: objects it cannot reconcile,
// objects it rejects, configurations that do not reach Prometheus, and the
// webhook certificate running out.
func PrometheusRule(o Options) *monitoringv1.PrometheusRule {
	o.defaults()
	return &monitoringv1.PrometheusRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule"},
		ObjectMeta: meta(Name, o.Namespace, nil),
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{
			Name: "lookout-operator",
			Rules: []monitoringv1.Rule{
				alert("LookoutReconcileErrors",
					`sum by (namespace, kind, reason) (increase(lookout_reconcile_errors_total[10m])) > 0`,
					"15m", "warning",
					"Lookout cannot reconcile {{ $labels.kind }} objects ({{ $labels.reason }})",
					"Reconciles of {{ $labels.kind }} objects keep ending with Reconciled=False, reason {{ $labels.reason }}. kubectl get the workloads and read their Reconciled condition; their running configuration is kept until it is fixed."),
				alert("LookoutControllerErrors",
					`sum by (namespace, controller) (rate(controller_runtime_reconcile_errors_total{controller=~"prometheus|alertmanager|prometheusagent|thanosruler"}[5m])) > 0`,
					"15m", "warning",
					"The Lookout {{ $labels.controller }} controller keeps failing",
					"Reconciles of the {{ $labels.controller }} controller return errors and are retried (API errors, permissions); see the operator's log."),
				alert("LookoutRejectedObjectsRising",
					`sum by (namespace, kind, reason) (increase(lookout_rejected_objects_total[30m])) > 0`,
					"5m", "info",
					"Lookout rejected {{ $labels.kind }} objects ({{ $labels.reason }})",
					"Selected {{ $labels.kind }} objects were left out of a configuration ({{ $labels.reason }}). Each carries the reason in status.bindings and an Event; `lookout explain` tells more."),
				alert("LookoutConfigNotReloaded",
					`lookout_reloader_last_reload_successful == 0`,
					"10m", "warning",
					"Prometheus or Alertmanager in {{ $labels.namespace }} has not loaded its latest configuration",
					"The config reloader of {{ $labels.pod }} failed its last reload: the server keeps running its previous configuration."),
				alert("LookoutWebhookCertificateExpiring",
					`(lookout_webhook_certificate_expiry_timestamp_seconds > 0) - time() < 7 * 86400`,
					"1h", "warning",
					"The Lookout webhook certificate of {{ $labels.pod }} expires in less than 7 days",
					"The operator renews its own certificate when a third of its lifetime is left; with cert-manager, check the Certificate. An expired certificate makes the apiserver skip validation (failurePolicy Ignore)."),
				alert("LookoutWebhookCertificateUnreadable",
					`lookout_webhook_certificate_expiry_timestamp_seconds == 0`,
					"15m", "warning",
					"The Lookout webhook of {{ $labels.pod }} has no readable certificate",
					"The webhook's tls.crt cannot be read or parsed; the apiserver cannot call the webhook."),
				alert("LookoutNoLeader",
					// client-go exports the gauge only from a replica that led at
					// some point, and a leader that loses the lease exits with
					// its 1: when none leads the series is usually absent, not 0.
					// The operator's own up series says that replicas run.
					`(count by (namespace) (up{job="`+MetricsServiceName+`"} == 1) unless on (namespace) (max by (namespace) (leader_election_master_status{name="`+leaderLeaseID+`"}) == 1))`,
					"5m", "critical",
					"No Lookout replica holds the leader lease",
					"Lookout replicas are running in {{ $labels.namespace }} but none leads: nothing is reconciled. Check the Lease "+leaderLeaseID+" and the replicas' logs."),
			},
		}}},
	}
}
