package controller

import (
	"context"
	"sort"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lookout-operator/lookout/internal/scheme"
)

func prom(ns, name string, sel, nsSel *metav1.LabelSelector) *monitoringv1.Prometheus {
	return &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: sel, ServiceMonitorNamespaceSelector: nsSel,
		}},
	}
}

func labelsSel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func keys(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
	var out []string
	for q.Len() > 0 {
		r, _ := q.Get()
		out = append(out, r.String())
		q.Done(r)
	}
	sort.Strings(out)
	return out
}

func TestAMonitorEventEnqueuesOnlyThePrometheusObjectsThatSelectIt(t *testing.T) {
	objs := []client.Object{
		prom("mon", "team-a", labelsSel("team", "a"), nil),
		prom("mon", "team-b", labelsSel("team", "b"), nil),
		prom("other", "team-a-elsewhere", labelsSel("team", "a"), nil),                   // own namespace only
		prom("mon", "prod-namespaces", labelsSel("team", "a"), labelsSel("env", "prod")), // by namespace labels
		prom("mon", "nothing", nil, nil),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mon", Labels: map[string]string{"env": "dev"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps", Labels: map[string]string{"env": "prod"}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
	h := prometheusSelecting(c, kindServiceMonitor)
	sm := func(ns string, l map[string]string) *monitoringv1.ServiceMonitor {
		return &monitoringv1.ServiceMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x", Labels: l, Generation: 1}}
	}
	newQueue := func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	}

	cases := []struct {
		name string
		run  func(q workqueue.TypedRateLimitingInterface[reconcile.Request])
		want []string
	}{
		{"a created team=a monitor in mon reaches team-a only", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: sm("mon", map[string]string{"team": "a"})}, q)
		}, []string{"mon/team-a"}},
		{"a monitor in a prod namespace reaches the namespace-label selector", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: sm("apps", map[string]string{"team": "a"})}, q)
		}, []string{"mon/prod-namespaces"}},
		{"a relabelled monitor reaches the old and the new selector", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, updated := sm("mon", map[string]string{"team": "a"}), sm("mon", map[string]string{"team": "b"})
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: updated}, q)
		}, []string{"mon/team-a", "mon/team-b"}},
		{"a status-only update reaches nobody", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, updated := sm("mon", map[string]string{"team": "a"}), sm("mon", map[string]string{"team": "a"})
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: updated}, q)
		}, nil},
		{"a namespace that gains env=prod reaches only the namespace-label selector", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			nh := prometheusSelecting(c, kindNamespace)
			old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: map[string]string{}}}
			updated := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: map[string]string{"env": "prod"}}}
			nh.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: updated}, q)
		}, []string{"mon/prod-namespaces"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue()
			defer q.ShutDown()
			tc.run(q)
			got := keys(q)
			if len(got) != len(tc.want) {
				t.Fatalf("enqueued %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("enqueued %v, want %v", got, tc.want)
				}
			}
		})
	}
}
