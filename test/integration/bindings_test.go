package integration

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// binding returns the Accepted condition of Prometheus ns/name on the
// monitor's status, or nil when it has no binding for it.
func binding(sm *monitoringv1.ServiceMonitor, ns, name string) *monitoringv1.ConfigResourceCondition {
	return acceptedBy(&sm.Status, ns, name)
}

// acceptedBy returns the Accepted condition of Prometheus ns/name in the
// status of a monitor of any kind, or nil when it has no binding for it.
func acceptedBy(status *monitoringv1.ConfigResourceStatus, ns, name string) *monitoringv1.ConfigResourceCondition {
	for _, b := range status.Bindings {
		if b.Resource == "prometheuses" && b.Namespace == ns && b.Name == name {
			for i := range b.Conditions {
				if b.Conditions[i].Type == monitoringv1.Accepted {
					return &b.Conditions[i]
				}
			}
		}
	}
	return nil
}

func TestStatusBindingsFollowWhatEachPrometheusDecided(t *testing.T) {
	ns := newNamespace(t)
	sm := newServiceMonitor(ns, "app")
	mustCreate(t, sm)
	a := newPrometheus(ns, "a")
	b := newPrometheus(ns, "b")
	mustCreate(t, a)
	mustCreate(t, b)
	key := client.ObjectKeyFromObject(sm)

	eventually(t, "both Prometheus objects bind the monitor as Accepted", func() (bool, error) {
		if err := k8s.Get(testCtx, key, sm); err != nil {
			return false, err
		}
		ca, cb := binding(sm, ns, "a"), binding(sm, ns, "b")
		return ca != nil && cb != nil && ca.Status == monitoringv1.ConditionTrue && cb.Status == monitoringv1.ConditionTrue &&
			ca.ObservedGeneration == sm.Generation, nil
	})

	// A bad regex: both bindings turn Accepted=False with the reason.
	update(t, sm, func(sm *monitoringv1.ServiceMonitor) {
		sm.Spec.Endpoints[0].RelabelConfigs = []monitoringv1.RelabelConfig{{
			SourceLabels: []monitoringv1.LabelName{"__address__"}, Regex: "(", Action: "keep"}}
	})
	eventually(t, "the bindings say InvalidRegex for the new generation", func() (bool, error) {
		if err := k8s.Get(testCtx, key, sm); err != nil {
			return false, err
		}
		c := binding(sm, ns, "a")
		return c != nil && c.Status == monitoringv1.ConditionFalse && c.Reason == "InvalidRegex" &&
			c.ObservedGeneration == sm.Generation && c.Message != "", nil
	})

	// Prometheus b stops selecting it: its entry goes, a's stays.
	update(t, b, func(b *monitoringv1.Prometheus) {
		b.Spec.ServiceMonitorSelector.MatchLabels = map[string]string{"team": "nobody"}
	})
	eventually(t, "b's binding is removed", func() (bool, error) {
		if err := k8s.Get(testCtx, key, sm); err != nil {
			return false, err
		}
		return binding(sm, ns, "b") == nil && binding(sm, ns, "a") != nil, nil
	})

	// Prometheus a is deleted: no binding is left.
	if err := k8s.Delete(testCtx, a); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a's binding is removed with it", func() (bool, error) {
		if err := k8s.Get(testCtx, key, sm); err != nil {
			return false, err
		}
		return len(sm.Status.Bindings) == 0, nil
	})
}
