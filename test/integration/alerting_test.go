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

func TestAlertingReachesTheConfigAndFollowsTheAdditionalAlertmanagersSecret(t *testing.T) {
	ns := newNamespace(t)
	extra := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alertmanagers"},
		StringData: map[string]string{"am.yaml": "- static_configs:\n  - targets: ['first.example.com:9093']\n"}}
	mustCreate(t, extra)
	p := newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) {
		p.Spec.Alerting = &monitoringv1.AlertingSpec{Alertmanagers: []monitoringv1.AlertmanagerEndpoints{{
			Namespace: &ns, Name: "alertmanager-main", Port: intstr.FromString("web"),
			APIVersion: ptrTo(monitoringv1.AlertmanagerAPIVersion("v2")),
		}}}
		p.Spec.AdditionalAlertManagerConfigs = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "alertmanagers"}, Key: "am.yaml"}
	})
	mustCreate(t, p)
	eventually(t, "the alerting section ships, after scrape_configs", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "\nalerting:\n") && strings.Index(cfg, "\nalerting:\n") > strings.Index(cfg, "\nscrape_configs:") &&
			strings.Contains(cfg, "regex: alertmanager-main") && strings.Contains(cfg, "first.example.com:9093"), nil
	})

	update(t, extra, func(s *corev1.Secret) {
		s.Data = nil
		s.StringData = map[string]string{"am.yaml": "- static_configs:\n  - targets: ['second.example.com:9093']\n"}
	})
	eventually(t, "a change to the Secret's content reaches the config", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "second.example.com:9093") && !strings.Contains(cfg, "first.example.com"), nil
	})
	before, _ := configOf(ns, "main")

	update(t, extra, func(s *corev1.Secret) {
		s.Data = nil
		s.StringData = map[string]string{"am.yaml": "- static_configs:\n  - targets: ['third.example.com:9093']\n  timeout: banana\n"}
	})
	eventually(t, "Reconciled=False names the field", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionFalse && c.Reason == "InvalidAdditionalAlertManagerConfigs" &&
			strings.Contains(c.Message, "spec.additionalAlertManagerConfigs") && strings.Contains(c.Message, "banana"), nil
	})
	if after, _ := configOf(ns, "main"); after != before {
		t.Errorf("the previous config was not kept:\n%s", after)
	}

	if err := k8s.Delete(testCtx, extra); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a deleted Secret is reported by name", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Reason == "AdditionalAlertManagerConfigsNotFound", nil
	})
	if after, _ := configOf(ns, "main"); after != before {
		t.Error("the previous config was not kept after the Secret was deleted")
	}
}

func ptrTo[T any](v T) *T { return &v }
