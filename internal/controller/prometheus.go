// Package controller holds the reconcilers. Each is thin: gather → render →
// apply → status; the decisions live in the packages those steps name.
package controller

import (
	"context"
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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/render"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
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

// PrometheusReconciler converges one Prometheus or PrometheusAgent on the workload
// skeleton: gather (the selected monitors and rules, namespaces, referenced Secrets, and
// the Delta since the last gather) → render (the config pieces checked by Prometheus's
// own loader, StatefulSets or a DaemonSet, Services, rule ConfigMaps, RBAC; a verdict per
// monitor) → apply, configuration first → status, and status.bindings on every monitor.
type PrometheusReconciler struct {
	*workloadReconciler[client.Object]
}

// prometheusKind is what a Prometheus (or, with another servedKind, a PrometheusAgent)
// brings to the workload skeleton. It is configFirst, a clusterPruner (RBAC elsewhere), a
// retainer (removed shards, an unmanaged configuration), a statusReader (every shard) and
// a forgetter (its render memo).
type prometheusKind struct {
	served *servedKind
	// c and live write and read what retain keeps; rec tells of it.
	c    client.Client
	live client.Reader
	rec  recorder.EventRecorder
	// now is the clock of shard retention; nil: time.Now.
	now func() time.Time

	memos memories[renderMemo]
}

// renderMemo is what the kind remembers about one Prometheus between renders, to do
// only what changed. All of it can be lost (a restart, a failure): the next render then
// does the full work. Renders of one key never overlap, so it needs no lock.
type renderMemo struct {
	render *render.Cache // each monitor's checked jobs, the pieces, the RBAC objects
	gather *gather.Memo  // the objects the last gather saw, by identity
}

func (k *prometheusKind) memoOf(key types.NamespacedName) *renderMemo {
	return k.memos.of(key, func() *renderMemo { return &renderMemo{render: render.NewCache(), gather: gather.NewMemo()} })
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

func (k *prometheusKind) name() string                  { return k.served.name }
func (k *prometheusKind) newObject() client.Object      { return k.served.newObject() }
func (k *prometheusKind) paused(obj client.Object) bool { return k.served.view(obj).Spec.Paused }

func (k *prometheusKind) ownerLabels(obj client.Object) map[string]string {
	return ownerLabels(k.served.view(obj))
}
func (k *prometheusKind) ownedKinds() []schema.GroupVersionKind   { return ownedKinds }
func (k *prometheusKind) unownedKinds() []schema.GroupVersionKind { return rbacKinds }
func (k *prometheusKind) bound() []func(context.Context, client.Reader) ([]boundObject, error) {
	return boundLists
}

// statefulSet and setStatus are not used: readStatus reads every shard.
func (k *prometheusKind) statefulSet(client.Object) string                                  { return "" }
func (k *prometheusKind) setStatus(client.Object, *appsv1.StatefulSetStatus, *statusUpdate) {}

// configPiece tells the Secrets holding the pieces of p's configuration: they do not
// depend on one another and go side by side.
func (k *prometheusKind) configPiece(obj client.Object) func(workload.Object) bool {
	p := k.served.view(obj)
	pieces := map[string]bool{}
	for _, name := range promrender.ConfigPieceSecretNames(p) {
		pieces[name] = true
	}
	return func(o workload.Object) bool {
		_, secret := o.(*corev1.Secret)
		return secret && o.GetNamespace() == p.Namespace && pieces[o.GetName()]
	}
}

func (k *prometheusKind) configApplied(obj client.Object, objs []workload.Object) {
	recordConfigSize(k.served.view(obj), objs)
}

// retain keeps the StatefulSets of removed shards the shard retention policy keeps, and,
// in unmanaged mode, the user's configuration Secret.
func (k *prometheusKind) retain(ctx context.Context, obj client.Object, objs []workload.Object, st *statusUpdate) ([]client.Object, time.Duration, error) {
	p := k.served.view(obj)
	retained, due, err := k.retainShards(ctx, obj, p, objs)
	if err != nil || !promrender.UnmanagedConfig(p) {
		return retained, due, err
	}
	keep, err := k.keepUnmanagedConfig(ctx, p)
	if err != nil {
		return retained, due, err
	}
	st.unmanaged = fmt.Sprintf(unmanagedConfigMessage, p.Namespace+"/"+keep.GetName())
	return append(retained, keep), due, nil
}

func (k *prometheusKind) forget(key types.NamespacedName) {
	configBytes.DeleteLabelValues(key.Namespace, key.Name)
	configPieces.DeleteLabelValues(key.Namespace, key.Name)
	k.memos.drop(key)
}

// render gathers, with the Delta since the last gather, and renders, rebuilding only the
// monitors the Delta names. The selected objects by objectKey, for Events and bindings,
// are found on first use: a change that needs neither (the usual one, for Events;
// bindings are written off the reconcile) does not index thousands of them.
func (k *prometheusKind) render(ctx context.Context, gc *gather.Cluster, opts Options, obj client.Object, phases *phaseTimer) (*rendered, error) {
	p := k.served.view(obj)
	mem := k.memoOf(client.ObjectKeyFromObject(p))
	g, err := gc.Prometheus(ctx, p, mem.gather)
	phases.done("gather")
	if err != nil {
		return nil, err
	}
	out := &rendered{refs: g.Refs}
	g.Inputs.ReloaderImage = opts.ReloaderImage
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
	d, err := k.served.render(obj, g.Inputs)
	phases.done("render")
	c := g.Inputs.Cache.Scrape
	phases.note("cacheHits", c.Hits, "cacheMisses", c.Misses, "orderFromDelta", c.Patched)
	renderCacheMonitors.WithLabelValues("hit").Add(float64(c.Hits))
	renderCacheMonitors.WithLabelValues("miss").Add(float64(c.Misses))
	if err != nil {
		return out, err
	}
	out.objects, out.verdicts, out.selected = d.Objects, d.Verdicts, selected
	return out, nil
}

// SetupWithManager wires the watches. Every event ends as the key of the workloads of
// served it concerns, and only those.
func (r *PrometheusReconciler) SetupWithManager(mgr ctrl.Manager, served *servedKind) error {
	r.kind = &prometheusKind{served: served, c: r.Client, live: r.Live, rec: r.Recorder}
	c := mgr.GetClient()
	b := r.controllerFor(mgr, served.controller, func(c client.Reader, _ bool) *selectionEvents {
		return served.selecting(c, kindNamespace)
	})
	if served.daemonSet != nil {
		b = b.Owns(&appsv1.DaemonSet{})
	}
	return b.
		Watches(&monitoringv1.ServiceMonitor{}, served.selecting(c, kindServiceMonitor)).
		Watches(&monitoringv1.PodMonitor{}, served.selecting(c, kindPodMonitor)).
		Watches(&monitoringv1.Probe{}, served.selecting(c, kindProbe)).
		Watches(&monitoringv1alpha1.ScrapeConfig{}, served.selecting(c, kindScrapeConfig)).
		Watches(&monitoringv1.PrometheusRule{}, served.selecting(c, kindPrometheusRule)).
		Complete(r)
}
