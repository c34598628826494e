package postgres

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/rules"
)

// The thresholds of the alerts.
const (
	// defaultLagAlertBytes is the lag alert's threshold when
	// maximum_lag_on_failover is not set: 16 WAL segments.
	defaultLagAlertBytes = 16 * 16 << 20
	// connectionsAlertRatio of max_connections in use raises an alert.
	connectionsAlertRatio = 0.9
)

// LabelClusterTarget is the label the PodMonitor gives every series of a
// cluster's instances: the cluster's name.
const LabelClusterTarget = "cluster"

// podMonitor scrapes every instance manager of the cluster.
func podMonitor(c *postgresv1beta1.PostgresCluster) *monitoringv1.PodMonitor {
	port := pgcontract.ManagerPortName
	return &monitoringv1.PodMonitor{
		TypeMeta:   metav1.TypeMeta{APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: monitoringv1.PodMonitorsKind},
		ObjectMeta: ownedMeta(c, MonitorName(c.Name), nil),
		Spec: monitoringv1.PodMonitorSpec{
			Selector: metav1.LabelSelector{MatchLabels: SelectorLabels(c.Name)},
			PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{
				Port: &port,
				Path: pgcontract.PathMetrics,
				RelabelConfigs: []monitoringv1.RelabelConfig{{
					SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_label_postgres_operator_crunchydata_com_cluster"},
					TargetLabel:  LabelClusterTarget,
					Action:       "replace",
				}},
			}},
		},
	}
}

// prometheusRule alerts on what a PostgreSQL on-call needs to know, for this
// cluster's series only; checked by Prometheus's own rule parser, as every
// PrometheusRule Lookout loads.
func prometheusRule(c *postgresv1beta1.PostgresCluster, dyn *dynamic) (*monitoringv1.PrometheusRule, error) {
	sel := fmt.Sprintf(`namespace=%q,%s=%q`, c.Namespace, LabelClusterTarget, c.Name)
	lag := int64(defaultLagAlertBytes)
	if dyn.maxLag > 0 {
		// Beyond it the replica may not be promoted: that is worth knowing.
		lag = dyn.maxLag
	}
	// Every alert names its cluster and namespace, also those whose
	// expression aggregates the labels away (no primary, failover blocked):
	// an AlertmanagerConfig routes the alerts of its own namespace only.
	labels := map[string]string{"severity": "critical", "namespace": c.Namespace, LabelClusterTarget: c.Name}
	warn := map[string]string{"severity": "warning", "namespace": c.Namespace, LabelClusterTarget: c.Name}
	alert := func(name, expr, forDur string, l map[string]string, summary string) monitoringv1.Rule {
		d := monitoringv1.Duration(forDur)
		return monitoringv1.Rule{
			Alert:  name,
			Expr:   intstr.FromString(expr),
			For:    &d,
			Labels: l,
			Annotations: map[string]string{
				"summary":     summary,
				"description": fmt.Sprintf("PostgresCluster %s/%s: %s. `lookout explain postgrescluster %s/%s` says more.", c.Namespace, c.Name, summary, c.Namespace, c.Name),
			},
		}
	}
	pr := &monitoringv1.PrometheusRule{
		TypeMeta:   metav1.TypeMeta{APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: monitoringv1.PrometheusRuleKind},
		ObjectMeta: ownedMeta(c, MonitorName(c.Name), nil),
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{
			Name: "postgres-" + c.Namespace + "-" + c.Name,
			Rules: []monitoringv1.Rule{
				alert("PostgresPrimaryMissing",
					fmt.Sprintf(`(sum(%s{role=%q,%s}) or on() vector(0)) < 1`, pgcontract.MetricRole, pgcontract.RolePrimary, sel),
					"1m", labels, "no instance is primary: writes fail"),
				alert("PostgresReplicaNotStreaming",
					fmt.Sprintf(`%s{%s} == 0 and on(namespace, pod) %s{role=%q,%s} == 1`, pgcontract.MetricStreaming, sel, pgcontract.MetricRole, pgcontract.RoleReplica, sel),
					"2m", labels, "a replica does not stream WAL from the primary"),
				alert("PostgresReplicationLagHigh",
					fmt.Sprintf(`%s{%s} > %d`, pgcontract.MetricReplicationLagBytes, sel, lag),
					"5m", warn, fmt.Sprintf("a replica is more than %d bytes of WAL behind", lag)),
				alert("PostgresFailoverBlocked",
					fmt.Sprintf(`max(%s{%s}) > 0`, pgcontract.MetricFailoverBlocked, sel),
					"1m", labels, "no replica could be promoted if the primary were lost"),
				alert("PostgresTooManyConnections",
					fmt.Sprintf(`%s{%s} / %s{%s} > %g`, pgcontract.MetricConnections, sel, pgcontract.MetricMaxConnections, sel, connectionsAlertRatio),
					"5m", warn, fmt.Sprintf("more than %g%% of max_connections are in use", connectionsAlertRatio*100)),
			},
		}}},
	}
	pr.Spec.Groups[0].Rules = append(pr.Spec.Groups[0].Rules, backupAlerts(c, sel, alert)...)
	// The rule file as a Prometheus would load it; a refusal is a bug here.
	res, err := rules.Generate(rules.Input{Prometheus: &monitoringv1.Prometheus{}, Rules: []*monitoringv1.PrometheusRule{pr}})
	if err != nil {
		return nil, err
	}
	if v := res.Verdicts[0]; !v.Accepted {
		return nil, fmt.Errorf("the PrometheusRule of the cluster is refused by Prometheus: %s", v.Message)
	}
	return pr, nil
}
