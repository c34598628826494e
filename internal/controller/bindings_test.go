package controller

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lookout-operator/lookout/internal/render/scrape"
	"github.com/lookout-operator/lookout/internal/scheme"
)

// acceptedBy is a binding of Prometheus ns/name with Accepted=True.
func acceptedBy(ns, name string, generation int64) monitoringv1.WorkloadBinding {
	return monitoringv1.WorkloadBinding{
		Group: monitoringv1.SchemeGroupVersion.Group, Resource: monitoringv1.PrometheusName, Namespace: ns, Name: name,
		Conditions: []monitoringv1.ConfigResourceCondition{{
			Type: monitoringv1.Accepted, Status: monitoringv1.ConditionTrue, Reason: ReasonAccepted,
			ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(time.Unix(1700000000, 0)),
		}},
	}
}

func testServiceMonitor(ns, name string, bindings ...monitoringv1.WorkloadBinding) *monitoringv1.ServiceMonitor {
	return &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Status:     monitoringv1.ConfigResourceStatus{Bindings: bindings},
	}
}

// patchGate holds status patches until want of them are in flight at once
// (or a deadline passes, so that a sequential writer fails the test instead
// of hanging it), and records what it saw.
type patchGate struct {
	want     int64
	deadline context.Context // done: stop holding patches
	open     chan struct{}
	once     sync.Once
	inFlight atomic.Int64
	peak     atomic.Int64

	mu      sync.Mutex
	patched map[string]int
}

func newPatchGate(t *testing.T, want int) *patchGate {
	deadline, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return &patchGate{want: int64(want), deadline: deadline, open: make(chan struct{}), patched: map[string]int{}}
}

func (g *patchGate) enter(obj client.Object) {
	n := g.inFlight.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if n >= g.want {
		g.once.Do(func() { close(g.open) })
	}
	select {
	case <-g.open:
	case <-g.deadline.Done():
	}
	g.mu.Lock()
	g.patched[obj.GetNamespace()+"/"+obj.GetName()]++
	g.mu.Unlock()
}

func (g *patchGate) leave() { g.inFlight.Add(-1) }

