package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/lookout-operator/lookout/internal/apply"
	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/render/scrape"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// workloadReconciler is the one reconcile skeleton of every workload kind (Prometheus,
// PrometheusAgent, Alertmanager, ThanosRuler, PostgresCluster): get → finalize or ensure
// the finalizer → gather and render (kind) → apply → status and bindings. What differs
// between the kinds is kind; what only some kinds need is an optional part of the
// skeleton a kind turns on by implementing its interface (configFirst, clusterPruner,
// retainer, statusReader, resyncer, forgetter).
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
	// arrivals counts the requests queued per object, for a configFirst kind (nil
	// otherwise, and in unit tests: never yield).
	arrivals *arrivals
	// informers is the manager's cache, whose Secret and ConfigMap metadata informers a
	// configFirst kind waits for before an apply (nil: not waited for).
	informers ctrlcache.Informers

	memory memories[workloadMemory]
}

// workloadKind is what one kind brings to workloadReconciler.
type workloadKind[T client.Object] interface {
	// name is the kind, for messages and binding keys.
	name() string
	newObject() T
	paused(obj T) bool
	// render gathers the inputs of obj and renders them; phases (nil unless the kind is
	// configFirst) marks where the time went.
	render(ctx context.Context, g *gather.Cluster, opts Options, obj T, phases *phaseTimer) (*rendered, error)
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
// (PostgresCluster: every instance's, and what each instance reports; Prometheus: every
// shard's, or an agent's DaemonSet): writeStatus calls it instead of statefulSet and
// setStatus.
type statusReader[T client.Object] interface {
	readStatus(ctx context.Context, c client.Reader, obj T, st *statusUpdate) error
}

// resyncer is implemented by a kind whose status comes from somewhere no watch sees
// (the instances' own status endpoints): a reconcile that ends without error or
// requeue comes back after resync.
type resyncer interface {
	resync() time.Duration
}

// configFirst is implemented by a kind whose running program reads a configuration that
// a change waits for (Prometheus, PrometheusAgent: thousands of monitors, one changing at
// a time). The skeleton then makes that configuration come first:
//
//   - status patches step aside while it is rendered and written (bindingQueue.configWriting);
//   - its pieces, which depend on nothing but what came before them, are applied side by
//     side (configPiece);
//   - once it is written, the apply yields to a newer change of the same object (the
//     arrivals of the controller's queue), which then writes its configuration before the
//     rest of this apply; what this one left in flight is waited for by the next;
//   - the first render does not wait for the Secret and ConfigMap metadata informers
//     (tens of thousands of objects in a large cluster): the apply waits for them;
//   - the phases are timed (lookout_prometheus_reconcile_phase_seconds) and a slow
//     reconcile says where its time went.
//
// configApplied is told what was applied (the configuration's size, for metrics).
type configFirst[T client.Object] interface {
	configPiece(obj T) func(workload.Object) bool
	configApplied(obj T, objs []workload.Object)
}

// clusterPruner is implemented by a kind that writes objects which cannot carry an owner
// reference (Prometheus: RBAC in other namespaces and at cluster scope): those of
// unownedKinds are found by ownerLabels everywhere, pruned across namespaces and deleted
// by the finalizer.
type clusterPruner interface {
	unownedKinds() []schema.GroupVersionKind
}

// rbacOwner is a kind whose Roles and bindings are part of what it runs (a
// PostgresCluster's instance managers hold its Lease through theirs), not the
// optional grants --manage-rbac turns on: they are applied and pruned
// whatever that flag says.
type rbacOwner interface {
	ownsRBAC()
}

// retainer is implemented by a kind that keeps existing objects it no longer renders
// (Prometheus: the StatefulSets of removed shards under a retention policy, a
// configuration Secret that is the user's). retain runs before the apply: it returns what
// the prune keeps and when to look again (0: only on events); it may note on st why.
type retainer[T client.Object] interface {
	retain(ctx context.Context, obj T, objs []workload.Object, st *statusUpdate) (keep []client.Object, recheck time.Duration, err error)
}

// forgetter is implemented by a kind that keeps something of its own per object (a
// render memo, metrics): forget drops it when the object is gone.
type forgetter interface {
	forget(key types.NamespacedName)
}

// rendered is what a kind's render hands the skeleton.
type rendered struct {
	objects  []workload.Object
	verdicts []scrape.Verdict
	// selected finds the selected objects by verdictKey; refs are the referenced objects
	// ("<Kind>/<namespace>/<name>") whose events must reconcile.
	selected finder
	refs     []string
}

// workloadMemory is what the reconciler remembers about one workload between
// reconciles; all of it can be lost.
type workloadMemory struct {
	verdicts      []scrape.Verdict
	verdictsKnown bool
	bound         []scrape.Verdict
	pruned        string
	// inFlight: what the last apply left in flight when it yielded (see yielding).
	inFlight *sync.WaitGroup
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
	r.arrivals.drop(reconcile.Request{NamespacedName: key})
	if f, ok := r.kind.(forgetter); ok {
		f.forget(key)
	}
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

	cf, configFirst := r.kind.(configFirst[T])
	var phases *phaseTimer
	var yield *yielding
	if configFirst {
		var done func()
		phases, yield, done = r.configFirstRun(req)
		defer done()
		defer phases.logIfSlow(log, "kind", r.kind.name(), "object", klog.KObj(obj))
	}

	desired, err := r.kind.render(ctx, r.gather, r.Options, obj, phases)
	if desired != nil {
		r.refs.set(req.NamespacedName, desired.refs)
	}
	if stop, res, err := renderFailed(ctx, r.Recorder, obj, r.kind.name(), st, err); stop {
		return res, err
	}
	if desired.selected == nil {
		desired.selected = indexed(nil) // a kind that selects nothing
	}
	reportVerdicts(r.Recorder, obj, r.kind.name(), &mem.verdicts, &mem.verdictsKnown, desired.verdicts, desired.selected)

	var retained []client.Object
	var recheck time.Duration
	if rt, ok := r.kind.(retainer[T]); ok {
		retained, recheck, err = rt.retain(ctx, obj, desired.objects, st)
	}
	if err == nil && r.informers != nil {
		err = metadataSynced(ctx, r.informers)
	}
	if err == nil {
		err = r.apply(ctx, obj, desired, mem, yield, retained)
	}
	phases.done("apply")
	switch {
	case errors.Is(err, errYielded):
		// The configuration is written; the newer change, already queued, renders again
		// and goes on with the rest. The status waits for a reconcile that finishes.
		st.yielded = true
		reconcileYields.Inc()
		log.V(1).Info("Yielded to a newer change after writing the configuration", "kind", r.kind.name(), "object", klog.KObj(obj))
	case err != nil:
		return reportApplyFailure(r.Recorder, obj, st, err)
	default:
		st.reconciled = true
	}
	if configFirst {
		cf.configApplied(obj, desired.objects)
	}
	// Accepted now means "in the configuration the workload was handed". The bindings are
	// written off this reconcile: the next change does not wait for them.
	verdicts, selected := desired.verdicts, desired.selected
	err = r.Bindings.submit(ctx, r.bindingKey(obj), func(ctx context.Context) error {
		return writeBindings(ctx, r.Client, obj, &mem.bound, r.kind.bound(), verdicts, selected)
	})
	phases.done("bindings")
	// A retained object may be due to go: look again then.
	return ctrl.Result{RequeueAfter: recheck}, err
}

// configFirstRun readies one reconcile of a configFirst kind: its phase timer, and how
// its apply yields. done lets the status patches held back go, if the configuration
// written did not already.
func (r *workloadReconciler[T]) configFirstRun(req ctrl.Request) (phases *phaseTimer, yield *yielding, done func()) {
	// A newer event for this object from here on lets the apply yield to it.
	newer := r.arrivals.newer(req)
	// Status patches wait until this configuration is written.
	configWritten := r.Bindings.configWriting()
	phases = startPhases()
	return phases, &yielding{newer: newer, configWritten: func() {
		configWritten()
		phases.done("config")
	}}, configWritten
}

// apply applies the desired objects in order, then prunes what is no longer desired: the
// kind's owned kinds in obj's namespace, and those of a clusterPruner everywhere.
// retained are existing objects the prune keeps. yield (nil: never) is how a configFirst
// kind's apply yields; the objects a yielded apply leaves in flight are remembered for the
// next one.
func (r *workloadReconciler[T]) apply(ctx context.Context, obj T, desired *rendered, mem *workloadMemory, yield *yielding, retained []client.Object) error {
	var pieces func(workload.Object) bool
	if cf, ok := r.kind.(configFirst[T]); ok {
		pieces = cf.configPiece(obj)
	}
	var unowned []schema.GroupVersionKind
	if cp, ok := r.kind.(clusterPruner); ok {
		unowned = prunedKinds(r.Options, cp.unownedKinds())
	}
	if yield != nil {
		yield.previous = mem.inFlight
	}
	objs, owned := desired.objects, r.kind.ownedKinds()
	if _, ok := r.kind.(rbacOwner); !ok {
		objs, owned = withoutRBAC(r.Options, objs), prunedKinds(r.Options, owned)
	}
	err := applyObjects(ctx, r.Applier, obj, objs, pieces, r.kind.ownerLabels(obj),
		owned, unowned, &mem.pruned, yield, retained...)
	if yield != nil {
		mem.inFlight = yield.left
	}
	return err
}

func (r *workloadReconciler[T]) bindingKey(obj T) string {
	return r.kind.name() + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// finalize deletes what carries no owner reference (a clusterPruner's objects elsewhere),
// removes the workload's bindings from every object it selected, then lets it go; its
// other children are owner-referenced and garbage-collected.
func (r *workloadReconciler[T]) finalize(ctx context.Context, obj T, mem *workloadMemory) error {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	if cp, ok := r.kind.(clusterPruner); ok {
		if r.informers != nil {
			if err := metadataSynced(ctx, r.informers); err != nil {
				return err
			}
		}
		if mem.inFlight != nil {
			mem.inFlight.Wait() // an object created after the prune would be left behind
		}
		if _, err := r.Applier.Prune(ctx, "", r.kind.ownerLabels(obj), "", nil, prunedKinds(r.Options, cp.unownedKinds())); err != nil {
			return fmt.Errorf("clean up after %s %s: %w", r.kind.name(), klog.KObj(obj), err)
		}
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

// writeStatus patches the status the kind computes, when it changed. A reconcile that
// yielded writes none: the one that finishes does.
func (r *workloadReconciler[T]) writeStatus(ctx context.Context, obj T, st *statusUpdate) error {
	if st.yielded {
		return nil
	}
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
