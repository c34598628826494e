// Package controller holds the reconcilers. Each is thin: gather → render →
// apply → status; the decisions live in the packages those steps name.
package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
	"github.com/lookout-operator/lookout/internal/render"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/scrape"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Options configure the controllers.
type Options struct {
	// Workers is the number of concurrent reconciles.
	Workers int
	// ReloaderImage is the image of the config-reloader sidecar.
	ReloaderImage string
	// Controllers, when not empty, are the only controllers run (see
	// ControllerNames); otherwise every one whose CRD is installed.
	Controllers []string
	// Postgres configures the PostgresCluster controller.
	Postgres PostgresOptions
	// NoRBAC: the generated pods get no RBAC (FeatureGenerateRBAC says
	// what that costs and spares); the operator then writes, reads and
	// prunes no RBAC object.
	NoRBAC bool
}

// PrometheusReconciler converges one Prometheus.
type PrometheusReconciler struct {
	Client   client.Client
	Live     client.Reader
	Applier  *apply.Applier
	Recorder recorder.EventRecorder
	// Bindings writes status.bindings off the reconcile (nil: at once, in unit tests).
	Bindings *bindingQueue
	Options  Options

	gather *gather.Cluster
	refs   *refIndex
	// arrivals counts the requests queued per object (nil in unit tests: never yield).
	arrivals *arrivals
	// informers is the manager's cache, whose Secret and ConfigMap metadata informers
	// are waited for before an apply (nil in unit tests: not waited for).
	informers ctrlcache.Informers
	// kind is what is served: a Prometheus when nil, else a PrometheusAgent (agentKind).
	kind *servedKind

	memory memories[memory]
	// now is the clock of shard retention; nil: time.Now.
	now func() time.Time
}

// memory is what the reconciler remembers about one Prometheus between
// reconciles, to do only what changed. All of it can be lost (a restart, a
// failure): the next reconcile then does the full work. Reconciles of one key
// never overlap, so its fields need no lock.
type memory struct {
	render *render.Cache // each monitor's checked jobs, the pieces, the RBAC objects
	gather *gather.Memo  // the objects the last gather saw, by identity
	// verdicts as last reported in Events, in render order.
	verdicts      []scrape.Verdict
	verdictsKnown bool
	// bound is what the last successful writeBindings left; nil: unknown, walk everything.
	bound []scrape.Verdict
	// pruned is the desired set the last successful prune kept; "": unknown.
	pruned string
	// inFlight: what the last apply left in flight when it yielded (see yielding).
	inFlight *sync.WaitGroup
}

// memoryOf is the memory of one Prometheus, made on first use.
func (r *PrometheusReconciler) memoryOf(key types.NamespacedName) *memory {
	return r.memory.of(key, func() *memory { return &memory{render: render.NewCache(), gather: gather.NewMemo()} })
}

