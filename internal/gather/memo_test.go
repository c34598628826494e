package gather

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lookout-operator/lookout/internal/render"
	"github.com/lookout-operator/lookout/internal/scheme"
)

// stores serves informers whose stores a test fills itself, as a watch would: an object that
// changes is replaced by a new one.
type stores map[reflect.Type]toolscache.SharedIndexInformer

func (s stores) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	t := reflect.TypeOf(obj)
	if s[t] == nil {
		s[t] = toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, obj, 0,
			toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	}
	return s[t], nil
}

func (s stores) put(t *testing.T, obj client.Object) {
	t.Helper()
	inf, _ := s.GetInformer(context.Background(), obj)
	if err := inf.(toolscache.SharedIndexInformer).GetIndexer().Update(obj); err != nil {
		t.Fatal(err)
	}
}

func (s stores) remove(t *testing.T, obj client.Object) {
	t.Helper()
	inf, _ := s.GetInformer(context.Background(), obj)
	if err := inf.(toolscache.SharedIndexInformer).GetIndexer().Delete(obj); err != nil {
		t.Fatal(err)
	}
}

// churnWorld is the monitors of a cluster, changed at random the ways a watch delivers.
type churnWorld struct {
	r      *rand.Rand
	stores stores
	// namespaces, when set, holds the Namespaces ns0 to ns4, whose labels change too.
	namespaces client.Client
	sms        []*monitoringv1.ServiceMonitor
	pms        []*monitoringv1.PodMonitor
	next       int
}

func (w *churnWorld) serviceMonitor() *monitoringv1.ServiceMonitor {
	w.next++
	sm := &monitoringv1.ServiceMonitor{ObjectMeta: metav1.ObjectMeta{
		Namespace: fmt.Sprintf("ns%d", w.r.IntN(5)), Name: fmt.Sprintf("sm%d", w.next),
		UID: types.UID(fmt.Sprintf("uid-%d", w.next)), Generation: 1, ResourceVersion: fmt.Sprint(w.next),
		Labels: map[string]string{"team": []string{"a", "a", "b"}[w.r.IntN(3)]},
	}}
	sm.Spec.Selector.MatchLabels = map[string]string{"app": sm.Name}
	sm.Spec.Endpoints = []monitoringv1.Endpoint{{Port: "web"}}
	if w.r.IntN(4) == 0 {
		// Credentials from a Secret, present or not.
		sm.Spec.Endpoints[0].BasicAuth = &monitoringv1.BasicAuth{
			Username: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("creds%d", w.r.IntN(3))}, Key: "user"},
			Password: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds0"}, Key: "pass"},
		}
	}
	return sm
}

