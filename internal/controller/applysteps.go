package controller

// The apply step of the skeleton: every desired object with server-side apply, in an
// order that keeps dependencies, side by side where nothing depends on it; then the prune;
// and how a failed apply ends the reconcile.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/lookout-operator/lookout/internal/apply"
	"github.com/lookout-operator/lookout/internal/render"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// leftoverKinds are pruned by owner reference alone, whatever their labels (see prune).
var leftoverKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("Secret"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
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
