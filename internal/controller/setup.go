package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/apply"
	"github.com/lookout-operator/lookout/internal/selection"
)

// Setup registers every controller with the manager.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	// The configuration pieces of a change are updated in protobuf: a fifth of the
	// bytes to encode and decode on both sides, and no base64.
	updates, err := protobufClient(mgr)
	if err != nil {
		return err
	}
	// One Applier: it remembers what it wrote, which is how the controllers
	// recognise the echo of their own writes.
	applier := &apply.Applier{
		Client:   mgr.GetClient(),
		Live:     mgr.GetAPIReader(),
		Metadata: mgr.GetCache(),
		Scheme:   mgr.GetScheme(),
		Cached:   cachedKinds,
		Updates:  updates,
	}
	// One queue for the status.bindings of every owner, off the reconciles.
	bindings := newBindingQueue()
	if err := mgr.Add(bindings); err != nil {
		return err
	}
	run, err := controllersToRun(mgr, opts.Controllers)
	if err != nil {
		return err
	}
	// Prometheus and PrometheusAgent: one kind on the skeleton, two served kinds.
	for _, served := range []*servedKind{servedPrometheus, servedAgent} {
		if !run[served.controller] {
			continue
		}
		r := &PrometheusReconciler{newWorkloadReconciler[client.Object](mgr, opts, applier, bindings)}
		if err := r.SetupWithManager(mgr, served); err != nil {
			return err
		}
	}
	if run["alertmanager"] {
		am := &AlertmanagerReconciler{newWorkloadReconciler[*monitoringv1.Alertmanager](mgr, opts, applier, bindings)}
		if err := am.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if run["thanosruler"] {
		tr := &ThanosRulerReconciler{newWorkloadReconciler[*monitoringv1.ThanosRuler](mgr, opts, applier, bindings)}
		if err := tr.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if run["postgrescluster"] {
		k, err := newPostgresKind(context.Background(), mgr, opts.Postgres)
		if err != nil {
			return err
		}
		pg := &PostgresClusterReconciler{newWorkloadReconciler[*postgresv1beta1.PostgresCluster](mgr, opts, applier, bindings)}
		if err := pg.SetupWithManager(mgr, k); err != nil {
			return err
		}
	}
	return nil
}

// ControllerNames are the controllers the operator can run, and the kind each serves.
var ControllerNames = []struct {
	Name string
	Kind schema.GroupKind
}{
	{"prometheus", schema.GroupKind{Group: monitoringv1.SchemeGroupVersion.Group, Kind: monitoringv1.PrometheusesKind}},
	{"prometheusagent", schema.GroupKind{Group: monitoringv1alpha1.SchemeGroupVersion.Group, Kind: monitoringv1alpha1.PrometheusAgentsKind}},
	{"alertmanager", schema.GroupKind{Group: monitoringv1.SchemeGroupVersion.Group, Kind: monitoringv1.AlertmanagersKind}},
	{"thanosruler", schema.GroupKind{Group: monitoringv1.SchemeGroupVersion.Group, Kind: monitoringv1.ThanosRulerKind}},
	{"postgrescluster", schema.GroupKind{Group: postgresv1beta1.GroupVersion.Group, Kind: postgresv1beta1.Kind}},
}

// crdWait is how long a controller named in --controllers waits for the
// apiserver to serve its CRD.
const crdWait = 2 * time.Minute

// controllersToRun decides which controllers run: those named (each must know its kind
// served), or, with none named, every one whose CRD the apiserver serves.
func controllersToRun(mgr ctrl.Manager, named []string) (map[string]bool, error) {
	known := map[string]schema.GroupKind{}
	for _, c := range ControllerNames {
		known[c.Name] = c.Kind
	}
	served := func(gk schema.GroupKind) (bool, error) {
		_, err := mgr.GetRESTMapper().RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return err == nil, err
	}
	run := map[string]bool{}
	if len(named) > 0 {
		for _, n := range named {
			gk, ok := known[n]
			if !ok {
				return nil, fmt.Errorf("unknown controller %q (known: %s)", n, controllerList())
			}
			// An install applies the CRDs and the operator together: a named
			// controller waits for the apiserver to serve its CRD.
			logged := false
			err := wait.PollUntilContextTimeout(context.Background(), time.Second, crdWait, true, func(context.Context) (bool, error) {
				ok, err := served(gk)
				if err == nil && !ok && !logged {
					mgr.GetLogger().Info("Waiting for the CRD of a controller to be served", "controller", n, "kind", gk.String(), "timeout", crdWait)
					logged = true
				}
				return ok, err
			})
			if wait.Interrupted(err) {
				return nil, fmt.Errorf("controller %s needs the %s CRD, which the apiserver has not served within %v", n, gk, crdWait)
			}
			if err != nil {
				return nil, fmt.Errorf("controller %s: %w", n, err)
			}
			run[n] = true
		}
		return run, nil
	}
	for _, c := range ControllerNames {
		ok, err := served(c.Kind)
		if err != nil {
			return nil, fmt.Errorf("controller %s: %w", c.Name, err)
		}
		if ok {
			run[c.Name] = true
		} else {
			mgr.GetLogger().Info("Not running a controller: its CRD is not installed", "controller", c.Name, "kind", c.Kind.String())
		}
	}
	return run, nil
}

func controllerList() string {
	names := make([]string, len(ControllerNames))
	for i, c := range ControllerNames {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// metadataHandler maps Secret and ConfigMap events (metadata only) to the
// owning workloads of ownerKind and the workloads whose inputs reference the
// object (refs). On create and update, the echo of the operator's own write
// (the resourceVersion it just wrote) changes nothing and is dropped;
// rendering again would only find that out at the cost of a full render. A
// deletion is never an echo.
func metadataHandler(applier *apply.Applier, refs *refIndex, ownerKind, kind string) handler.EventHandler {
	enqueue := func(q queue, obj client.Object, ownEchoPossible bool) {
		ownEcho := ownEchoPossible && applier.IsOwnWrite(kind, client.ObjectKeyFromObject(obj), obj.GetUID(), obj.GetResourceVersion())
		for _, req := range mapOwned(refs, ownerKind, kind, obj, ownEcho) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) { enqueue(q, e.Object, true) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) { enqueue(q, e.ObjectNew, true) },
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) { enqueue(q, e.Object, false) },
	}
}

// mapOwned returns the owner of an owned object (unless the event is our own
// echo) and, for referenced kinds, every workload whose inputs read it.
func mapOwned(refs *refIndex, ownerKind, kind string, obj client.Object, ownEcho bool) []reconcile.Request {
	var out []reconcile.Request
	for _, ref := range obj.GetOwnerReferences() {
		if ownEcho {
			break
		}
		if ref.Kind == ownerKind && lookoutGroup(ref.APIVersion) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}})
		}
	}
	for _, key := range refs.referrers(kind + "/" + obj.GetNamespace() + "/" + obj.GetName()) {
		out = append(out, reconcile.Request{NamespacedName: key})
	}
	return out
}

