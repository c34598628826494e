package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/render/scrape"
)

// Reasons of the Accepted condition of a monitor's or rule's binding.
const (
	// ReasonAccepted: the object is in the Prometheus's configuration (also
	// the reason of the Event when a rejected object is accepted again).
	ReasonAccepted = "Accepted"
)

// verdict is what one Prometheus decided about one selected object.
type verdict struct {
	Accepted        bool
	Reason, Message string
	Generation      int64
}

// bindingWriters bounds the status.bindings patches one writeBindings has in
// flight. The client's rate limiter (--kube-api-qps) still applies on top; the
// pool only stops a cold start from waiting out one round trip per object.
const bindingWriters = 16

// boundObject is a monitoring object with status.bindings.
type boundObject interface {
	client.Object
	bindings() *monitoringv1.ConfigResourceStatus
	object() client.Object // the typed object itself, for the client
	kind() string          // the Kind the verdicts name it by
	deepCopy() boundObject // a copy that may be mutated
}

type serviceMonitor struct{ *monitoringv1.ServiceMonitor }

func (o serviceMonitor) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o serviceMonitor) object() client.Object                        { return o.ServiceMonitor }
func (o serviceMonitor) kind() string                                 { return monitoringv1.ServiceMonitorsKind }
func (o serviceMonitor) deepCopy() boundObject                        { return serviceMonitor{o.DeepCopy()} }

type podMonitor struct{ *monitoringv1.PodMonitor }

func (o podMonitor) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o podMonitor) object() client.Object                        { return o.PodMonitor }
func (o podMonitor) kind() string                                 { return monitoringv1.PodMonitorsKind }
func (o podMonitor) deepCopy() boundObject                        { return podMonitor{o.DeepCopy()} }

type probe struct{ *monitoringv1.Probe }

func (o probe) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o probe) object() client.Object                        { return o.Probe }
func (o probe) kind() string                                 { return monitoringv1.ProbesKind }
func (o probe) deepCopy() boundObject                        { return probe{o.DeepCopy()} }

type scrapeConfig struct {
	*monitoringv1alpha1.ScrapeConfig
}

func (o scrapeConfig) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o scrapeConfig) object() client.Object                        { return o.ScrapeConfig }
func (o scrapeConfig) kind() string                                 { return monitoringv1alpha1.ScrapeConfigsKind }
func (o scrapeConfig) deepCopy() boundObject                        { return scrapeConfig{o.DeepCopy()} }

type prometheusRule struct{ *monitoringv1.PrometheusRule }

func (o prometheusRule) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o prometheusRule) object() client.Object                        { return o.PrometheusRule }
func (o prometheusRule) kind() string                                 { return monitoringv1.PrometheusRuleKind }
func (o prometheusRule) deepCopy() boundObject                        { return prometheusRule{o.DeepCopy()} }

type alertmanagerConfig struct {
	*monitoringv1alpha1.AlertmanagerConfig
}

func (o alertmanagerConfig) bindings() *monitoringv1.ConfigResourceStatus { return &o.Status }
func (o alertmanagerConfig) object() client.Object                        { return o.AlertmanagerConfig }
func (o alertmanagerConfig) kind() string                                 { return monitoringv1alpha1.AlertmanagerConfigKind }
func (o alertmanagerConfig) deepCopy() boundObject                        { return alertmanagerConfig{o.DeepCopy()} }

// alertmanagerConfigLists list the one kind an Alertmanager binds.
var alertmanagerConfigLists = []func(context.Context, client.Reader) ([]boundObject, error){
	func(ctx context.Context, c client.Reader) ([]boundObject, error) {
		var l monitoringv1alpha1.AlertmanagerConfigList
		return wrap(c.List(ctx, &l, client.UnsafeDisableDeepCopy), l.Items, func(o *monitoringv1alpha1.AlertmanagerConfig) boundObject { return alertmanagerConfig{o} })
	},
}

// boundLists list every object of one bound kind. They read the informer
// cache without copying it (client.UnsafeDisableDeepCopy): the items share
// their maps and slices with the cache, so they are only read; planBindings
// deep-copies the few that get a patch before it touches them.
var boundLists = []func(context.Context, client.Reader) ([]boundObject, error){
	func(ctx context.Context, c client.Reader) ([]boundObject, error) {
		var l monitoringv1.ServiceMonitorList
		return wrap(c.List(ctx, &l, client.UnsafeDisableDeepCopy), l.Items, func(o *monitoringv1.ServiceMonitor) boundObject { return serviceMonitor{o} })
	},
	func(ctx context.Context, c client.Reader) ([]boundObject, error) {
		var l monitoringv1.PodMonitorList
		return wrap(c.List(ctx, &l, client.UnsafeDisableDeepCopy), l.Items, func(o *monitoringv1.PodMonitor) boundObject { return podMonitor{o} })
	},
	func(ctx context.Context, c client.Reader) ([]boundObject, error) {
		var l monitoringv1.ProbeList
		return wrap(c.List(ctx, &l, client.UnsafeDisableDeepCopy), l.Items, func(o *monitoringv1.Probe) boundObject { return probe{o} })
	},
	func(ctx context.Context, c client.Reader) ([]boundObject, error) {
		var l monitoringv1alpha1.ScrapeConfigList
		return wrap(c.List(ctx, &l, client.UnsafeDisableDeepCopy), l.Items, func(o *monitoringv1alpha1.ScrapeConfig) boundObject { return scrapeConfig{o} })
	},
	listPrometheusRules,
}

