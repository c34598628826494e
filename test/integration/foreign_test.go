package integration

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestObjectsLookoutDoesNotOwnAreLeftAlone: a Service of the name Lookout would write,
// made by someone else (kube-prometheus ships its own prometheus-<name>), is neither
// changed nor adopted nor deleted with the Prometheus; the Prometheus says why it is
// not fully reconciled, with an Event, and everything else is applied.
func TestObjectsLookoutDoesNotOwnAreLeftAlone(t *testing.T) {
	ns := newNamespace(t)
	user := &corev1.Service{
		ObjectMeta: metaName(ns, "prometheus-k8s"),
		Spec: corev1.ServiceSpec{
			Ports:    []corev1.ServicePort{{Name: "web", Port: 9090, TargetPort: intstr.FromString("web")}},
			Selector: map[string]string{"app.kubernetes.io/name": "prometheus", "team": "mine"},
		},
	}
	mustCreate(t, user)
	before := user.DeepCopy()

	p := newPrometheus(ns, "k8s", func(p *monitoringv1.Prometheus) {
		p.Annotations = map[string]string{"lookout.dev/service": "true"}
	})
	mustCreate(t, p)
	eventually(t, "Reconciled=False with reason ObjectNotOwned naming the Service, the StatefulSet applied anyway", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		if c == nil || c.Status != monitoringv1.ConditionFalse || c.Reason != "ObjectNotOwned" || !strings.Contains(c.Message, "prometheus-k8s") {
			return false, nil
		}
		return k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}, &appsv1.StatefulSet{}) == nil, nil
	})
	eventually(t, "a Warning Event says so", func() (bool, error) { return eventFor(t, ns, "k8s", "ObjectNotOwned"), nil })

	var live corev1.Service
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(user), &live); err != nil {
		t.Fatal(err)
	}
	if live.ResourceVersion != before.ResourceVersion || len(live.OwnerReferences) != 0 || live.Spec.Selector["team"] != "mine" {
		t.Errorf("the user's Service was changed: resourceVersion %s→%s, owners %v, selector %v",
			before.ResourceVersion, live.ResourceVersion, live.OwnerReferences, live.Spec.Selector)
	}

	// Without the annotation Lookout wants no such Service: Reconciled=True, the user's
	// Service still untouched.
	update(t, p, func(p *monitoringv1.Prometheus) { p.Annotations = nil })
	eventually(t, "Reconciled=True once Lookout no longer wants the Service", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == p.Generation, nil
	})

	if err := k8s.Delete(testCtx, p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the StatefulSet is garbage-collected", func() (bool, error) {
		return apierrors.IsNotFound(k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}, &appsv1.StatefulSet{})), nil
	})
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(user), &live); err != nil || live.ResourceVersion != before.ResourceVersion {
		t.Errorf("the user's Service after the Prometheus was deleted: %v (resourceVersion %s, was %s)", err, live.ResourceVersion, before.ResourceVersion)
	}
}
