// Package controller holds the reconcilers. Each is thin: gather → render →
// apply → status; the decisions live in the packages those steps name.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