func TestBindingsArePatchedConcurrentlyAndEveryErrorIsReported(t *testing.T) {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "main"}}
	var objs []client.Object
	var verdicts []scrape.Verdict
	accept := func(kind, ns, name string) {
		verdicts = append(verdicts, scrape.Verdict{Kind: kind, Namespace: ns, Name: name, Accepted: true, Generation: 1})
	}
	// 150 selected ServiceMonitors without a binding yet.
	for i := range 150 {
		ns := fmt.Sprintf("app-%d", i%3)
		name := fmt.Sprintf("sm-%03d", i)
		objs = append(objs, testServiceMonitor(ns, name))
		accept(monitoringv1.ServiceMonitorsKind, ns, name)
	}
	// Already bound as wanted: no patch.
	objs = append(objs, testServiceMonitor("app-0", "current", acceptedBy("mon", "main", 1)))
	accept(monitoringv1.ServiceMonitorsKind, "app-0", "current")
	// No longer selected: main's entry goes, other's stays.
	objs = append(objs, testServiceMonitor("app-1", "dropped", acceptedBy("mon", "other", 1), acceptedBy("mon", "main", 1)))
	// Rejected now.
	objs = append(objs, testServiceMonitor("app-2", "broken", acceptedBy("mon", "main", 1)))
	verdicts = append(verdicts, scrape.Verdict{Kind: monitoringv1.ServiceMonitorsKind, Namespace: "app-2", Name: "broken",
		Reason: "InvalidRegex", Message: "missing closing )", Generation: 1})
	// Other kinds share the same pool.
	for i := range 10 {
		name := fmt.Sprintf("pm-%d", i)
		objs = append(objs, &monitoringv1.PodMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: "app-0", Name: name, Generation: 1}})
		accept(monitoringv1.PodMonitorsKind, "app-0", name)
	}
	objs = append(objs, &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: "app-0", Name: "rules", Generation: 1}})
	accept(monitoringv1.PrometheusRuleKind, "app-0", "rules")

	// Some writes fail: each must be reported. A monitor deleted meanwhile
	// (NotFound) is not a failure.
	conflict := map[string]bool{"app-0/sm-000": true, "app-1/sm-100": true, "app-2/sm-149": true, "app-0/pm-7": true, "app-0/rules": true}
	gone := "app-1/sm-001"
	gate := newPatchGate(t, bindingWriters)
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).
		WithObjects(objs...).
		WithStatusSubresource(&monitoringv1.ServiceMonitor{}, &monitoringv1.PodMonitor{}, &monitoringv1.PrometheusRule{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				gate.enter(obj)
				defer gate.leave()
				key := obj.GetNamespace() + "/" + obj.GetName()
				switch {
				case conflict[key]:
					return apierrors.NewConflict(schema.GroupResource{Group: "monitoring.coreos.com", Resource: "servicemonitors"}, obj.GetName(), fmt.Errorf("the object has been modified"))
				case key == gone:
					return apierrors.NewNotFound(schema.GroupResource{Group: "monitoring.coreos.com", Resource: "servicemonitors"}, obj.GetName())
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	var bound []scrape.Verdict // the Prometheus's memory of its last write: none yet

	err := writeBindings(context.Background(), c, p, &bound, boundLists, verdicts, nil)
	if err == nil {
		t.Fatal("writeBindings succeeded although five patches failed")
	}
	for key := range conflict {
		ns, name, _ := strings.Cut(key, "/")
		if !strings.Contains(err.Error(), ns+"/"+name+":") {
			t.Errorf("the error does not report %s:\n%v", key, err)
		}
	}
	if strings.Contains(err.Error(), gone) {
		t.Errorf("a monitor that is gone is reported as a failure:\n%v", err)
	}
	if got := strings.Count(err.Error(), "update status.bindings of"); got != len(conflict) {
		t.Errorf("got %d failures in the error, want %d:\n%v", got, len(conflict), err)
	}

	if peak := gate.peak.Load(); peak != bindingWriters {
		t.Errorf("at most %d patches were in flight at once, want exactly %d (the pool size)", peak, bindingWriters)
	}
	// 150 new + dropped + broken + 10 PodMonitors + the rule; not "current".
	if want := 150 + 2 + 10 + 1; len(gate.patched) != want {
		t.Errorf("patched %d objects, want %d", len(gate.patched), want)
	}
	for key, n := range gate.patched {
		if n != 1 {
			t.Errorf("%s patched %d times", key, n)
		}
	}
	if gate.patched["app-0/current"] != 0 {
		t.Error("an object whose binding did not change was patched")
	}

	get := func(ns, name string) *monitoringv1.ServiceMonitor {
		var sm monitoringv1.ServiceMonitor
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &sm); err != nil {
			t.Fatal(err)
		}
		return &sm
	}
	for i := range 150 {
		key := fmt.Sprintf("app-%d/sm-%03d", i%3, i)
		ns, name, _ := strings.Cut(key, "/")
		sm := get(ns, name)
		idx := bindingIndex(sm.Status.Bindings, p)
		switch {
		case conflict[key] || key == gone:
			if idx >= 0 {
				t.Errorf("%s: the failed patch was applied anyway", key)
			}
		case idx < 0:
			t.Errorf("%s: no binding for %s", key, p.Name)
		case sm.Status.Bindings[idx].Conditions[0].Status != monitoringv1.ConditionTrue:
			t.Errorf("%s: binding %+v, want Accepted=True", key, sm.Status.Bindings[idx])
		}
	}
	if sm := get("app-1", "dropped"); len(sm.Status.Bindings) != 1 || sm.Status.Bindings[0].Name != "other" {
		t.Errorf("dropped: bindings %+v, want only other's", sm.Status.Bindings)
	}
	if b := get("app-2", "broken").Status.Bindings; len(b) != 1 || b[0].Conditions[0].Status != monitoringv1.ConditionFalse ||
		b[0].Conditions[0].Reason != "InvalidRegex" || b[0].Conditions[0].LastTransitionTime.Unix() == 1700000000 {
		t.Errorf("broken: bindings %+v, want Accepted=False InvalidRegex with a new transition time", b)
	}
}

// The listed objects may be the informer cache's own: planning copies the
// ones it changes and leaves every input as it was.
func TestPlanningBindingsNeverModifiesTheListedObjects(t *testing.T) {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "main"}}
	listed := []*monitoringv1.ServiceMonitor{
		testServiceMonitor("a", "update", acceptedBy("mon", "main", 1), acceptedBy("mon", "other", 1)),
		testServiceMonitor("a", "remove", acceptedBy("mon", "main", 1), acceptedBy("mon", "other", 1)),
		testServiceMonitor("a", "add", acceptedBy("mon", "other", 1)),
	}
	// Spare capacity in the slices: an append in place would write into
	// the cache's backing array.
	for _, sm := range listed {
		sm.Status.Bindings = append(make([]monitoringv1.WorkloadBinding, 0, 8), sm.Status.Bindings...)
		sm.ResourceVersion = "7"
	}
	before := make([]*monitoringv1.ServiceMonitor, len(listed))
	objects := make([]boundObject, len(listed))
	for i, sm := range listed {
		before[i] = sm.DeepCopy()
		objects[i] = serviceMonitor{sm}
	}
	verdicts := map[objectKey]verdict{
		verdictKey(monitoringv1.ServiceMonitorsKind, "a", "update"): {Accepted: false, Reason: "InvalidRegex", Generation: 2},
		verdictKey(monitoringv1.ServiceMonitorsKind, "a", "add"):    {Accepted: true, Generation: 1},
	}

	plan := planBindings(p, objects, verdicts)
	if len(plan) != 3 {
		t.Fatalf("planned %d patches, want 3", len(plan))
	}
	for i := range listed {
		if !reflect.DeepEqual(listed[i], before[i]) {
			t.Errorf("%s was modified:\n got %+v\nwant %+v", listed[i].Name, listed[i].Status, before[i].Status)
		}
	}
	for _, b := range plan {
		obj, patch := b.patched()
		if obj.object() == client.Object(listed[0]) || obj.object() == client.Object(listed[1]) || obj.object() == client.Object(listed[2]) {
			t.Errorf("%s: the patch would send the listed object itself", obj.GetName())
		}
		data, err := patch.Data(obj.object())
		if err != nil {
			t.Fatal(err)
		}
		// Optimistic lock on the version read, and only the status changes.
		if !strings.Contains(string(data), `"resourceVersion":"7"`) || strings.Contains(string(data), `"spec"`) {
			t.Errorf("%s: patch %s", obj.GetName(), data)
		}
		got := obj.bindings().Bindings
		switch obj.GetName() {
		case "update":
			if len(got) != 2 || got[0].Conditions[0].Reason != "InvalidRegex" || got[1].Name != "other" {
				t.Errorf("update: %+v", got)
			}
		case "remove":
			if len(got) != 1 || got[0].Name != "other" {
				t.Errorf("remove: %+v", got)
			}
		case "add":
			if len(got) != 2 || got[0].Name != "other" || got[1].Name != "main" {
				t.Errorf("add: %+v", got)
			}
		}
	}
}