// Kinds the reconciler prunes in the Prometheus's namespace (owner-referenced).
var ownedKinds = []schema.GroupVersionKind{
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	corev1.SchemeGroupVersion.WithKind("Secret"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
}

// leftoverKinds are pruned by owner reference alone, whatever their labels (see prune).
var leftoverKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("Secret"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
}

// RBAC kinds: some live in other namespaces or at cluster scope and cannot
// carry an owner reference, so they are found by labels everywhere, pruned
// across namespaces and deleted by the finalizer.
var rbacKinds = []schema.GroupVersionKind{
	rbacv1.SchemeGroupVersion.WithKind("Role"),
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
}

// Reconcile is level-triggered: it renders the whole desired state from what
// exists now and converges to it.
func (r *PrometheusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	k := r.served()
	obj := k.newObject()
	if found, err := getWorkload(ctx, r.Client, req.NamespacedName, obj); !found {
		if err == nil {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	// The shared renderer's view of obj; obj itself when it is a Prometheus.
	p := k.view(obj)

	if !p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, obj, p)
	}
	if err := ensureFinalizer(ctx, r.Client, obj, k.name); err != nil {
		return ctrl.Result{}, err
	}

	st := &statusUpdate{}
	defer func() {
		if err := r.writeStatus(ctx, obj, p, st); err != nil {
			log.Error(err, "Failed to write status", "prometheus", klog.KObj(p))
		}
	}()

	if p.Spec.Paused {
		st.paused = true
		return ctrl.Result{}, nil
	}

	// A newer event for this object from here on lets the apply yield to it.
	newer := r.arrivals.newer(req)
	// Status patches wait until this configuration is written.
	configWritten := r.Bindings.configWriting()
	defer configWritten()
	phases := startPhases()
	defer func() {
		c := r.memoryOf(req.NamespacedName).render.Scrape
		phases.logIfSlow(log, "prometheus", klog.KObj(p), "cacheHits", c.Hits, "cacheMisses", c.Misses, "orderFromDelta", c.Patched)
	}()
	desired, selected, err := r.render(ctx, obj, p, phases)
	var specErr *render.SpecError
	if errors.As(err, &specErr) {
		// Stalled until the user changes the spec: no requeue, running
		// children stay as they are.
		st.reconcileErr = specErr
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, specErr.Reason, "Reconcile", "%s", specErr.Message)
		log.Info("Prometheus spec cannot be rendered", "prometheus", klog.KObj(p), "reason", specErr.Reason, "message", specErr.Message)
		return ctrl.Result{}, nil
	}
	if err != nil {
		st.reconcileErr = &render.SpecError{Reason: ReasonReadFailed, Message: err.Error()}
		return ctrl.Result{}, err
	}
	r.reportVerdicts(obj, desired.Verdicts, selected)

	retained, retainedDue, err := r.retainShards(ctx, obj, p, desired.Objects)
	if err == nil && promrender.UnmanagedConfig(p) {
		var keep client.Object
		if keep, err = r.keepUnmanagedConfig(ctx, p); err == nil {
			retained = append(retained, keep)
			st.unmanaged = fmt.Sprintf(unmanagedConfigMessage, p.Namespace+"/"+keep.GetName())
		}
	}
	if err == nil && r.informers != nil {
		err = metadataSynced(ctx, r.informers)
	}
	if err == nil {
		err = r.applyAll(ctx, p, desired, &yielding{newer: newer, configWritten: func() {
			configWritten()
			phases.done("config")
		}}, retained)
	}
	phases.done("apply")
	yielded := errors.Is(err, errYielded)
	if yielded {
		// The configuration is written; the newer change, already queued, renders again
		// and goes on with the rest. The status waits for a reconcile that finishes.
		st.yielded = true
		reconcileYields.Inc()
		log.V(1).Info("Yielded to a newer change after writing the configuration", "prometheus", klog.KObj(p))
	} else if err != nil {
		return reportApplyFailure(r.Recorder, obj, st, err)
	} else {
		st.reconciled = true
	}
	recordConfigSize(p, desired)
	// Accepted now means "in the configuration Prometheus was handed". The bindings are
	// written off this reconcile: the next change does not wait for them.
	verdicts := desired.Verdicts
	err = r.Bindings.submit(ctx, k.name+"/"+p.Namespace+"/"+p.Name, func(ctx context.Context) error {
		return r.writeBindings(ctx, obj, verdicts, selected)
	})
	phases.done("bindings")
	// A retained shard is deleted when its period has passed: look again then.
	return ctrl.Result{RequeueAfter: retainedDue}, err
}

