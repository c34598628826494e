package controller

import (
	"context"
	"errors"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reasons of the Accepted condition of a monitor's or rule's binding.
const (
	// ReasonAccepted: the object is in the Prometheus's configuration (also
	// the reason of the Event when a rejected object is accepted again).
	ReasonAccepted = "Accepted"
)

// verdict is what one Prometheus decided about one selected object.
type verdict struct {
	Accepted        bool
	Reason, Message string
	Generation      int64
}

// boundObject is a monitoring object with status.bindings.
type boundObject interface {
	client.Object
	bindings() *monitoringv1.ConfigResourceStatus
	object() client.Object // the typed object itself, for the client
}

type serviceMonitor struct{ *monitoringv1.ServiceMonitor }

func (o serviceMonitor) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o serviceMonitor) object() client.Object                        { return o.ServiceMonitor }

type podMonitor struct{ *monitoringv1.PodMonitor }

func (o podMonitor) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o podMonitor) object() client.Object                        { return o.PodMonitor }

type probe struct{ *monitoringv1.Probe }

func (o probe) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o probe) object() client.Object                        { return o.Probe }

type scrapeConfig struct {
	*monitoringv1alpha1.ScrapeConfig
}

func (o scrapeConfig) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o scrapeConfig) object() client.Object                        { return o.ScrapeConfig }

type prometheusRule struct{ *monitoringv1.PrometheusRule }

func (o prometheusRule) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o prometheusRule) object() client.Object                        { return o.PrometheusRule }

// syncBindings makes the binding of Prometheus p on every object match the
// verdicts: an entry with Accepted True/False for each selected object, no
// entry on the others. It writes only the objects whose binding changes, with
// optimistic locking, because several Prometheus objects share one list.
func (r *PrometheusReconciler) syncBindings(ctx context.Context, p *monitoringv1.Prometheus, objects []boundObject, verdicts map[string]verdict) error {
	var errs []error
	for _, obj := range objects {
		v, selected := verdicts[obj.GetNamespace()+"/"+obj.GetName()]
		st := obj.bindings()
		idx := bindingIndex(st.Bindings, p)
		var want *monitoringv1.WorkloadBinding
		if selected {
			want = bindingFor(p, v, st.Bindings, idx)
		}
		if idx < 0 && want == nil {
			continue
		}
		if idx >= 0 && want != nil && sameBinding(&st.Bindings[idx], want) {
			continue
		}
		patch := client.MergeFromWithOptions(obj.object().DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
		switch {
		case want == nil:
			st.Bindings = append(st.Bindings[:idx:idx], st.Bindings[idx+1:]...)
		case idx < 0:
			st.Bindings = append(st.Bindings, *want)
		default:
			st.Bindings[idx] = *want
		}
		if err := r.Client.Status().Patch(ctx, obj.object(), patch); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("update status.bindings of %s %s/%s: %w",
				obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

func bindingIndex(list []monitoringv1.WorkloadBinding, p *monitoringv1.Prometheus) int {
	for i, b := range list {
		if b.Group == monitoringv1.SchemeGroupVersion.Group && b.Resource == monitoringv1.PrometheusName &&
			b.Namespace == p.Namespace && b.Name == p.Name {
			return i
		}
	}
	return -1
}

// bindingFor builds the wanted binding, keeping lastTransitionTime when the
// condition status does not change.
func bindingFor(p *monitoringv1.Prometheus, v verdict, list []monitoringv1.WorkloadBinding, idx int) *monitoringv1.WorkloadBinding {
	cond := monitoringv1.ConfigResourceCondition{
		Type:               monitoringv1.Accepted,
		Status:             monitoringv1.ConditionTrue,
		Reason:             ReasonAccepted,
		ObservedGeneration: v.Generation,
		LastTransitionTime: metav1.Now(),
	}
	if !v.Accepted {
		cond.Status, cond.Reason, cond.Message = monitoringv1.ConditionFalse, v.Reason, v.Message
	}
	if idx >= 0 {
		for _, c := range list[idx].Conditions {
			if c.Type == cond.Type && c.Status == cond.Status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
		}
	}
	return &monitoringv1.WorkloadBinding{
		Group: monitoringv1.SchemeGroupVersion.Group, Resource: monitoringv1.PrometheusName,
		Namespace: p.Namespace, Name: p.Name,
		Conditions: []monitoringv1.ConfigResourceCondition{cond},
	}
}

func sameBinding(a, b *monitoringv1.WorkloadBinding) bool {
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
