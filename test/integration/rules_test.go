package integration

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newRule(ns, name, expr string) *monitoringv1.PrometheusRule {
	return &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{
			Name:  name,
			Rules: []monitoringv1.Rule{{Record: "lookout:" + strings.ReplaceAll(name, "-", "_"), Expr: intstr.FromString(expr)}},
		}}},
	}
}

func ruleBinding(r *monitoringv1.PrometheusRule, ns, name string) *monitoringv1.ConfigResourceCondition {
	for _, b := range r.Status.Bindings {
		if b.Resource == "prometheuses" && b.Namespace == ns && b.Name == name && len(b.Conditions) > 0 {
			return &b.Conditions[0]
		}
	}
	return nil
}

func TestPrometheusRulesBecomeRuleFilesAndABadOneIsRejectedAlone(t *testing.T) {
	ns := newNamespace(t)
	good := newRule(ns, "good", "sum(up)")
	bad := newRule(ns, "bad", "sum(up")
	mustCreate(t, good)
	mustCreate(t, bad)
	mustCreate(t, newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) {
		p.Spec.RuleSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	}))

	var cm corev1.ConfigMap
	cmKey := client.ObjectKey{Namespace: ns, Name: "prometheus-main-rulefiles-0"}
	goodFile := ns + "-good-" + string(good.UID) + ".yaml"
	badFile := ns + "-bad-" + string(bad.UID) + ".yaml"
	eventually(t, "the good rule's file ships in prometheus-main-rulefiles-0", func() (bool, error) {
		if err := k8s.Get(testCtx, cmKey, &cm); err != nil {
			return false, nil
		}
		_, hasGood := cm.Data[goodFile]
		_, hasBad := cm.Data[badFile]
		return hasGood && !hasBad && cm.Labels["prometheus-name"] == "main", nil
	})
	if !strings.Contains(cm.Data[goodFile], "sum(up)") {
		t.Errorf("rule file does not hold the expression:\n%s", cm.Data[goodFile])
	}
	// The rule ConfigMaps are applied before the config Secret.
	eventually(t, "the config loads the rule files", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "/etc/prometheus/rules/prometheus-main-rulefiles-0/*.yaml"), nil
	})

	eventually(t, "the bad rule is Accepted=False with the parser's message", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(bad), bad); err != nil {
			return false, err
		}
		c := ruleBinding(bad, ns, "main")
		return c != nil && c.Status == monitoringv1.ConditionFalse && strings.Contains(c.Message, "parse error"), nil
	})
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(good), good); err != nil {
		t.Fatal(err)
	}
	if c := ruleBinding(good, ns, "main"); c == nil || c.Status != monitoringv1.ConditionTrue {
		t.Errorf("good rule binding = %+v, want Accepted=True", c)
	}

	update(t, bad, func(r *monitoringv1.PrometheusRule) {
		r.Spec.Groups[0].Rules[0].Expr = intstr.FromString("sum(up)")
	})
	eventually(t, "the fixed rule ships", func() (bool, error) {
		if err := k8s.Get(testCtx, cmKey, &cm); err != nil {
			return false, err
		}
		_, ok := cm.Data[badFile]
		return ok, nil
	})
}