// render gathers and renders; it also returns the selected objects by objectKey, for
// Events and bindings, built on first use: a change that needs neither (the usual one,
// for Events; bindings are written off the reconcile) does not index thousands of them.
func (r *PrometheusReconciler) render(ctx context.Context, obj client.Object, p *monitoringv1.Prometheus, phases *phaseTimer) (*render.Desired, finder, error) {
	mem := r.memoryOf(client.ObjectKeyFromObject(p))
	g, err := r.gather.Prometheus(ctx, p, mem.gather)
	phases.done("gather")
	if err != nil {
		return nil, nil, err
	}
	r.refs.set(client.ObjectKeyFromObject(p), g.Refs)
	g.Inputs.ReloaderImage = r.Options.ReloaderImage
	g.Inputs.Cache = mem.render
	in := g.Inputs
	each := func(add func(kind string, o client.Object)) {
		for _, o := range in.ServiceMonitors {
			add(monitoringv1.ServiceMonitorsKind, o)
		}
		for _, o := range in.PodMonitors {
			add(monitoringv1.PodMonitorsKind, o)
		}
		for _, o := range in.Probes {
			add(monitoringv1.ProbesKind, o)
		}
		for _, o := range in.ScrapeConfigs {
			add(monitoringv1alpha1.ScrapeConfigsKind, o)
		}
		for _, o := range in.Rules {
			add(monitoringv1.PrometheusRuleKind, o)
		}
	}
	all := sync.OnceValue(func() map[objectKey]client.Object {
		m := make(map[objectKey]client.Object, len(in.ServiceMonitors)+len(in.PodMonitors)+len(in.Probes)+len(in.ScrapeConfigs)+len(in.Rules))
		each(func(kind string, o client.Object) { m[verdictKey(kind, o.GetNamespace(), o.GetName())] = o })
		return m
	})
	selected := func(keys []objectKey) map[objectKey]client.Object {
		if keys == nil {
			return all()
		}
		m := make(map[objectKey]client.Object, len(keys))
		for _, k := range keys {
			m[k] = nil
		}
		each(func(kind string, o client.Object) {
			k := verdictKey(kind, o.GetNamespace(), o.GetName())
			if _, ok := m[k]; ok {
				m[k] = o
			}
		})
		return m
	}
	if g.Inputs.Cache.Scrape.Len() == 0 && len(in.ServiceMonitors)+len(in.PodMonitors)+len(in.Probes)+len(in.ScrapeConfigs) >= startRenderMonitors {
		defer relaxGC()() // the first render of a start
	}
	d, err := r.served().render(obj, g.Inputs)
	phases.done("render")
	renderCacheMonitors.WithLabelValues("hit").Add(float64(g.Inputs.Cache.Scrape.Hits))
	renderCacheMonitors.WithLabelValues("miss").Add(float64(g.Inputs.Cache.Scrape.Misses))
	return d, selected, err
}

// applyAll applies every object in order, then prunes what is no longer
// desired, RBAC in other namespaces and at cluster scope included.
// retained are the StatefulSets of removed shards the shard retention policy keeps.
// yield: see applyObjects; the objects a yielded apply leaves in flight are remembered
// for the next one.
func (r *PrometheusReconciler) applyAll(ctx context.Context, p *monitoringv1.Prometheus, d *render.Desired, yield *yielding, retained []client.Object) error {
	labels := ownerLabels(p)
	mem := r.memoryOf(client.ObjectKeyFromObject(p))
	yield.previous = mem.inFlight
	pieces := map[string]bool{}
	for _, name := range promrender.ConfigPieceSecretNames(p) {
		pieces[name] = true
	}
	// The pieces of the configuration do not depend on one another: they go side by side.
	isPiece := func(obj workload.Object) bool {
		_, secret := obj.(*corev1.Secret)
		return secret && obj.GetNamespace() == p.Namespace && pieces[obj.GetName()]
	}
	err := applyObjects(ctx, r.Applier, p, withoutRBAC(r.Options, d.Objects), isPiece, labels, ownedKinds, prunedKinds(r.Options, rbacKinds), &mem.pruned, yield, retained...)
	mem.inFlight = yield.left
	return err
}