// lookoutGroup reports whether apiVersion is of a group whose kinds Lookout serves.
func lookoutGroup(apiVersion string) bool {
	return strings.HasPrefix(apiVersion, monitoringv1.SchemeGroupVersion.Group+"/") ||
		strings.HasPrefix(apiVersion, postgresv1beta1.GroupVersion.Group+"/")
}

type watchedKind int

const (
	kindServiceMonitor watchedKind = iota
	kindPodMonitor
	kindProbe
	kindScrapeConfig
	kindPrometheusRule
	kindNamespace
)

var selectorsByKind = map[watchedKind]func(*monitoringv1.Prometheus) (*selection.Selector, error){
	kindServiceMonitor: selection.ServiceMonitors,
	kindPodMonitor:     selection.PodMonitors,
	kindProbe:          selection.Probes,
	kindScrapeConfig:   selection.ScrapeConfigs,
	kindPrometheusRule: selection.Rules,
}

// selectors returns the selectors of p that read objects of the kind; a
// namespace event concerns all of them.
func (k watchedKind) selectors(p *monitoringv1.Prometheus) []*selection.Selector {
	var out []*selection.Selector
	for kind, selector := range selectorsByKind {
		if k != kindNamespace && k != kind {
			continue
		}
		// An invalid selector is reported on the Prometheus itself.
		if s, err := selector(p); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// selectingHandler enqueues the Prometheus objects whose selectors match a
// ServiceMonitor, PrometheusRule or Namespace — before or after an update, so
// that an object that stops matching is removed from the config too.
type selectingHandler struct {
	c    client.Reader
	kind watchedKind
	// list reads the workloads whose selectors are matched, as the shared renderer sees
	// them; nil: the Prometheus objects.
	list func(ctx context.Context, c client.Reader) ([]*monitoringv1.Prometheus, error)
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// prometheusSelecting is the event handler of one watched kind.
func prometheusSelecting(c client.Reader, kind watchedKind) *selectionEvents {
	h := &selectingHandler{c: c, kind: kind}
	return &selectionEvents{namespaces: kind == kindNamespace, enqueue: h.enqueue}
}

func (h *selectingHandler) enqueue(ctx context.Context, q queue, objs ...client.Object) {
	list := h.list
	if list == nil {
		list = listPrometheus
	}
	proms, err := list(ctx, h.c)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List workloads to map an event")
		return
	}
	nsLabels := map[string]map[string]string{}
	for _, p := range proms {
	selectors:
		for _, sel := range h.kind.selectors(p) {
			for _, obj := range objs {
				if h.selects(ctx, sel, p, obj, nsLabels) {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
					break selectors
				}
			}
		}
	}
}

func (h *selectingHandler) selects(ctx context.Context, sel *selection.Selector, _ *monitoringv1.Prometheus, obj client.Object, nsLabels map[string]map[string]string) bool {
	return selects(ctx, h.c, sel, h.kind == kindNamespace, obj, nsLabels)
}

// selects reports whether sel selects obj (a Namespace when namespace is set: whether it
// is one of the selected namespaces). nsLabels caches namespace labels across calls.
func selects(ctx context.Context, c client.Reader, sel *selection.Selector, namespace bool, obj client.Object, nsLabels map[string]map[string]string) bool {
	if sel.SelectsNothing() {
		return false
	}
	if namespace {
		// Only selectors that read namespace labels care; own-namespace and
		// all-namespaces selectors do not change with labels.
		if sel.OwnNamespaceOnly() || sel.AllNamespaces() {
			return false
		}
		return sel.NamespaceSelected(obj.GetName(), obj.GetLabels())
	}
	if !sel.LabelsSelected(obj.GetLabels()) {
		return false
	}
	if sel.OwnNamespaceOnly() || sel.AllNamespaces() {
		return sel.NamespaceSelected(obj.GetNamespace(), nil)
	}
	labels, ok := nsLabels[obj.GetNamespace()]
	if !ok {
		var ns corev1.Namespace
		if err := c.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, &ns); err == nil {
			labels = ns.Labels
		}
		nsLabels[obj.GetNamespace()] = labels
	}
	return sel.NamespaceSelected(obj.GetNamespace(), labels)
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// refIndex remembers which Secrets each Prometheus's monitors reference, so
// that a Secret event reaches exactly the Prometheus objects that read it.
type refIndex struct {
	mu    sync.RWMutex
	byKey map[string]map[types.NamespacedName]struct{}
	byP   map[types.NamespacedName][]string
}

func newRefIndex() *refIndex {
	return &refIndex{byKey: map[string]map[types.NamespacedName]struct{}{}, byP: map[types.NamespacedName][]string{}}
}

func (x *refIndex) set(p types.NamespacedName, keys []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, k := range x.byP[p] {
		delete(x.byKey[k], p)
		if len(x.byKey[k]) == 0 {
			delete(x.byKey, k)
		}
	}
	if len(keys) == 0 {
		delete(x.byP, p)
		return
	}
	x.byP[p] = keys
	for _, k := range keys {
		if x.byKey[k] == nil {
			x.byKey[k] = map[types.NamespacedName]struct{}{}
		}
		x.byKey[k][p] = struct{}{}
	}
}

func (x *refIndex) referrers(key string) []types.NamespacedName {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]types.NamespacedName, 0, len(x.byKey[key]))
	for p := range x.byKey[key] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// metadataObject is the metadata-only form of a core kind, as its informer caches it.
func metadataObject(kind string) client.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}

// notWaitedFor is a source whose informer the controller does not wait for before its
// workers start (it is not a SyncingSource).
type notWaitedFor struct {
	source.TypedSource[reconcile.Request]
}

// metadataKinds are the kinds watched through notWaitedFor sources.
var metadataKinds = []string{"Secret", "ConfigMap"}

// metadataSynced waits until the metadata informers of metadataKinds have synced: the
// applier reads Secrets and ConfigMaps from them, and an object missing from an informer
// that has not synced yet would look absent.
func metadataSynced(ctx context.Context, informers ctrlcache.Informers) error {
	for _, kind := range metadataKinds {
		inf, err := informers.GetInformer(ctx, metadataObject(kind), ctrlcache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		if inf.HasSynced() {
			continue
		}
		if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
			return inf.HasSynced(), nil
		}); err != nil {
			return fmt.Errorf("wait for the %s informer to sync: %w", kind, err)
		}
	}
	return nil
}

// protobufClient is a client that speaks protobuf for the built-in kinds (the manager's
// speaks JSON), over the manager's connections.
func protobufClient(mgr ctrl.Manager) (client.Client, error) {
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
	if err != nil {
		return nil, fmt.Errorf("protobuf client: %w", err)
	}
	return c, nil
}
