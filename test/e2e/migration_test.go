package e2e

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/devenv"
)

// TestADeletedRuleLeftByTheExistingOperatorDoesNotFireAfterTheSwitch: the existing
// operator packed a rule whose PrometheusRule is gone into a rule ConfigMap Lookout does
// not write (prometheus-<name>-rulefiles-1, one of the slots every pod mounts). After the
// switch the real Prometheus evaluates the current rules and not that one.
func TestADeletedRuleLeftByTheExistingOperatorDoesNotFireAfterTheSwitch(t *testing.T) {
	if err := devenv.CheckPortsFree(9090, 8080); err != nil {
		t.Fatal(err)
	}
	ns := "e2e-migration"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	current := rule(ns, "current", monitoringv1.RuleGroup{Name: "current", Interval: ptrDuration("1s"), Rules: []monitoringv1.Rule{
		{Alert: "CurrentRule", Expr: intstr.FromString("vector(1)")},
	}})
	current.Labels = map[string]string{"team": "e2e-migration"}
	mustCreate(t, current)
	p := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{ServiceMonitorSelector: selectsNoMonitor, ScrapeInterval: "1s", Paused: true},
			EvaluationInterval:     "1s",
			RuleSelector:           &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e-migration"}},
		},
	}
	mustCreate(t, p)
	// What the existing operator left: a rule file of a deleted PrometheusRule, in a
	// ConfigMap with its labels and the Prometheus as controller.
	mustCreate(t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-main-rulefiles-1",
			Labels: map[string]string{"prometheus-name": "main", "app.kubernetes.io/managed-by": "prometheus-operator"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", Name: "main", UID: p.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Data: map[string]string{ns + "-deleted.yaml": "groups:\n- name: deleted\n  interval: 1s\n  rules:\n  - alert: DeletedRule\n    expr: vector(1)\n"},
	})

	// The switch: Lookout takes the Prometheus over.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Spec.Paused = false
		return k8s.Update(testCtx, p)
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the leftover rule ConfigMap is gone", func() bool {
		err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-main-rulefiles-1"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	})
	runPrometheusPod(t, ns, "main")
	waitFor(t, "the current rule fires", func() bool {
		states := alertStates(t)
		if state, ok := states["DeletedRule"]; ok {
			t.Fatalf("the deleted rule is loaded (%s)", state)
		}
		return states["CurrentRule"] == "firing"
	})
	if groups := ruleGroups(t); contains(groups, "deleted") || !contains(groups, "current") {
		t.Errorf("rule groups %v: want current, not deleted", groups)
	}
}
