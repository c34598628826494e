package controller

import (
	"context"
	"errors"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/lookout-operator/lookout/internal/apply"
	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/render"
	amrender "github.com/lookout-operator/lookout/internal/render/alertmanager"
	"github.com/lookout-operator/lookout/internal/render/scrape"
	"github.com/lookout-operator/lookout/internal/selection"
)

// AlertmanagerReconciler converges one Alertmanager: gather (the selected
// AlertmanagerConfigs, the user's config Secret, referenced Secrets) → render
// (merged alertmanager.yaml checked by Alertmanager's own parser, objects) →
// apply → status, and status.bindings on every AlertmanagerConfig.
type AlertmanagerReconciler struct {
	Client   client.Client
	Live     client.Reader
	Applier  *apply.Applier
	Recorder recorder.EventRecorder
	// Bindings writes status.bindings off the reconcile (nil: at once, in unit tests).
	Bindings *bindingQueue
	Options  Options

	gather *gather.Cluster
	refs   *refIndex

	memory memories[alertmanagerMemory]
}

// alertmanagerMemory is what the reconciler remembers about one Alertmanager
// between reconciles; all of it can be lost.
type alertmanagerMemory struct {
	verdicts      []scrape.Verdict
	verdictsKnown bool
	bound         []boundVerdict
	pruned        string
}

func (r *AlertmanagerReconciler) forget(key types.NamespacedName) {
	r.refs.set(key, nil)
	r.memory.drop(key)
}

// Kinds the Alertmanager reconciler prunes in the Alertmanager's namespace.
var alertmanagerOwnedKinds = []schema.GroupVersionKind{
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
	corev1.SchemeGroupVersion.WithKind("Secret"),
	rbacv1.SchemeGroupVersion.WithKind("Role"),
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
}

// Reconcile is level-triggered: it renders the whole desired state from what
// exists now and converges to it.
func (r *AlertmanagerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	am := &monitoringv1.Alertmanager{}
	if found, err := getWorkload(ctx, r.Client, req.NamespacedName, am); !found {
		if err == nil {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	mem := r.memory.of(req.NamespacedName, nil)
	if !am.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, am, mem)
	}
	if err := ensureFinalizer(ctx, r.Client, am, monitoringv1.AlertmanagersKind); err != nil {
		return ctrl.Result{}, err
	}

	st := &statusUpdate{}
	defer func() {
		if err := r.writeStatus(ctx, am, st); err != nil {
			log.Error(err, "Failed to write status", "alertmanager", klog.KObj(am))
		}
	}()
	if am.Spec.Paused {
		st.paused = true
		return ctrl.Result{}, nil
	}

	g, err := r.gather.Alertmanager(ctx, am)
	var desired *render.AlertmanagerDesired
	if err == nil {
		r.refs.set(req.NamespacedName, g.Refs)
		g.Inputs.ReloaderImage = r.Options.ReloaderImage
		desired, err = render.Alertmanager(g.Inputs)
	}
	var specErr *render.SpecError
	if errors.As(err, &specErr) {
		// Stalled until the user changes the spec or the base config: no
		// requeue, and the running Alertmanager keeps its last good config.
		st.reconcileErr = specErr
		r.Recorder.Eventf(am, nil, corev1.EventTypeWarning, specErr.Reason, "Reconcile", "%s", specErr.Message)
		log.Info("Alertmanager cannot be rendered", "alertmanager", klog.KObj(am), "reason", specErr.Reason, "message", specErr.Message)
		return ctrl.Result{}, nil
	}
	if err != nil {
		st.reconcileErr = &render.SpecError{Reason: ReasonReadFailed, Message: err.Error()}
		return ctrl.Result{}, err
	}
	selected := map[string]client.Object{}
	for _, c := range g.Inputs.Configs {
		selected[monitoringv1alpha1.AlertmanagerConfigKind+"/"+c.Namespace+"/"+c.Name] = c
	}
	reportVerdicts(r.Recorder, am, monitoringv1.AlertmanagersKind, &mem.verdicts, &mem.verdictsKnown, desired.Verdicts, selected)

	labels := map[string]string{amrender.LabelAlertmanager: am.Name}
	if err := applyObjects(ctx, r.Applier, am, desired.Objects, labels, alertmanagerOwnedKinds, nil, &mem.pruned); err != nil {
		return reportApplyFailure(r.Recorder, am, st, err)
	}
	st.reconciled = true
	// Accepted now means "in the configuration the Alertmanager was handed".
	verdicts := desired.Verdicts
	return ctrl.Result{}, r.Bindings.submit(ctx, "Alertmanager/"+am.Namespace+"/"+am.Name, func(ctx context.Context) error {
		return writeBindings(ctx, r.Client, am, &mem.bound, alertmanagerConfigLists, verdicts, selected)
	})
}