func TestBindingWritesStopWhenTheContextIsDone(t *testing.T) {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "main"}}
	var objects []boundObject
	verdicts := map[objectKey]verdict{}
	for i := range 40 {
		sm := testServiceMonitor("a", fmt.Sprintf("sm-%d", i))
		sm.ResourceVersion = "1"
		objects = append(objects, serviceMonitor{sm})
		verdicts[verdictKey(monitoringv1.ServiceMonitorsKind, "a", sm.Name)] = verdict{Accepted: true, Generation: 1}
	}
	var calls atomic.Int64
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			calls.Add(1)
			return nil
		},
	}).Build()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := syncBindings(ctx, c, p, objects, verdicts)
	if err == nil || !strings.Contains(err.Error(), "40 status.bindings patches not sent") {
		t.Errorf("got %v, want 40 patches reported as not sent", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d patches sent after the context was done", n)
	}
}

func TestWriteBindingsVisitsOnlyWhatChangedAfterTheFirstWrite(t *testing.T) {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "main"}}
	var sms []client.Object
	selected := map[objectKey]client.Object{}
	var verdicts []scrape.Verdict
	for i := range 50 {
		sm := testServiceMonitor("team", fmt.Sprintf("sm-%02d", i))
		sm.UID = types.UID("uid-" + sm.Name)
		sms = append(sms, sm)
		selected[verdictKey(monitoringv1.ServiceMonitorsKind, sm.Namespace, sm.Name)] = sm
		verdicts = append(verdicts, scrape.Verdict{Kind: monitoringv1.ServiceMonitorsKind, Namespace: sm.Namespace, Name: sm.Name, Generation: 1, Accepted: true, UID: sm.UID})
	}
	var lists, patches atomic.Int64
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(sms...).WithStatusSubresource(&monitoringv1.ServiceMonitor{}).
		WithInterceptorFuncs(interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
				lists.Add(1)
				return c.List(ctx, l, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				patches.Add(1)
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	var bound []scrape.Verdict // the Prometheus's memory of its last write, kept across reconciles
	ctx := context.Background()
	step := func(what string, wantLists, wantPatches int64) {
		t.Helper()
		// As the controller does: the selected objects as the cache has them now.
		for k, o := range selected {
			var fresh monitoringv1.ServiceMonitor
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), &fresh); err != nil {
				t.Fatal(err)
			}
			fresh.UID = o.GetUID()
			selected[k] = &fresh
		}
		lists.Store(0)
		patches.Store(0)
		if err := writeBindings(ctx, c, p, &bound, boundLists, verdicts, indexed(selected)); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if lists.Load() != wantLists || patches.Load() != wantPatches {
			t.Fatalf("%s: %d lists, %d patches; want %d, %d", what, lists.Load(), patches.Load(), wantLists, wantPatches)
		}
	}
	step("first write", int64(len(boundLists)), 50)
	step("nothing changed", 0, 0)

	// Each render makes verdicts of its own; the writer keeps the last ones it wrote.
	verdicts = slices.Clone(verdicts)
	verdicts[7].Accepted, verdicts[7].Reason, verdicts[7].Message = false, "InvalidRegex", "bad"
	step("one verdict changed", 0, 1)

	gone := verdicts[3]
	verdicts = slices.Delete(slices.Clone(verdicts), 3, 4)
	delete(selected, verdictKey(gone.Kind, gone.Namespace, gone.Name))
	step("one monitor no longer selected", 0, 1)
	var sm monitoringv1.ServiceMonitor
	if err := c.Get(ctx, client.ObjectKey{Namespace: gone.Namespace, Name: gone.Name}, &sm); err != nil {
		t.Fatal(err)
	}
	if bindingIndex(sm.Status.Bindings, p) >= 0 {
		t.Errorf("the binding stayed on %s after it was no longer selected", gone.Name)
	}

	// Deleted and created again between two reconciles: same name and
	// generation, a new UID and no binding yet.
	k := verdictKey(verdicts[0].Kind, verdicts[0].Namespace, verdicts[0].Name)
	if err := c.Delete(ctx, selected[k]); err != nil {
		t.Fatal(err)
	}
	again := testServiceMonitor(verdicts[0].Namespace, verdicts[0].Name)
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	again.UID = "new-uid"
	selected[k] = again
	verdicts = slices.Clone(verdicts)
	verdicts[0].UID = again.UID
	step("one monitor recreated under the same name", 0, 1)
	step("nothing changed after the recreation", 0, 0)

	// A new monitor in the middle, then a change at the very end: only the part between
	// the common head and tail is compared, and what is remembered is the whole list.
	added := testServiceMonitor("team", "sm-20a")
	added.UID = "uid-sm-20a"
	if err := c.Create(ctx, added); err != nil {
		t.Fatal(err)
	}
	selected[verdictKey(monitoringv1.ServiceMonitorsKind, added.Namespace, added.Name)] = added
	at := slices.IndexFunc(verdicts, func(v scrape.Verdict) bool { return v.Name == "sm-21" })
	verdicts = slices.Insert(slices.Clip(slices.Clone(verdicts)), at, scrape.Verdict{Kind: monitoringv1.ServiceMonitorsKind, Namespace: "team", Name: "sm-20a", Generation: 1, Accepted: true, UID: added.UID})
	step("one monitor added in the middle", 0, 1)
	step("nothing changed after the addition", 0, 0)
	verdicts = slices.Clone(verdicts)
	last := &verdicts[len(verdicts)-1]
	last.Accepted, last.Reason, last.Message = false, "InvalidRegex", "bad"
	step("the last verdict changed", 0, 1)
	step("nothing changed after the last one", 0, 0)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "team", Name: last.Name}, &sm); err != nil {
		t.Fatal(err)
	}
	if i := bindingIndex(sm.Status.Bindings, p); i < 0 || sm.Status.Bindings[i].Conditions[0].Status != monitoringv1.ConditionFalse {
		t.Errorf("%s does not carry its rejection: %+v", last.Name, sm.Status.Bindings)
	}
}
