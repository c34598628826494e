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

// countsSettled says that the StatefulSet controller has seen sts's latest spec and updated
// every replica, and that the owner's status counts (replicas, updated, available) are what
// sts reports: no update of sts's status is still on its way to change the owner's, so a
// quiet reconcile can be told apart from one that catches up with the StatefulSet.
func countsSettled(sts *appsv1.StatefulSet, replicas, updated, available int32) bool {
	s := sts.Status
	return s.ObservedGeneration == sts.Generation && s.UpdatedReplicas == s.Replicas &&
		replicas == s.Replicas && updated == s.UpdatedReplicas && available == s.AvailableReplicas
}

// checkQuietReconcile touches owner's labels and checks that the reconcile this makes
// (counted for controller) sends no write in namespace ns.
func checkQuietReconcile[T client.Object](t *testing.T, controller, ns string, owner T) {
	t.Helper()
	before, beforeReconciles := writes.Load(), reconcilesOf(t, controller)
	update(t, owner, func(o T) { o.SetLabels(map[string]string{"touched": "yes"}) })
	eventually(t, "a reconcile ran", func() (bool, error) { return reconcilesOf(t, controller) > beforeReconciles, nil })
	if got := writesSince(before, ns); len(got) != 0 {
		t.Errorf("a reconcile with nothing to change sent %d writes, want 0: %v", len(got), got)
	}
}

// scaleStatefulSet changes the replicas of sts behind the operator's back.
func scaleStatefulSet(t *testing.T, sts *appsv1.StatefulSet, replicas int32) {
	t.Helper()
	patch := client.MergeFrom(sts.DeepCopy())
	sts.Spec.Replicas = &replicas
	if err := k8s.Patch(testCtx, sts, patch); err != nil {
		t.Fatal(err)
	}
}