// finalize removes the Alertmanager's bindings from every AlertmanagerConfig,
// then lets it go; its children are owner-referenced and garbage-collected.
func (r *AlertmanagerReconciler) finalize(ctx context.Context, am *monitoringv1.Alertmanager, mem *alertmanagerMemory) error {
	if !controllerutil.ContainsFinalizer(am, Finalizer) {
		return nil
	}
	if err := r.Bindings.submitAndWait(ctx, "Alertmanager/"+am.Namespace+"/"+am.Name, func(ctx context.Context) error {
		mem.bound = nil
		return writeBindings(ctx, r.Client, am, &mem.bound, alertmanagerConfigLists, nil, nil)
	}); err != nil {
		return fmt.Errorf("remove the bindings of Alertmanager %s: %w", klog.KObj(am), err)
	}
	if err := removeFinalizer(ctx, r.Client, am); err != nil {
		return err
	}
	r.forget(client.ObjectKeyFromObject(am))
	return nil
}

func (r *AlertmanagerReconciler) writeStatus(ctx context.Context, am *monitoringv1.Alertmanager, st *statusUpdate) error {
	countReconcileError(monitoringv1.AlertmanagersKind, st)
	next := am.Status.DeepCopy()
	next.Paused = am.Spec.Paused
	next.Selector = labels.SelectorFromSet(amrender.SelectorLabels(am.Name)).String()
	var sts appsv1.StatefulSet
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: am.Namespace, Name: amrender.StatefulSetName(am.Name)}, &sts)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	next.Replicas, next.UpdatedReplicas, next.AvailableReplicas = sts.Status.Replicas, sts.Status.UpdatedReplicas, sts.Status.AvailableReplicas
	next.UnavailableReplicas = max(sts.Status.Replicas-sts.Status.AvailableReplicas, 0)
	setConditions(&next.Conditions, am.Generation, amrender.Replicas(am), next.AvailableReplicas, st)
	if apiequality.Semantic.DeepEqual(&am.Status, next) {
		return nil
	}
	patch := client.MergeFrom(am.DeepCopy())
	am.Status = *next
	if err := r.Client.Status().Patch(ctx, am, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch status of Alertmanager %s/%s: %w", am.Namespace, am.Name, err)
	}
	return nil
}

// SetupWithManager wires the watches: every event ends as the key of the
// Alertmanagers it concerns.
func (r *AlertmanagerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.gather = &gather.Cluster{Cache: mgr.GetClient(), Live: r.Live, Informers: mgr.GetCache()}
	r.refs = newRefIndex()
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named("alertmanager").
		For(&monitoringv1.Alertmanager{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.StatefulSet{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		// The governing Service is co-owned: map every owner.
		Watches(&corev1.Service{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &monitoringv1.Alertmanager{})).
		// Owned Secrets revert drift; referenced ones (the user's config,
		// receiver credentials) re-render.
		WatchesMetadata(&corev1.Secret{}, metadataHandler(r.Applier, r.refs, monitoringv1.AlertmanagersKind, "Secret")).
		WatchesMetadata(&corev1.ConfigMap{}, metadataHandler(r.Applier, r.refs, monitoringv1.AlertmanagersKind, "ConfigMap")).
		Watches(&monitoringv1alpha1.AlertmanagerConfig{}, newAlertmanagerSelecting(c, false)).
		Watches(&corev1.Namespace{}, newAlertmanagerSelecting(c, true)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.Workers}).
		Complete(r)
}

// alertmanagerSelecting enqueues the Alertmanagers whose selectors match an
// AlertmanagerConfig (before or after an update) or whose
// spec.alertmanagerConfiguration names it; with namespaces set, those whose
// namespace selectors read a Namespace's labels.
type alertmanagerSelecting struct {
	c          client.Reader
	namespaces bool
}

func newAlertmanagerSelecting(c client.Reader, namespaces bool) *selectionEvents {
	h := &alertmanagerSelecting{c: c, namespaces: namespaces}
	return &selectionEvents{namespaces: namespaces, enqueue: h.enqueue}
}

func (h *alertmanagerSelecting) enqueue(ctx context.Context, q queue, objs ...client.Object) {
	var ams monitoringv1.AlertmanagerList
	if err := h.c.List(ctx, &ams, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List Alertmanager objects to map an event")
		return
	}
	nsLabels := map[string]map[string]string{}
	for i := range ams.Items {
		am := &ams.Items[i]
		sel, err := selection.AlertmanagerConfigs(am)
		for _, obj := range objs {
			global := !h.namespaces && am.Spec.AlertmanagerConfiguration != nil &&
				obj.GetNamespace() == am.Namespace && obj.GetName() == am.Spec.AlertmanagerConfiguration.Name
			if global || (err == nil && selects(ctx, h.c, sel, h.namespaces, obj, nsLabels)) {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(am)})
				break
			}
		}
	}
}
