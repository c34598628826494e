package controller

import (
	"context"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/render"
	thanosrender "github.com/lookout-operator/lookout/internal/render/thanos"
	"github.com/lookout-operator/lookout/internal/selection"
)

// ThanosRulerReconciler converges one ThanosRuler: gather (the selected PrometheusRules,
// the Secrets the spec references) → render (rule files checked by Prometheus's parser in
// Thanos's dialect, objects) → apply → status, and status.bindings on every
// PrometheusRule it evaluates.
type ThanosRulerReconciler struct {
	*workloadReconciler[*monitoringv1.ThanosRuler]
}

// thanosRulerKind is what the ThanosRuler brings to the workload skeleton.
type thanosRulerKind struct{}

func (thanosRulerKind) name() string                             { return monitoringv1.ThanosRulerKind }
func (thanosRulerKind) newObject() *monitoringv1.ThanosRuler     { return &monitoringv1.ThanosRuler{} }
func (thanosRulerKind) paused(tr *monitoringv1.ThanosRuler) bool { return tr.Spec.Paused }

func (thanosRulerKind) render(ctx context.Context, g *gather.Cluster, opts Options, tr *monitoringv1.ThanosRuler, _ *phaseTimer) (*rendered, error) {
	in, err := g.ThanosRuler(ctx, tr)
	if err != nil {
		return nil, err
	}
	in.Inputs.ReloaderImage = opts.ReloaderImage
	selected := map[objectKey]client.Object{}
	for _, pr := range in.Inputs.Rules {
		selected[verdictKey(monitoringv1.PrometheusRuleKind, pr.Namespace, pr.Name)] = pr
	}
	d, err := render.ThanosRuler(in.Inputs)
	out := &rendered{refs: in.Refs, selected: indexed(selected)}
	if err == nil {
		out.objects, out.verdicts = d.Objects, d.Verdicts
	}
	return out, err
}

func (thanosRulerKind) ownerLabels(tr *monitoringv1.ThanosRuler) map[string]string {
	return map[string]string{thanosrender.LabelThanosRuler: tr.Name}
}

// The ThanosRuler prunes its StatefulSet and rule ConfigMaps in its namespace.
func (thanosRulerKind) ownedKinds() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	}
}

func (thanosRulerKind) bound() []func(context.Context, client.Reader) ([]boundObject, error) {
	return thanosRulerRuleLists
}

func (thanosRulerKind) statefulSet(tr *monitoringv1.ThanosRuler) string {
	return thanosrender.StatefulSetName(tr.Name)
}

func (thanosRulerKind) setStatus(tr *monitoringv1.ThanosRuler, sts *appsv1.StatefulSetStatus, st *statusUpdate) {
	s := &tr.Status
	s.Paused = tr.Spec.Paused
	s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, s.UnavailableReplicas = replicaCounts(sts)
	setConditions(&s.Conditions, tr.Generation, thanosrender.Replicas(tr), s.AvailableReplicas, st)
}

// SetupWithManager wires the watches: every event ends as the key of the ThanosRulers it
// concerns.
func (r *ThanosRulerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.kind = thanosRulerKind{}
	return r.controllerFor(mgr, "thanosruler", newThanosRulerSelecting).
		Watches(&monitoringv1.PrometheusRule{}, newThanosRulerSelecting(mgr.GetClient(), false)).
		Complete(r)
}

// newThanosRulerSelecting enqueues the ThanosRulers whose rule selectors match a
// PrometheusRule (before or after an update); with namespaces set, those whose namespace
// selectors read a Namespace's labels.
func newThanosRulerSelecting(c client.Reader, namespaces bool) *selectionEvents {
	return workloadsSelecting(c, namespaces, "ThanosRuler", func(ctx context.Context) ([]selectingWorkload, error) {
		var trs monitoringv1.ThanosRulerList
		if err := c.List(ctx, &trs, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		out := make([]selectingWorkload, len(trs.Items))
		for i := range trs.Items {
			sel, _ := selection.ThanosRulerRules(&trs.Items[i])
			out[i] = selectingWorkload{key: client.ObjectKeyFromObject(&trs.Items[i]), sel: sel}
		}
		return out, nil
	})
}
