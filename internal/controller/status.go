package controller

import (
	"context"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/render"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
)

// statusUpdate collects what one reconcile learned; writeStatus turns it into
// the workload's status once, at the end.
type statusUpdate struct {
	paused     bool
	reconciled bool
	// unmanaged, when set, says that the configuration Secret is the user's
	// (ReasonConfigurationUnmanaged).
	unmanaged    string
	reconcileErr *render.SpecError
	// yielded: the apply stopped for a newer change (see applyObjects); no status is
	// written, the reconcile that finishes writes it.
	yielded bool
}

// readStatus computes the status of obj, a copy of the object read, whose view for the
// shared renderer is p: every shard's StatefulSet, or an agent's DaemonSet.
func (k *prometheusKind) readStatus(ctx context.Context, c client.Reader, obj client.Object, st *statusUpdate) error {
	p := k.served.view(obj)
	fl := promrender.FlavourOf(p)
	next := p.Status.DeepCopy()
	next.Paused = p.Spec.Paused
	shards := promrender.ShardCount(p)
	next.Shards = shards
	next.Selector = labels.SelectorFromSet(fl.PodLabels(p.Name)).String()

	var replicas, updated, available, unavailable int32
	want := int32(1)
	if p.Spec.Replicas != nil {
		want = *p.Spec.Replicas
	}
	want *= shards
	next.ShardStatuses = nil
	if k.served.daemonSet != nil && k.served.daemonSet(obj) {
		shards, next.Shards = 0, 1 // no StatefulSets below: one DaemonSet, one shard
		var err error
		if replicas, updated, available, want, err = daemonSetReplicas(ctx, c, p); err != nil {
			return err
		}
	}
	for shard := range shards {
		var sts appsv1.StatefulSet
		err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: fl.StatefulSetName(p.Name, shard)}, &sts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		replicas += sts.Status.Replicas
		updated += sts.Status.UpdatedReplicas
		available += sts.Status.AvailableReplicas
		next.ShardStatuses = append(next.ShardStatuses, monitoringv1.ShardStatus{
			ShardID:             fmt.Sprint(shard),
			Replicas:            sts.Status.Replicas,
			UpdatedReplicas:     sts.Status.UpdatedReplicas,
			AvailableReplicas:   sts.Status.AvailableReplicas,
			UnavailableReplicas: sts.Status.Replicas - sts.Status.AvailableReplicas,
		})
	}
	if replicas > available {
		unavailable = replicas - available
	}
	next.Replicas, next.UpdatedReplicas, next.AvailableReplicas, next.UnavailableReplicas = replicas, updated, available, unavailable

	setConditions(&next.Conditions, p.Generation, want, available, st)

	*k.served.status(obj) = *next
	return nil
}

// setConditions sets Available from the replicas available out of want, and
// Reconciled from what the reconcile learned.
func setConditions(conditions *[]monitoringv1.Condition, generation int64, want, available int32, st *statusUpdate) {
	for _, c := range conditionsOf(want, available, st) {
		setCondition(conditions, generation, monitoringv1.ConditionType(c.typ), monitoringv1.ConditionStatus(c.status), c.reason, c.message)
	}
}

// condition is one condition a reconcile sets, whatever the API's condition type.
type condition struct{ typ, status, reason, message string }

// conditionsOf are the Available condition, from the replicas available out of want,
// and the Reconciled condition, from what the reconcile learned (none when it learned
// nothing). Available's status may be Degraded, which only monitoring.coreos.com has.
func conditionsOf(want, available int32, st *statusUpdate) []condition {
	var out []condition
	switch {
	case want > 0 && available >= want:
		out = append(out, condition{string(monitoringv1.Available), string(monitoringv1.ConditionTrue), ReasonAllReplicasAvailable, ""})
	case available > 0:
		out = append(out, condition{string(monitoringv1.Available), string(monitoringv1.ConditionDegraded), ReasonSomeReplicasUnavailable,
			fmt.Sprintf("%d of %d replicas are available", available, want)})
	default:
		out = append(out, condition{string(monitoringv1.Available), string(monitoringv1.ConditionFalse), ReasonNoReplicasAvailable,
			fmt.Sprintf("0 of %d replicas are available", want)})
	}
	switch {
	case st.paused:
		out = append(out, condition{string(monitoringv1.Reconciled), string(monitoringv1.ConditionUnknown), ReasonPaused,
			"spec.paused is true: the operator changes nothing until it is unset"})
	case st.reconcileErr != nil:
		out = append(out, condition{string(monitoringv1.Reconciled), string(monitoringv1.ConditionFalse), st.reconcileErr.Reason, st.reconcileErr.Message})
	case st.reconciled && st.unmanaged != "":
		out = append(out, condition{string(monitoringv1.Reconciled), string(monitoringv1.ConditionTrue), ReasonConfigurationUnmanaged, st.unmanaged})
	case st.reconciled:
		out = append(out, condition{string(monitoringv1.Reconciled), string(monitoringv1.ConditionTrue), ReasonReconcileSucceeded, ""})
	}
	return out
}

// setCondition sets a condition, keeping lastTransitionTime when the status
// did not change.
func setCondition(conditions *[]monitoringv1.Condition, generation int64, t monitoringv1.ConditionType, s monitoringv1.ConditionStatus, reason, message string) {
	for i := range *conditions {
		c := &(*conditions)[i]
		if c.Type != t {
			continue
		}
		if c.Status != s {
			c.LastTransitionTime = metav1.Now()
		}
		c.Status, c.Reason, c.Message, c.ObservedGeneration = s, reason, message, generation
		return
	}
	*conditions = append(*conditions, monitoringv1.Condition{
		Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: generation,
		LastTransitionTime: metav1.Now(),
	})
}