// thanosRulerRuleLists lists the one kind a ThanosRuler binds.
var thanosRulerRuleLists = []func(context.Context, client.Reader) ([]boundObject, error){listPrometheusRules}

func listPrometheusRules(ctx context.Context, c client.Reader) ([]boundObject, error) {
	var l monitoringv1.PrometheusRuleList
	return wrap(c.List(ctx, &l, client.UnsafeDisableDeepCopy), l.Items, func(o *monitoringv1.PrometheusRule) boundObject { return prometheusRule{o} })
}

// wrap turns listed items into boundObjects.
func wrap[T any](err error, items []T, f func(*T) boundObject) ([]boundObject, error) {
	if err != nil {
		return nil, err
	}
	out := make([]boundObject, 0, len(items))
	for i := range items {
		out = append(out, f(&items[i]))
	}
	return out, nil
}

// objectKey names a selected object by kind, namespace and name: the key of the verdicts
// and of the selected objects (a struct, not a joined string: thousands are made per
// reconcile, and a struct key allocates nothing).
type objectKey struct{ kind, namespace, name string }

// verdictKey is how syncBindings looks up the verdict on an object.
func verdictKey(kind, namespace, name string) objectKey { return objectKey{kind, namespace, name} }

// finder gives the selected objects by objectKey: those of keys, or every one of them
// for nil keys. An index of thousands of objects is not built for the one object a change
// binds.
type finder func(keys []objectKey) map[objectKey]client.Object

// indexed is the finder of objects already indexed.
func indexed(m map[objectKey]client.Object) finder {
	return func([]objectKey) map[objectKey]client.Object { return m }
}