// applyObjects applies every object in order, then prunes what owner no
// longer wants: objects of ownedKinds in its namespace that carry labels and
// its controller reference, and objects of unownedKinds anywhere that carry
// labels. Every error is collected; one failed object does not stop the rest.
// Objects several owners share (workload.Shared) are applied under a field
// manager of the owner's own and never pruned. pruned remembers the desired set
// the last successful prune kept. retained are existing objects the prune keeps
// although owner no longer wants them.
//
// The order is kept where it can matter: within one namespace, and from one API group to
// the next (see applyStages). Objects of one group in different namespaces — the Roles and
// RoleBindings of a Prometheus that discovers in hundreds of namespaces — are applied side
// by side, which is what a first start in a large cluster waits for.
//
// peers (nil: none) tells which objects may be applied side by side with their like
// neighbours in one namespace (see applyStages).
//
// yield (nil: never) is told when the first stage, which holds the configuration, is
// written, and asked before each later object. Once it says true, nothing more is
// started, nothing is pruned, and errYielded is returned at once, leaving the objects in
// flight to finish on their own (yield.left; the owner's next apply waits for them after
// its configuration): a newer change is waiting, and its configuration comes before the
// rest of this apply. What was applied stays applied, so the next reconcile goes on from
// there.
func applyObjects[T client.Object](ctx context.Context, applier *apply.Applier, owner client.Object, objs []T, peers func(T) bool, labels map[string]string,
	ownedKinds, unownedKinds []schema.GroupVersionKind, pruned *string, yield *yielding, retained ...client.Object) error {
	log := ctrl.LoggerFrom(ctx)
	failed := make([]error, len(objs)) // by index, so that the joined message keeps the order
	yielded := applyStages(objs, peers, yield, func(i int) {
		obj := objs[i]
		var opts []apply.Option
		if workload.Shared(obj) {
			opts = append(opts, apply.Shared(apply.FieldOwner+"/"+string(owner.GetUID())))
		}
		res, err := applier.Apply(ctx, obj, opts...)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// A namespace being deleted takes its monitors with it; the
			// next reconcile no longer wants anything there.
			log.V(1).Info("Skipped an object in a terminating namespace", "object", klog.KObj(obj))
			return
		}
		failed[i] = err
		if err == nil && res != apply.Unchanged {
			log.V(1).Info("Applied", "kind", obj.GetObjectKind().GroupVersionKind().Kind, "object", klog.KObj(obj), "created", res == apply.Created)
		}
	})
	if yielded {
		// Objects may still be in flight and write their results: this reconcile reads
		// none of them. The next one applies everything again anyway.
		return errYielded
	}
	var errs, foreignErrs []error
	for _, err := range failed {
		var foreign *apply.NotOwnedError
		var recreating *apply.RecreatingError
		switch {
		case err == nil:
		case errors.As(err, &foreign) || errors.As(err, &recreating):
			foreignErrs = append(foreignErrs, err)
		default:
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := prune(ctx, applier, owner, objs, labels, ownedKinds, unownedKinds, pruned, retained); err != nil {
		return err
	}
	if len(foreignErrs) > 0 {
		return errors.Join(foreignErrs...)
	}
	return nil
}

// errYielded: applyObjects stopped early for a newer change (see yield).
var errYielded = errors.New("yielded to a newer change")

// yielding is how an apply learns of a newer change (see applyObjects).
type yielding struct {
	// newer reports whether a newer change is waiting.
	newer func() bool
	// configWritten, when set, is called once the first stage is applied.
	configWritten func()
	// previous, when set, are the objects the owner's last apply left in flight when it
	// yielded: waited for once the configuration is written, before anything else, so
	// that no object is ever applied twice at once.
	previous *sync.WaitGroup
	// left is set by an apply that yields: the objects it left in flight.
	left *sync.WaitGroup
}

func (y *yielding) now() bool { return y != nil && y.newer != nil && y.newer() }

// applyParallelism bounds the objects of one owner applied at once.
const applyParallelism = 8

// applyStages calls apply for every index of objs. Consecutive objects of one API group
// form a stage, and stages run one after the other. Within a stage, the objects of one
// namespace are applied one after the other in their order (pieces before the config that
// loads them, a Role before its RoleBinding), and different namespaces side by side, at
// most applyParallelism at once; consecutive objects of one namespace that peers (when not
// nil) says depend on nothing but what came before them, the pieces of a configuration, are
// applied side by side too. A stage of one namespace runs on the caller's goroutine.
// After the first stage, yield (when not nil) is asked before each object is started;
// applyStages returns true when it said yes. Objects already started then finish on
// their own: yield.left tells when.
func applyStages[T client.Object](objs []T, peers func(T) bool, yield *yielding, apply func(i int)) bool {
	for start := 0; start < len(objs); {
		if start > 0 && yield != nil {
			if yield.configWritten != nil {
				yield.configWritten()
				yield.configWritten = nil
			}
			if yield.previous != nil {
				yield.previous.Wait()
				yield.previous = nil
			}
		}
		group := objs[start].GetObjectKind().GroupVersionKind().Group
		end := start + 1
		for end < len(objs) && objs[end].GetObjectKind().GroupVersionKind().Group == group {
			end++
		}
		var order []string
		byNamespace := map[string][]int{}
		for i := start; i < end; i++ {
			ns := objs[i].GetNamespace()
			if _, ok := byNamespace[ns]; !ok {
				order = append(order, ns)
			}
			byNamespace[ns] = append(byNamespace[ns], i)
		}
		var stopped atomic.Bool
		stop := func() bool {
			if start == 0 || !yield.now() {
				return false
			}
			stopped.Store(true)
			return true
		}
		if len(order) == 1 {
			for i := start; i < end; {
				if stop() {
					return true
				}
				i = applyRun(objs, i, end, peers, apply)
			}
		} else {
			var peerAt func(i int) bool // peers of the objects a worker is given by index
			if peers != nil {
				peerAt = func(i int) bool { return peers(objs[i]) }
			}
			work := make(chan []int)
			var wg sync.WaitGroup
			for range min(applyParallelism, len(order)) {
				wg.Go(func() {
					for indexes := range work {
						for k := 0; k < len(indexes); {
							if k > 0 && stop() {
								break
							}
							k = applyRun(indexes, k, len(indexes), peerAt, func(k int) { apply(indexes[k]) })
						}
					}
				})
			}
			for _, ns := range order {
				if stop() {
					break
				}
				work <- byNamespace[ns]
			}
			close(work)
			if stopped.Load() {
				yield.left = &wg
				return true
			}
			wg.Wait()
			if stopped.Load() { // a worker stopped between two objects of one namespace
				return true
			}
		}
		start = end
	}
	return false
}

// applyRun applies item i of items, or, when peers says that it and the items after it
// (up to end) are peers, all of them side by side. It returns the index after what it
// applied.
func applyRun[S ~[]E, E any](items S, i, end int, peers func(E) bool, apply func(i int)) int {
	j := i + 1
	if peers != nil && peers(items[i]) {
		for j < end && peers(items[j]) {
			j++
		}
	}
	if j == i+1 {
		apply(i)
		return j
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, applyParallelism)
	for k := i; k < j; k++ {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			apply(k)
		})
	}
	wg.Wait()
	return j
}

