package integration

import (
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestPodMonitorsAndProbesShipAndAreBound(t *testing.T) {
	ns := newNamespace(t)
	pm := &monitoringv1.PodMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pods", Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1.PodMonitorSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: ptr.To("metrics")}},
		},
	}
	probe := &monitoringv1.Probe{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site", Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1.ProbeSpec{
			ProberSpec: monitoringv1.ProberSpec{URL: "blackbox.example:9115"},
			Module:     "http_2xx",
			Targets:    monitoringv1.ProbeTargets{StaticConfig: &monitoringv1.ProbeTargetStaticConfig{Targets: []string{"https://example.com"}}},
		},
	}
	mustCreate(t, pm)
	mustCreate(t, probe)
	mustCreate(t, newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) {
		p.Spec.PodMonitorSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		p.Spec.ProbeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	}))
	eventually(t, "the PodMonitor's and the Probe's jobs are in the config", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		jobs := jobsIn(cfg)
		return err == nil && slices.Contains(jobs, "podMonitor/"+ns+"/pods/0") && slices.Contains(jobs, "probe/"+ns+"/site"), err
	})
	eventually(t, "both carry an Accepted binding", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(pm), pm); err != nil {
			return false, err
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(probe), probe); err != nil {
			return false, err
		}
		ok := func(bs []monitoringv1.WorkloadBinding) bool {
			return len(bs) == 1 && bs[0].Name == "main" && len(bs[0].Conditions) == 1 && bs[0].Conditions[0].Status == monitoringv1.ConditionTrue
		}
		return ok(pm.Status.Bindings) && ok(probe.Status.Bindings), nil
	})
}
