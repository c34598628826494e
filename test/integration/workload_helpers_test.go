package integration

import (
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// conditionOf is the condition of type t among conds, nil when there is none.
func conditionOf(conds []monitoringv1.Condition, t monitoringv1.ConditionType) *monitoringv1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// checkStatefulSet checks what a migration depends on: the selector, the governing
// Service, the replicas and the controller reference to owner.
func checkStatefulSet(t *testing.T, sts *appsv1.StatefulSet, selector map[string]string, serviceName string, replicas int32, owner client.Object) {
	t.Helper()
	if !mapsEqual(sts.Spec.Selector.MatchLabels, selector) {
		t.Errorf("selector %v, want %v", sts.Spec.Selector.MatchLabels, selector)
	}
	if sts.Spec.ServiceName != serviceName || *sts.Spec.Replicas != replicas || !isControlledBy(sts, owner) {
		t.Errorf("serviceName %q replicas %d owners %v", sts.Spec.ServiceName, *sts.Spec.Replicas, sts.OwnerReferences)
	}
}

// checkArgs checks that args hold every one of want.
func checkArgs(t *testing.T, container string, args []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Errorf("%s args lack %s: %v", container, w, args)
		}
	}
}