// prune deletes what owner no longer wants (see applyObjects).
func prune[T client.Object](ctx context.Context, applier *apply.Applier, owner client.Object, objs []T, labels map[string]string,
	ownedKinds, unownedKinds []schema.GroupVersionKind, pruned *string, retained []client.Object) error {
	log := ctrl.LoggerFrom(ctx)
	keep := make([]client.Object, 0, len(objs)+len(retained))
	var set strings.Builder
	set.Grow(len(*pruned))
	add := func(obj client.Object) {
		keep = append(keep, obj)
		for _, s := range [...]string{obj.GetObjectKind().GroupVersionKind().Kind, "/", obj.GetNamespace(), "/", obj.GetName(), "\n"} {
			set.WriteString(s)
		}
	}
	for _, obj := range objs {
		if !workload.Shared(obj) {
			add(obj)
		}
	}
	// A retained object whose period has passed leaves this list, which changes the set.
	for _, obj := range retained {
		add(obj)
	}
	// Nothing can need pruning while the desired set stays the one the last
	// successful prune kept: what this operator no longer wants leaves the
	// set first. The first reconcile of each owner in a process prunes
	// always, which also takes care of leftovers from earlier runs.
	if *pruned == set.String() {
		return nil
	}
	*pruned = "" // known again once this prune succeeds
	deleted, err := applier.Prune(ctx, owner.GetNamespace(), labels, owner.GetUID(), keep, ownedKinds)
	if err != nil {
		return err
	}
	if len(unownedKinds) > 0 {
		// What cannot point at the owner: in any namespace.
		more, err := applier.Prune(ctx, "", labels, "", keep, unownedKinds)
		if err != nil {
			return err
		}
		deleted = append(deleted, more...)
	}
	// What another operator made for the same owner and Lookout does not write — after a
	// migration, rule ConfigMaps beyond Lookout's, TLS asset Secrets — carries the owner's
	// reference but not Lookout's labels.
	leftovers, err := applier.PruneLeftovers(ctx, owner.GetNamespace(), owner.GetUID(), keep, leftoverKinds)
	if err != nil {
		return err
	}
	deleted = append(deleted, leftovers...)
	if len(deleted) > 0 {
		log.Info("Deleted objects that are no longer desired", "owner", klog.KObj(owner), "objects", deleted)
	}
	*pruned = set.String()
	return nil
}

