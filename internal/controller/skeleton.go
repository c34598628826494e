package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/lookout-operator/lookout/internal/render/scrape"
	"github.com/lookout-operator/lookout/internal/render/workload"
	"github.com/lookout-operator/lookout/internal/selection"
)

// workloadReconciler is the reconcile skeleton of the workload kinds that select one
// kind of object and own a StatefulSet (Alertmanager, ThanosRuler): get → finalize or
// ensure the finalizer → gather and render (kind) → apply → status and bindings. What
// differs between the kinds is kind.
type workloadReconciler[T client.Object] struct {
	Client   client.Client
	Live     client.Reader
	Applier  *apply.Applier
	Recorder recorder.EventRecorder
	// Bindings writes status.bindings off the reconcile (nil: at once, in unit tests).
	Bindings *bindingQueue
	Options  Options

	kind   workloadKind[T]
	gather *gather.Cluster
	refs   *refIndex

	memory memories[workloadMemory]
}

// workloadKind is what one kind brings to workloadReconciler.
type workloadKind[T client.Object] interface {
	// name is the kind, for messages and binding keys.
	name() string
	newObject() T
	paused(obj T) bool
	// render gathers the inputs of obj and renders them.
	render(ctx context.Context, g *gather.Cluster, opts Options, obj T) (*rendered, error)
	// ownerLabels find the objects obj owns; ownedKinds are pruned in its namespace.
	ownerLabels(obj T) map[string]string
	ownedKinds() []schema.GroupVersionKind
	// bound lists every object of the kinds obj binds.
	bound() []func(context.Context, client.Reader) ([]boundObject, error)
	// statefulSet names obj's StatefulSet; setStatus writes obj's status from it.
	statefulSet(obj T) string
	setStatus(obj T, sts *appsv1.StatefulSetStatus, st *statusUpdate)
}

// statusReader is implemented by a kind whose status reads more than one StatefulSet
// (PostgresCluster: every instance's, and what each instance reports): writeStatus
// calls it instead of statefulSet and setStatus.
type statusReader[T client.Object] interface {
	readStatus(ctx context.Context, c client.Reader, obj T, st *statusUpdate) error
}

// resyncer is implemented by a kind whose status comes from somewhere no watch sees
// (the instances' own status endpoints): a reconcile that ends without error or
// requeue comes back after resync.
type resyncer interface {
	resync() time.Duration
}

// rendered is what a kind's render hands the skeleton.
type rendered struct {
	objects  []workload.Object
	verdicts []scrape.Verdict
	// selected are the selected objects by verdictKey; refs the referenced objects
	// ("<Kind>/<namespace>/<name>") whose events must reconcile.
	selected map[objectKey]client.Object
	refs     []string
}

// workloadMemory is what the reconciler remembers about one workload between
// reconciles; all of it can be lost.
type workloadMemory struct {
	verdicts      []scrape.Verdict
	verdictsKnown bool
	bound         []scrape.Verdict
	pruned        string
}

func newWorkloadReconciler[T client.Object](mgr ctrl.Manager, opts Options, applier *apply.Applier, bindings *bindingQueue) *workloadReconciler[T] {
	return &workloadReconciler[T]{
		Client:   mgr.GetClient(),
		Live:     mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("lookout"),
		Options:  opts,
		Applier:  applier,
		Bindings: bindings,
	}
}

func (r *workloadReconciler[T]) forget(key types.NamespacedName) {
	r.refs.set(key, nil)
	r.memory.drop(key)
}

// Reconcile is level-triggered: it renders the whole desired state from what exists now
// and converges to it.
func (r *workloadReconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	if rs, ok := r.kind.(resyncer); ok {
		defer func() {
			if err == nil && res.IsZero() && r.live(req.NamespacedName) {
				res.RequeueAfter = rs.resync()
			}
		}()
	}
	return r.reconcile(ctx, req)
}

// live reports whether the workload of key is known to exist (a reconcile remembered it
// and it was not forgotten).
func (r *workloadReconciler[T]) live(key types.NamespacedName) bool {
	r.memory.mu.Lock()
	defer r.memory.mu.Unlock()
	_, ok := r.memory.byKey[key]
	return ok
}

func (r *workloadReconciler[T]) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	obj := r.kind.newObject()
	if found, err := getWorkload(ctx, r.Client, req.NamespacedName, obj); !found {
		if err == nil {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	mem := r.memory.of(req.NamespacedName, nil)
	if !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, r.finalize(ctx, obj, mem)
	}
	if err := ensureFinalizer(ctx, r.Client, obj, r.kind.name()); err != nil {
		return ctrl.Result{}, err
	}

	st := &statusUpdate{}
	defer func() {
		if err := r.writeStatus(ctx, obj, st); err != nil {
			log.Error(err, "Failed to write status", "kind", r.kind.name(), "object", klog.KObj(obj))
		}
	}()
	if r.kind.paused(obj) {
		st.paused = true
		return ctrl.Result{}, nil
	}

	desired, err := r.kind.render(ctx, r.gather, r.Options, obj)
	if desired != nil {
		r.refs.set(req.NamespacedName, desired.refs)
	}
	if stop, res, err := renderFailed(ctx, r.Recorder, obj, r.kind.name(), st, err); stop {
		return res, err
	}
	reportVerdicts(r.Recorder, obj, r.kind.name(), &mem.verdicts, &mem.verdictsKnown, desired.verdicts, indexed(desired.selected))
	if err := applyObjects(ctx, r.Applier, obj, withoutRBAC(r.Options, desired.objects), nil, r.kind.ownerLabels(obj), prunedKinds(r.Options, r.kind.ownedKinds()), nil, &mem.pruned, nil); err != nil {
		return reportApplyFailure(r.Recorder, obj, st, err)
	}
	st.reconciled = true
	// Accepted now means "in the configuration the workload was handed".
	verdicts, selected := desired.verdicts, desired.selected
	return ctrl.Result{}, r.Bindings.submit(ctx, r.bindingKey(obj), func(ctx context.Context) error {
		return writeBindings(ctx, r.Client, obj, &mem.bound, r.kind.bound(), verdicts, indexed(selected))
	})
}