// writeBindings updates status.bindings on every ServiceMonitor, PodMonitor,
// Probe, ScrapeConfig and PrometheusRule: an entry for each selected one,
// none on the others. nil verdicts remove this Prometheus's entries everywhere.
//
// The first write for a Prometheus (after a start, or after a failure) goes
// over every object of the five kinds. After that only what changed since
// the last successful write is visited: objects whose verdict, generation or
// UID changed, and objects no longer selected. A reconcile that changes no
// verdict reads and writes nothing here; one new monitor costs one patch,
// not a walk over thousands of monitors.
//
// owner is any workload: lists lists every object of the kinds it binds (boundLists for a
// Prometheus), bound is its memory of the last successful write: the verdicts written,
// kept as the render returned them (a render's verdicts are never changed afterwards).
func writeBindings(ctx context.Context, c client.Client, owner client.Object, bound *[]scrape.Verdict,
	lists []func(context.Context, client.Reader) ([]boundObject, error), verdicts []scrape.Verdict, selected finder) error {
	// The usual reconcile: the same verdicts, in the same order, on the same
	// objects (a verdict carries its object's UID) as the last successful write.
	// Nothing to do, nothing to build.
	last, written := *bound, *bound != nil
	if written && verdicts != nil && slices.Equal(last, verdicts) {
		return nil
	}
	*bound = nil // known again once this write has fully succeeded
	// After a change, the verdicts are mostly those last written, in the same order: only
	// the part between the common head and tail can differ, and only it is compared.
	head, tail := 0, 0
	if written && verdicts != nil && !anyDuplicate(verdicts, last) {
		head, tail = commonEnds(last, verdicts)
	}
	allVerdicts := verdicts
	verdicts = verdicts[head : len(verdicts)-tail]
	if written {
		last = last[head : len(last)-tail]
	}
	want := make(map[objectKey]verdict, len(verdicts))
	for _, v := range verdicts {
		want[verdictKey(v.Kind, v.Namespace, v.Name)] = verdict{Accepted: v.Accepted, Reason: v.Reason, Message: v.Message, Generation: v.Generation}
	}

	var objects []boundObject
	var errs []error
	if !written || verdicts == nil {
		for _, list := range lists {
			objs, err := list(ctx, c)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			objects = append(objects, objs...)
		}
	} else {
		prev := make(map[objectKey]scrape.Verdict, len(last))
		for _, b := range last {
			prev[verdictKey(b.Kind, b.Namespace, b.Name)] = b
		}
		var changed []objectKey
		for _, v := range verdicts {
			k := verdictKey(v.Kind, v.Namespace, v.Name)
			if old, ok := prev[k]; !ok || old != v {
				changed = append(changed, k)
			}
		}
		if len(changed) > 0 {
			found := selected(changed)
			for _, k := range changed {
				if o := asBound(found[k]); o != nil {
					objects = append(objects, o)
				}
			}
		}
		for k := range prev {
			if _, still := want[k]; still {
				continue
			}
			o, err := getBound(ctx, c, k)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if o != nil {
				objects = append(objects, o)
			}
		}
	}
	if len(objects) > 0 {
		errs = append(errs, syncBindings(ctx, c, owner, objects, want))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	*bound = allVerdicts
	return nil
}

// commonEnds returns how many verdicts at the head and at the tail of verdicts are
// exactly those last written at the same ends of last.
func commonEnds(last, verdicts []scrape.Verdict) (head, tail int) {
	n := min(len(last), len(verdicts))
	for head < n && last[head] == verdicts[head] {
		head++
	}
	for tail < n-head && last[len(last)-1-tail] == verdicts[len(verdicts)-1-tail] {
		tail++
	}
	return head, tail
}

// anyDuplicate: an object given twice has two verdicts, the second a refusal; the
// head-and-tail comparison assumes one per object, so such lists are compared whole.
func anyDuplicate(verdicts, last []scrape.Verdict) bool {
	duplicate := func(v scrape.Verdict) bool { return v.Reason == scrape.ReasonDuplicate }
	return slices.ContainsFunc(verdicts, duplicate) || slices.ContainsFunc(last, duplicate)
}

// asBound wraps a selected object for syncBindings; nil for other types.
func asBound(o client.Object) boundObject {
	switch x := o.(type) {
	case *monitoringv1.ServiceMonitor:
		return serviceMonitor{x}
	case *monitoringv1.PodMonitor:
		return podMonitor{x}
	case *monitoringv1.Probe:
		return probe{x}
	case *monitoringv1alpha1.ScrapeConfig:
		return scrapeConfig{x}
	case *monitoringv1.PrometheusRule:
		return prometheusRule{x}
	case *monitoringv1alpha1.AlertmanagerConfig:
		return alertmanagerConfig{x}
	}
	return nil
}

// getBound reads one object by verdictKey from the cache; nil when it is gone.
func getBound(ctx context.Context, c client.Reader, k objectKey) (boundObject, error) {
	kind, ns, name := k.kind, k.namespace, k.name
	var obj client.Object
	switch kind {
	case monitoringv1.ServiceMonitorsKind:
		obj = &monitoringv1.ServiceMonitor{}
	case monitoringv1.PodMonitorsKind:
		obj = &monitoringv1.PodMonitor{}
	case monitoringv1.ProbesKind:
		obj = &monitoringv1.Probe{}
	case monitoringv1alpha1.ScrapeConfigsKind:
		obj = &monitoringv1alpha1.ScrapeConfig{}
	case monitoringv1.PrometheusRuleKind:
		obj = &monitoringv1.PrometheusRule{}
	case monitoringv1alpha1.AlertmanagerConfigKind:
		obj = &monitoringv1alpha1.AlertmanagerConfig{}
	default:
		return nil, fmt.Errorf("status.bindings: unknown kind in %q", k)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s %s/%s: %w", kind, ns, name, err)
	}
	return asBound(obj), nil
}

type bindingPatch struct {
	obj  boundObject // as read: the base of the patch, never modified
	idx  int         // index of this Prometheus's binding on obj, -1 if none
	want *monitoringv1.WorkloadBinding
}

// syncBindings makes the binding of Prometheus p on every object match the
// verdicts (keyed by verdictKey): an entry with Accepted True/False for each
// selected object, no entry on the others. It writes only the objects whose
// binding changes, with optimistic locking, because several Prometheus
// objects share one list; the writes go out from a bounded pool and every
// failure is reported (an object deleted meanwhile is not one). The objects
// themselves are never modified: they may be the informer cache's.
func syncBindings(ctx context.Context, c client.Client, owner client.Object, objects []boundObject, verdicts map[objectKey]verdict) error {
	return sendBindings(ctx, c, planBindings(owner, objects, verdicts))
}

// planBindings decides, without any I/O, which objects need a patch. The
// copies the patches are made on are taken only when each is sent, so that a
// first write over thousands of objects holds a few copies at a time, not one
// per object.
func planBindings(p client.Object, objects []boundObject, verdicts map[objectKey]verdict) []bindingPatch {
	var plan []bindingPatch
	for _, obj := range objects {
		v, selected := verdicts[verdictKey(obj.kind(), obj.GetNamespace(), obj.GetName())]
		have := obj.bindings().Bindings
		idx := bindingIndex(have, p)
		var want *monitoringv1.WorkloadBinding
		if selected {
			want = bindingFor(p, v, have, idx)
		}
		if idx < 0 && want == nil {
			continue
		}
		if idx >= 0 && want != nil && sameBinding(&have[idx], want) {
			continue
		}
		plan = append(plan, bindingPatch{obj: obj, idx: idx, want: want})
	}
	return plan
}

// patched returns the object to send and its patch: a copy of obj with the
// binding at idx replaced by want (added when idx < 0, removed when want is
// nil). obj itself, which may be the informer cache's, is only read.
func (b bindingPatch) patched() (boundObject, client.Patch) {
	// The unmodified object is the base of the patch.
	patch := client.MergeFromWithOptions(b.obj.object(), client.MergeFromWithOptimisticLock{})
	cp := b.obj.deepCopy()
	st := cp.bindings()
	switch {
	case b.want == nil:
		st.Bindings = append(st.Bindings[:b.idx:b.idx], st.Bindings[b.idx+1:]...)
	case b.idx < 0:
		st.Bindings = append(st.Bindings, *b.want)
	default:
		st.Bindings[b.idx] = *b.want
	}
	return cp, patch
}

// sendBindings sends the patches from at most bindingWriters goroutines and
// joins every error, in the order of the plan. Once ctx is done it stops
// sending and reports how many were left.
func sendBindings(ctx context.Context, c client.Client, plan []bindingPatch) error {
	errs := make([]error, len(plan))
	var (
		next   atomic.Int64
		unsent atomic.Int64
		wg     sync.WaitGroup
	)
	for range min(bindingWriters, len(plan)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(plan) {
					return
				}
				if ctx.Err() != nil {
					unsent.Add(1)
					continue
				}
				stepAsideForConfigs(ctx)
				errs[i] = patchBinding(ctx, c, plan[i])
			}
		})
	}
	wg.Wait()
	if n := unsent.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("%d status.bindings patches not sent: %w", n, ctx.Err()))
	}
	return errors.Join(errs...)
}