// change makes one change, as a watch would deliver it.
func (w *churnWorld) change(t *testing.T) {
	t.Helper()
	w.next++
	switch op := w.r.IntN(10); {
	case op <= 1 || len(w.sms) < 3:
		sm := w.serviceMonitor()
		w.sms = append(w.sms, sm)
		w.stores.put(t, sm)
	case op == 2:
		i := w.r.IntN(len(w.sms))
		w.stores.remove(t, w.sms[i])
		w.sms = slices.Delete(w.sms, i, i+1)
	case op == 3, op == 4:
		// A spec change, a label change (in or out of the selection), or a status write:
		// the store holds a new object.
		i := w.r.IntN(len(w.sms))
		sm := w.sms[i].DeepCopy()
		sm.ResourceVersion = fmt.Sprint(w.next)
		switch w.r.IntN(3) {
		case 0:
			sm.Spec.Endpoints[0].Interval = monitoringv1.Duration(fmt.Sprintf("%ds", 1+w.r.IntN(50)))
			sm.Generation++
		case 1:
			sm.Labels = map[string]string{"team": []string{"a", "b"}[w.r.IntN(2)]}
		}
		w.sms[i] = sm
		w.stores.put(t, sm)
	case op == 5:
		pm := &monitoringv1.PodMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", w.r.IntN(5)), Name: fmt.Sprintf("pm%d", w.next),
			UID: types.UID(fmt.Sprintf("pm-%d", w.next)), Generation: 1, ResourceVersion: fmt.Sprint(w.next)}}
		pm.Spec.PodMetricsEndpoints = []monitoringv1.PodMetricsEndpoint{{Port: ptrTo("web")}}
		w.pms = append(w.pms, pm)
		w.stores.put(t, pm)
	case op == 6 && len(w.pms) > 0:
		i := w.r.IntN(len(w.pms))
		w.stores.remove(t, w.pms[i])
		w.pms = slices.Delete(w.pms, i, i+1)
	case op == 7:
		// Deleted, but held by a finalizer: no longer selected.
		i := w.r.IntN(len(w.sms))
		sm := w.sms[i].DeepCopy()
		now := metav1.Now()
		sm.DeletionTimestamp, sm.ResourceVersion = &now, fmt.Sprint(w.next)
		w.sms[i] = sm
		w.stores.put(t, sm)
	case op == 8 && w.namespaces != nil:
		var ns corev1.Namespace
		if err := w.namespaces.Get(context.Background(), client.ObjectKey{Name: fmt.Sprintf("ns%d", w.r.IntN(5))}, &ns); err != nil {
			t.Fatal(err)
		}
		ns.Labels = map[string]string{"watched": fmt.Sprint(w.r.IntN(2) == 0)}
		if err := w.namespaces.Update(context.Background(), &ns); err != nil {
			t.Fatal(err)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestMemoFollowsRandomChurn: gathers with a memo through random churn of the informers'
// stores (monitors added, deleted, changed, relabelled in and out of the selection, status
// writes, deletions held by finalizers, namespaces relabelled in and out of a namespace
// selector, Prometheus spec changes), each compared with a
// gather without one: the same objects, references and Secrets. Each gather's inputs are
// rendered with the Delta and the render cache, and compared with a render without either:
// the same configuration, and most renders take their order from the Delta.
func TestMemoFollowsRandomChurn(t *testing.T) {
	ctx := context.Background()
	w := &churnWorld{r: rand.New(rand.NewPCG(21, 22)), stores: stores{}}
	var nss []client.Object
	for i := range 5 {
		nss = append(nss, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns%d", i)}})
	}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "creds0", ResourceVersion: "7"},
		Data: map[string][]byte{"user": []byte("u"), "pass": []byte("p")}}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(append(nss, creds)...).Build()
	w.namespaces = c
	cluster := &Cluster{Cache: c, Live: c, Informers: w.stores}
	plain := &Cluster{Cache: c, Live: c, Informers: w.stores}

	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main", UID: "prom", Generation: 1}}
	p.Spec.ServiceMonitorSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	p.Spec.ServiceMonitorNamespaceSelector = &metav1.LabelSelector{}
	p.Spec.PodMonitorSelector = &metav1.LabelSelector{}
	// PodMonitors are selected by their namespace's labels, which the memo cannot know.
	p.Spec.PodMonitorNamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"watched": "true"}}
	// Every kind is watched, as by the controller.
	for _, o := range []client.Object{&monitoringv1.Probe{}, &monitoringv1alpha1.ScrapeConfig{}, &monitoringv1.PrometheusRule{}} {
		if _, err := w.stores.GetInformer(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for range 40 {
		sm := w.serviceMonitor()
		w.sms = append(w.sms, sm)
		w.stores.put(t, sm)
	}

	memo, renders := NewMemo(), render.NewCache()
	patched := 0
	const steps = 300
	for step := range steps {
		switch {
		case step > 0 && step%97 == 0:
			// The selector changes: a new generation of the Prometheus.
			p = p.DeepCopy()
			p.Generation++
			p.Spec.ServiceMonitorSelector.MatchLabels["team"] = []string{"a", "b"}[p.Generation%2]
		case step > 0:
			for range 1 + w.r.IntN(3) {
				w.change(t)
			}
		}
		got, err := cluster.Prometheus(ctx, p, memo)
		if err != nil {
			t.Fatalf("step %d: gather with the memo: %v", step, err)
		}
		want, err := plain.Prometheus(ctx, p, nil)
		if err != nil {
			t.Fatalf("step %d: gather without: %v", step, err)
		}
		if !sameObjects(got.Inputs.ServiceMonitors, want.Inputs.ServiceMonitors) || !sameObjects(got.Inputs.PodMonitors, want.Inputs.PodMonitors) {
			t.Fatalf("step %d: the memo's gather selected %d ServiceMonitors and %d PodMonitors, the plain one %d and %d",
				step, len(got.Inputs.ServiceMonitors), len(got.Inputs.PodMonitors), len(want.Inputs.ServiceMonitors), len(want.Inputs.PodMonitors))
		}
		if !slices.Equal(got.Refs, want.Refs) || !slices.Equal(slices.Sorted(maps.Keys(got.Inputs.Secrets)), slices.Sorted(maps.Keys(want.Inputs.Secrets))) {
			t.Fatalf("step %d: references %v, Secrets %v; want %v, %v", step, got.Refs, slices.Sorted(maps.Keys(got.Inputs.Secrets)), want.Refs, slices.Sorted(maps.Keys(want.Inputs.Secrets)))
		}
		if got.Inputs.Delta == nil {
			t.Fatalf("step %d: no Delta from a gather served by the stores", step)
		}

		in, plainIn := got.Inputs, want.Inputs
		in.Cache, in.ReloaderImage, plainIn.ReloaderImage = renders, "reloader", "reloader"
		d, err := render.Prometheus(in)
		if err != nil {
			t.Fatalf("step %d: render with the Delta: %v", step, err)
		}
		if renders.Scrape.Patched {
			patched++
		}
		wd, err := render.Prometheus(plainIn)
		if err != nil {
			t.Fatalf("step %d: render without: %v", step, err)
		}
		if !bytes.Equal(d.Config(), wd.Config()) || !reflect.DeepEqual(d.Verdicts, wd.Verdicts) {
			t.Fatalf("step %d: the render with the Delta differs from the render without:\n%s\n---\n%s", step, d.Config(), wd.Config())
		}
	}
	if patched < steps*3/4 {
		t.Fatalf("%d of %d renders took their order from the Delta; want most", patched, steps)
	}
}

// TestAMemoStartsAgainAfterAFailedGather: a gather that fails leaves no Delta to lead from,
// and the next gathers as if it had no memo.
func TestAMemoStartsAgainAfterAFailedGather(t *testing.T) {
	ctx := context.Background()
	w := &churnWorld{r: rand.New(rand.NewPCG(1, 2)), stores: stores{}}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	cluster := &Cluster{Cache: c, Live: c, Informers: w.stores}
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main", UID: "prom", Generation: 1}}
	p.Spec.ServiceMonitorSelector = &metav1.LabelSelector{}
	p.Spec.ServiceMonitorNamespaceSelector = &metav1.LabelSelector{}
	for range 5 {
		sm := w.serviceMonitor()
		sm.Spec.Endpoints[0].BasicAuth = nil
		w.stores.put(t, sm)
	}
	memo := NewMemo()
	first, err := cluster.Prometheus(ctx, p, memo)
	if err != nil {
		t.Fatal(err)
	}
	if d := first.Inputs.Delta; d == nil || d.From != 0 || len(d.Came) != 5 {
		t.Fatalf("the first gather's Delta = %+v, want 5 monitors that came, from nothing", d)
	}
	// The additional scrape configs name a Secret that does not exist: the gather fails.
	p.Spec.AdditionalScrapeConfigs = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "k"}
	if _, err := cluster.Prometheus(ctx, p, memo); err == nil {
		t.Fatal("a gather with a missing Secret succeeded")
	}
	p.Spec.AdditionalScrapeConfigs = nil
	again, err := cluster.Prometheus(ctx, p, memo)
	if err != nil {
		t.Fatal(err)
	}
	if d := again.Inputs.Delta; d == nil || d.From != 0 || len(d.Came) != 5 || len(d.Gone) != 0 {
		t.Fatalf("after a failed gather, the Delta = %+v, want all 5 monitors again, from nothing", d)
	}
}

func sameObjects[PT comparable](a, b []PT) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[PT]int{}
	for _, o := range a {
		in[o]++
	}
	for _, o := range b {
		if in[o]--; in[o] < 0 {
			return false
		}
	}
	return true
}
