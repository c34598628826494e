package controller

import (
	"context"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/render"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
)

// servedKind is what prometheusKind needs to know about the kind it serves. A
// PrometheusAgent goes through the same gather → render → apply → status steps as a
// Prometheus: it is read as its kind, and the steps see the Prometheus view the shared
// renderer builds it from (promrender.AgentView). Status, Events, the finalizer and the
// bindings' workload are the object itself.
type servedKind struct {
	name       string // the Kind
	controller string // the controller's name (metrics, logs)
	newObject  func() client.Object
	view       func(client.Object) *monitoringv1.Prometheus
	status     func(client.Object) *monitoringv1.PrometheusStatus
	render     func(client.Object, render.Inputs) (*render.Desired, error)
	list       func(context.Context, client.Reader) ([]*monitoringv1.Prometheus, error)
	// daemonSet, when set, tells that obj runs as a DaemonSet rather than StatefulSets.
	daemonSet func(client.Object) bool
}

var servedPrometheus = &servedKind{
	name:       monitoringv1.PrometheusesKind,
	controller: "prometheus",
	newObject:  func() client.Object { return &monitoringv1.Prometheus{} },
	view:       func(o client.Object) *monitoringv1.Prometheus { return o.(*monitoringv1.Prometheus) },
	status:     func(o client.Object) *monitoringv1.PrometheusStatus { return &o.(*monitoringv1.Prometheus).Status },
	render:     func(_ client.Object, in render.Inputs) (*render.Desired, error) { return render.Prometheus(in) },
	list:       listPrometheus,
}

var servedAgent = &servedKind{
	name:       monitoringv1alpha1.PrometheusAgentsKind,
	controller: "prometheusagent",
	newObject:  func() client.Object { return &monitoringv1alpha1.PrometheusAgent{} },
	view: func(o client.Object) *monitoringv1.Prometheus {
		return promrender.AgentView(o.(*monitoringv1alpha1.PrometheusAgent))
	},
	status: func(o client.Object) *monitoringv1.PrometheusStatus {
		return &o.(*monitoringv1alpha1.PrometheusAgent).Status
	},
	render: func(o client.Object, in render.Inputs) (*render.Desired, error) {
		return render.PrometheusAgent(o.(*monitoringv1alpha1.PrometheusAgent), in)
	},
	list:      listAgents,
	daemonSet: func(o client.Object) bool { return promrender.AgentDaemonSet(o.(*monitoringv1alpha1.PrometheusAgent)) },
}

// selecting is the event handler of one watched kind for the workloads of this kind.
func (k *servedKind) selecting(c client.Reader, kind watchedKind) *selectionEvents {
	h := &selectingHandler{c: c, kind: kind, list: k.list}
	return &selectionEvents{namespaces: kind == kindNamespace, enqueue: h.enqueue}
}

// ownerLabels find what was generated for p, whatever its kind (see promrender.Flavour).
func ownerLabels(p *monitoringv1.Prometheus) map[string]string {
	return map[string]string{promrender.FlavourOf(p).OwnerLabel: p.Name, promrender.LabelPrometheusNamespace: p.Namespace}
}

// listPrometheus lists the Prometheus objects. Read only: the selectors are built from the
// cached objects without copying them.
func listPrometheus(ctx context.Context, c client.Reader) ([]*monitoringv1.Prometheus, error) {
	var l monitoringv1.PrometheusList
	if err := c.List(ctx, &l, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*monitoringv1.Prometheus, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// listAgents lists the PrometheusAgents as the shared renderer sees them.
func listAgents(ctx context.Context, c client.Reader) ([]*monitoringv1.Prometheus, error) {
	var l monitoringv1alpha1.PrometheusAgentList
	if err := c.List(ctx, &l, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*monitoringv1.Prometheus, len(l.Items))
	for i := range l.Items {
		out[i] = promrender.AgentView(&l.Items[i])
	}
	return out, nil
}

// daemonSetReplicas are the pod counts of an agent's DaemonSet: one wanted per node it
// schedules to.
func daemonSetReplicas(ctx context.Context, c client.Reader, p *monitoringv1.Prometheus) (replicas, updated, available, want int32, err error) {
	var ds appsv1.DaemonSet
	err = c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: promrender.FlavourOf(p).StatefulSetName(p.Name, 0)}, &ds)
	if apierrors.IsNotFound(err) {
		return 0, 0, 0, 0, nil
	}
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("read the DaemonSet of %s %s/%s: %w", monitoringv1alpha1.PrometheusAgentsKind, p.Namespace, p.Name, err)
	}
	s := ds.Status
	return s.CurrentNumberScheduled, s.UpdatedNumberScheduled, s.NumberAvailable, s.DesiredNumberScheduled, nil
}