func (r *workloadReconciler[T]) bindingKey(obj T) string {
	return r.kind.name() + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// finalize removes the workload's bindings from every object it selected, then lets it
// go; its children are owner-referenced and garbage-collected.
func (r *workloadReconciler[T]) finalize(ctx context.Context, obj T, mem *workloadMemory) error {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	if err := r.Bindings.submitAndWait(ctx, r.bindingKey(obj), func(ctx context.Context) error {
		mem.bound = nil
		return writeBindings(ctx, r.Client, obj, &mem.bound, r.kind.bound(), nil, nil)
	}); err != nil {
		return fmt.Errorf("remove the bindings of %s %s: %w", r.kind.name(), klog.KObj(obj), err)
	}
	if err := removeFinalizer(ctx, r.Client, obj); err != nil {
		return err
	}
	r.forget(client.ObjectKeyFromObject(obj))
	return nil
}

// writeStatus patches the status the kind computes, when it changed.
func (r *workloadReconciler[T]) writeStatus(ctx context.Context, obj T, st *statusUpdate) error {
	countReconcileError(r.kind.name(), st)
	next := obj.DeepCopyObject().(T)
	if sr, ok := r.kind.(statusReader[T]); ok {
		if err := sr.readStatus(ctx, r.Client, next, st); err != nil {
			return err
		}
		return r.patchStatus(ctx, obj, next)
	}
	var sts appsv1.StatefulSet
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: r.kind.statefulSet(obj)}, &sts)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.kind.setStatus(next, &sts.Status, st)
	return r.patchStatus(ctx, obj, next)
}

// patchStatus patches the status of obj to next's, when it changed.
func (r *workloadReconciler[T]) patchStatus(ctx context.Context, obj, next T) error {
	if apiequality.Semantic.DeepEqual(obj, next) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, next, client.MergeFrom(obj)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch status of %s %s: %w", r.kind.name(), klog.KObj(obj), err)
	}
	return nil
}

// replicaCounts are the status replica counts of a workload, from its StatefulSet's.
func replicaCounts(sts *appsv1.StatefulSetStatus) (replicas, updated, available, unavailable int32) {
	return sts.Replicas, sts.UpdatedReplicas, sts.AvailableReplicas, max(sts.Replicas-sts.AvailableReplicas, 0)
}

// controllerFor is the part of a workload controller's wiring every such kind shares:
// the workload itself, its StatefulSet, the co-owned governing Service (every owner
// mapped), owned and referenced Secrets and ConfigMaps (metadata only), and Namespaces
// whose labels its namespace selector reads. selecting maps events of objects (a
// Namespace when namespaces is set) to the workloads that select them; nil for a kind
// that selects nothing.
func (r *workloadReconciler[T]) controllerFor(mgr ctrl.Manager, name string, selecting func(c client.Reader, namespaces bool) *selectionEvents) *builder.TypedBuilder[reconcile.Request] {
	r.gather = &gather.Cluster{Cache: mgr.GetClient(), Live: r.Live, Informers: mgr.GetCache()}
	r.refs = newRefIndex()
	kind := r.kind.name()
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(r.kind.newObject(), builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.StatefulSet{}).
		Watches(&corev1.Service{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), r.kind.newObject())).
		// Owned Secrets and ConfigMaps revert drift; referenced ones re-render.
		WatchesMetadata(&corev1.Secret{}, metadataHandler(r.Applier, r.refs, kind, "Secret")).
		WatchesMetadata(&corev1.ConfigMap{}, metadataHandler(r.Applier, r.refs, kind, "ConfigMap")).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.Workers})
	if selecting != nil {
		b = b.Watches(&corev1.Namespace{}, selecting(mgr.GetClient(), true))
	}
	return b
}

// selectingWorkload is one workload as a selection event handler sees it: its key, its
// selector (nil when invalid: reported on the workload itself) and, optionally, another
// way it reads an object (names reports whether it does).
type selectingWorkload struct {
	key   types.NamespacedName
	sel   *selection.Selector
	names func(client.Object) bool
}

// workloadsSelecting enqueues the workloads list returns whose selectors match an object
// before or after an update, or, with namespaces set, whose namespace selectors read a
// Namespace's labels.
func workloadsSelecting(c client.Reader, namespaces bool, what string, list func(context.Context) ([]selectingWorkload, error)) *selectionEvents {
	return &selectionEvents{namespaces: namespaces, enqueue: func(ctx context.Context, q queue, objs ...client.Object) {
		workloads, err := list(ctx)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List "+what+" objects to map an event")
			return
		}
		nsLabels := map[string]map[string]string{}
		for _, w := range workloads {
			for _, obj := range objs {
				if (!namespaces && w.names != nil && w.names(obj)) || (w.sel != nil && selects(ctx, c, w.sel, namespaces, obj, nsLabels)) {
					q.Add(reconcile.Request{NamespacedName: w.key})
					break
				}
			}
		}
	}}
}