// applyFailure is the Reconciled=False cause of an applyObjects error and when to look
// again. A write the apiserver refused is retried with backoff (retry). A StatefulSet being
// recreated brings its owner back through its deletion event, with a short recheck in
// case; an object Lookout does not own is its owner's business, rechecked now and then.
func applyFailure(err error) (cause *render.SpecError, recheck time.Duration, retry bool) {
	var foreign *apply.NotOwnedError
	var recreating *apply.RecreatingError
	switch {
	case errors.As(err, &foreign):
		return &render.SpecError{Reason: ReasonObjectNotOwned, Message: err.Error()}, notOwnedRecheck, false
	case errors.As(err, &recreating):
		return &render.SpecError{Reason: ReasonRecreating, Message: err.Error()}, recreatingRecheck, false
	}
	return &render.SpecError{Reason: ReasonApplyFailed, Message: err.Error()}, 0, true
}

// reportApplyFailure sets the status cause of an applyObjects error and returns how the
// reconcile ends.
func reportApplyFailure(rec recorder.EventRecorder, owner client.Object, st *statusUpdate, err error) (ctrl.Result, error) {
	cause, recheck, retry := applyFailure(err)
	st.reconcileErr = cause
	if retry {
		return ctrl.Result{}, err
	}
	kind := corev1.EventTypeWarning
	if cause.Reason == ReasonRecreating {
		kind = corev1.EventTypeNormal
	}
	rec.Eventf(owner, nil, kind, cause.Reason, "Reconcile", "%s", cause.Message)
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// finalize deletes the objects without an owner reference, then lets the
// Prometheus go. Owner-referenced children are left to the garbage collector.
func (r *PrometheusReconciler) finalize(ctx context.Context, obj client.Object, p *monitoringv1.Prometheus) error {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	kind := r.served().name
	if r.informers != nil {
		if err := metadataSynced(ctx, r.informers); err != nil {
			return err
		}
	}
	if wg := r.memoryOf(client.ObjectKeyFromObject(p)).inFlight; wg != nil {
		wg.Wait() // an object created after the prune would be left behind
	}
	if _, err := r.Applier.Prune(ctx, "", ownerLabels(p), "", nil, prunedKinds(r.Options, rbacKinds)); err != nil {
		return fmt.Errorf("clean up after %s %s: %w", kind, klog.KObj(p), err)
	}
	if err := r.Bindings.submitAndWait(ctx, kind+"/"+p.Namespace+"/"+p.Name, func(ctx context.Context) error {
		return r.writeBindings(ctx, obj, nil, nil)
	}); err != nil {
		return fmt.Errorf("remove the bindings of %s %s: %w", kind, klog.KObj(p), err)
	}
	if err := removeFinalizer(ctx, r.Client, obj); err != nil {
		return err
	}
	r.forget(client.ObjectKeyFromObject(p))
	return nil
}

func (r *PrometheusReconciler) forget(key types.NamespacedName) {
	configBytes.DeleteLabelValues(key.Namespace, key.Name)
	configPieces.DeleteLabelValues(key.Namespace, key.Name)
	r.refs.set(key, nil)
	r.memory.drop(key)
	r.arrivals.drop(reconcile.Request{NamespacedName: key})
}

// reportVerdicts emits an Event on a monitor when its verdict for this
// Prometheus changes (rejected, or accepted again), not on every reconcile.
func (r *PrometheusReconciler) reportVerdicts(owner client.Object, verdicts []scrape.Verdict, selected finder) {
	mem := r.memoryOf(client.ObjectKeyFromObject(owner))
	reportVerdicts(r.Recorder, owner, r.served().name, &mem.verdicts, &mem.verdictsKnown, verdicts, selected)
}

// reportVerdicts emits an Event on a selected object when owner's verdict on it
// changes: rejected, or accepted again. last and known are owner's memory of
// the verdicts last reported: verdicts itself is kept, as a render's verdicts are
// never changed once returned. selected is asked only for the objects an Event is due on.
func reportVerdicts(rec recorder.EventRecorder, owner client.Object, ownerKind string, last *[]scrape.Verdict, known *bool, verdicts []scrape.Verdict, selected finder) {
	prev := *last
	if *known && slices.Equal(prev, verdicts) {
		return // the usual reconcile: no verdict changed
	}
	*last, *known = verdicts, true

	// Only rejections make Events worth comparing with: a rejection that is
	// new or different, and an acceptance after a rejection. Accepted is the
	// normal case and stays quiet. So only the last rejections are indexed.
	// An acceptance with a warning (a Reason) counts as a rejection here.
	notable := func(v scrape.Verdict) bool { return !v.Accepted || v.Reason != "" }
	rejected := map[objectKey]scrape.Verdict{}
	for _, v := range prev {
		if notable(v) {
			rejected[verdictKey(v.Kind, v.Namespace, v.Name)] = v
		}
	}
	var due []scrape.Verdict
	for _, v := range verdicts {
		if !notable(v) && len(rejected) == 0 {
			continue
		}
		old, wasRejected := rejected[verdictKey(v.Kind, v.Namespace, v.Name)]
		if !notable(v) && !wasRejected {
			continue // accepted before too, or new
		}
		if notable(v) && wasRejected && old.Accepted == v.Accepted && old.Reason == v.Reason && old.Message == v.Message {
			continue // the same rejection as before
		}
		due = append(due, v)
	}
	if len(due) == 0 {
		return
	}
	keys := make([]objectKey, len(due))
	for i, v := range due {
		keys[i] = verdictKey(v.Kind, v.Namespace, v.Name)
	}
	found := selected(keys)
	for i, v := range due {
		obj := found[keys[i]]
		if obj == nil {
			continue
		}
		if v.Accepted && v.Reason != "" {
			rec.Eventf(obj, owner, corev1.EventTypeWarning, v.Reason, "Select",
				"Accepted by %s %s/%s with a warning: %s", ownerKind, owner.GetNamespace(), owner.GetName(), v.Message)
			continue
		}
		if v.Accepted {
			rec.Eventf(obj, owner, corev1.EventTypeNormal, ReasonAccepted, "Select",
				"Accepted by %s %s/%s", ownerKind, owner.GetNamespace(), owner.GetName())
			continue
		}
		rejections.WithLabelValues(v.Kind, v.Reason).Inc()
		rec.Eventf(obj, owner, corev1.EventTypeWarning, v.Reason, "Select",
			"Rejected by %s %s/%s: %s", ownerKind, owner.GetNamespace(), owner.GetName(), v.Message)
	}
}
