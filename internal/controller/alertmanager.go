package controller

import (
	"context"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/render"
	amrender "github.com/lookout-operator/lookout/internal/render/alertmanager"
	"github.com/lookout-operator/lookout/internal/selection"
)

// AlertmanagerReconciler converges one Alertmanager: gather (the selected
// AlertmanagerConfigs, the user's config Secret, referenced Secrets) → render
// (merged alertmanager.yaml checked by Alertmanager's own parser, objects) →
// apply → status, and status.bindings on every AlertmanagerConfig.
type AlertmanagerReconciler struct {
	*workloadReconciler[*monitoringv1.Alertmanager]
}

// alertmanagerKind is what the Alertmanager brings to the workload skeleton.
type alertmanagerKind struct{}

func (alertmanagerKind) name() string                              { return monitoringv1.AlertmanagersKind }
func (alertmanagerKind) newObject() *monitoringv1.Alertmanager     { return &monitoringv1.Alertmanager{} }
func (alertmanagerKind) paused(am *monitoringv1.Alertmanager) bool { return am.Spec.Paused }

func (alertmanagerKind) render(ctx context.Context, g *gather.Cluster, opts Options, am *monitoringv1.Alertmanager, _ *phaseTimer) (*rendered, error) {
	in, err := g.Alertmanager(ctx, am)
	if err != nil {
		return nil, err
	}
	in.Inputs.ReloaderImage = opts.ReloaderImage
	selected := map[objectKey]client.Object{}
	for _, c := range in.Inputs.Configs {
		selected[verdictKey(monitoringv1alpha1.AlertmanagerConfigKind, c.Namespace, c.Name)] = c
	}
	d, err := render.Alertmanager(in.Inputs)
	out := &rendered{refs: in.Refs, selected: indexed(selected)}
	if err == nil {
		out.objects, out.verdicts = d.Objects, d.Verdicts
	}
	return out, err
}

func (alertmanagerKind) ownerLabels(am *monitoringv1.Alertmanager) map[string]string {
	return map[string]string{amrender.LabelAlertmanager: am.Name}
}

// The Alertmanager prunes these kinds in its namespace.
func (alertmanagerKind) ownedKinds() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		corev1.SchemeGroupVersion.WithKind("Secret"),
		rbacv1.SchemeGroupVersion.WithKind("Role"),
		rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	}
}

func (alertmanagerKind) bound() []func(context.Context, client.Reader) ([]boundObject, error) {
	return alertmanagerConfigLists
}

func (alertmanagerKind) statefulSet(am *monitoringv1.Alertmanager) string {
	return amrender.StatefulSetName(am.Name)
}

func (alertmanagerKind) setStatus(am *monitoringv1.Alertmanager, sts *appsv1.StatefulSetStatus, st *statusUpdate) {
	s := &am.Status
	s.Paused = am.Spec.Paused
	s.Selector = labels.SelectorFromSet(amrender.SelectorLabels(am.Name)).String()
	s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, s.UnavailableReplicas = replicaCounts(sts)
	setConditions(&s.Conditions, am.Generation, amrender.Replicas(am), s.AvailableReplicas, st)
}

// SetupWithManager wires the watches: every event ends as the key of the
// Alertmanagers it concerns.
func (r *AlertmanagerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.kind = alertmanagerKind{}
	b := r.controllerFor(mgr, "alertmanager", newAlertmanagerSelecting)
	if r.Options.generatesRBAC() {
		b = b.Owns(&rbacv1.Role{}).Owns(&rbacv1.RoleBinding{})
	}
	return b.Watches(&monitoringv1alpha1.AlertmanagerConfig{}, newAlertmanagerSelecting(mgr.GetClient(), false)).
		Complete(r)
}

// newAlertmanagerSelecting enqueues the Alertmanagers whose selectors match an
// AlertmanagerConfig (before or after an update) or whose
// spec.alertmanagerConfiguration names it; with namespaces set, those whose
// namespace selectors read a Namespace's labels.
func newAlertmanagerSelecting(c client.Reader, namespaces bool) *selectionEvents {
	return workloadsSelecting(c, namespaces, "Alertmanager", func(ctx context.Context) ([]selectingWorkload, error) {
		var ams monitoringv1.AlertmanagerList
		if err := c.List(ctx, &ams, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		out := make([]selectingWorkload, len(ams.Items))
		for i := range ams.Items {
			am := &ams.Items[i]
			sel, _ := selection.AlertmanagerConfigs(am)
			out[i] = selectingWorkload{key: client.ObjectKeyFromObject(am), sel: sel, names: func(obj client.Object) bool {
				ac := am.Spec.AlertmanagerConfiguration
				return ac != nil && obj.GetNamespace() == am.Namespace && obj.GetName() == ac.Name
			}}
		}
		return out, nil
	})
}
