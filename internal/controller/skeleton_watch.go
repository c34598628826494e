package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/selection"
)

// controllerFor is the part of a workload controller's wiring every such kind shares:
// the workload itself, its StatefulSet, the co-owned governing Service (every owner
// mapped), owned and referenced Secrets and ConfigMaps (metadata only), and Namespaces
// whose labels its namespace selector reads. selecting maps events of objects (a
// Namespace when namespaces is set) to the workloads that select them; nil for a kind
// that selects nothing. A configFirst kind gets a queue that counts arrivals (to yield
// to a newer change), and Secret and ConfigMap informers its workers do not wait for.
func (r *workloadReconciler[T]) controllerFor(mgr ctrl.Manager, name string, selecting func(c client.Reader, namespaces bool) *selectionEvents) *builder.TypedBuilder[reconcile.Request] {
	r.gather = &gather.Cluster{Cache: mgr.GetClient(), Live: r.Live, Informers: mgr.GetCache()}
	r.refs = newRefIndex()
	kind := r.kind.name()
	opts := controller.Options{MaxConcurrentReconciles: r.Options.Workers}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(r.kind.newObject(), builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.StatefulSet{}).
		// The governing Service is co-owned (no controller reference): map every owner,
		// not only the controller.
		Watches(&corev1.Service{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), r.kind.newObject()))
	// Secrets and ConfigMaps are cached as metadata only. Owned ones (the configuration,
	// rule ConfigMaps) revert drift and deletion; referenced ones (credentials, TLS
	// material) re-render.
	if _, ok := r.kind.(configFirst[T]); ok {
		// In a large cluster these two informers are the last to sync (tens of thousands
		// of objects), and the render does not read them (it reads the referenced objects
		// by name): the workers start without waiting for them, and a reconcile waits for
		// them only before it applies (metadataSynced), so that the first render runs
		// while they sync.
		r.arrivals = &arrivals{}
		r.informers = mgr.GetCache()
		opts.NewQueue = r.arrivals.newQueue(mgr.GetLogger())
		for _, k := range metadataKinds {
			b = b.WatchesRawSource(notWaitedFor{source.Kind(mgr.GetCache(), metadataObject(k), metadataHandler(r.Applier, r.refs, kind, k))})
		}
	} else {
		b = b.WatchesMetadata(&corev1.Secret{}, metadataHandler(r.Applier, r.refs, kind, "Secret")).
			WatchesMetadata(&corev1.ConfigMap{}, metadataHandler(r.Applier, r.refs, kind, "ConfigMap"))
	}
	b = b.WithOptions(opts)
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