func patchBinding(ctx context.Context, c client.Client, b bindingPatch) error {
	obj, patch := b.patched()
	err := c.Status().Patch(ctx, obj.object(), patch)
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("update status.bindings of %s %s/%s: %w", b.obj.kind(), b.obj.GetNamespace(), b.obj.GetName(), err)
}

// workloadResource is the resource name bindings give a workload by.
func workloadResource(owner client.Object) string {
	switch owner.(type) {
	case *monitoringv1.Alertmanager:
		return monitoringv1.AlertmanagerName
	case *monitoringv1alpha1.PrometheusAgent:
		return monitoringv1alpha1.PrometheusAgentName
	case *monitoringv1.ThanosRuler:
		return monitoringv1.ThanosRulerName
	}
	return monitoringv1.PrometheusName
}

func bindingIndex(list []monitoringv1.WorkloadBinding, p client.Object) int {
	resource := workloadResource(p)
	for i, b := range list {
		if b.Group == monitoringv1.SchemeGroupVersion.Group && b.Resource == resource &&
			b.Namespace == p.GetNamespace() && b.Name == p.GetName() {
			return i
		}
	}
	return -1
}

// bindingFor builds the wanted binding, keeping lastTransitionTime when the
// condition status does not change.
func bindingFor(p client.Object, v verdict, list []monitoringv1.WorkloadBinding, idx int) *monitoringv1.WorkloadBinding {
	cond := monitoringv1.ConfigResourceCondition{
		Type:               monitoringv1.Accepted,
		Status:             monitoringv1.ConditionTrue,
		Reason:             ReasonAccepted,
		ObservedGeneration: v.Generation,
		LastTransitionTime: metav1.Now(),
	}
	switch {
	case !v.Accepted:
		cond.Status, cond.Reason, cond.Message = monitoringv1.ConditionFalse, v.Reason, v.Message
	case v.Reason != "":
		// Accepted with a warning (an AlertmanagerConfig field the Alertmanager's
		// release does not know, left out).
		cond.Reason, cond.Message = v.Reason, v.Message
	}
	if idx >= 0 {
		for _, c := range list[idx].Conditions {
			if c.Type == cond.Type && c.Status == cond.Status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
		}
	}
	return &monitoringv1.WorkloadBinding{
		Group: monitoringv1.SchemeGroupVersion.Group, Resource: workloadResource(p),
		Namespace: p.GetNamespace(), Name: p.GetName(),
		Conditions: []monitoringv1.ConfigResourceCondition{cond},
	}
}

func sameBinding(a, b *monitoringv1.WorkloadBinding) bool {
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
