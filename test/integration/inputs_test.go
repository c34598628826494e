package integration

import (
	"os"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestAScrapeConfigShipsAndIsBound(t *testing.T) {
	ns := newNamespace(t)
	sc := &monitoringv1alpha1.ScrapeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "static", Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1alpha1.ScrapeConfigSpec{StaticConfigs: []monitoringv1alpha1.StaticConfig{{
			Targets: []monitoringv1alpha1.Target{"node-exporter.example:9100"},
		}}},
	}
	mustCreate(t, sc)
	mustCreate(t, newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) {
		p.Spec.ScrapeConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	}))
	eventually(t, "the ScrapeConfig's job ships and its binding is Accepted", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		if err != nil || !slices.Contains(jobsIn(cfg), "scrapeConfig/"+ns+"/static") {
			return false, nil
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(sc), sc); err != nil {
			return false, err
		}
		return len(sc.Status.Bindings) == 1 && sc.Status.Bindings[0].Conditions[0].Status == monitoringv1.ConditionTrue, nil
	})
}

func TestATLSCAFromAConfigMapThatArrivesLaterIsInlinedWithoutARestart(t *testing.T) {
	ca, err := os.ReadFile("../../internal/render/scrape/testdata/tls/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	sm := newServiceMonitor(ns, "tls", func(sm *monitoringv1.ServiceMonitor) {
		sm.Spec.Endpoints[0].TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{
			CA: monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "trust"}, Key: "ca.crt"}},
		}}
	})
	mustCreate(t, sm)
	mustCreate(t, newPrometheus(ns, "main"))
	eventually(t, "the monitor is rejected: ConfigMapNotFound", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(sm), sm); err != nil {
			return false, err
		}
		c := binding(sm, ns, "main")
		return c != nil && c.Reason == "ConfigMapNotFound", nil
	})
	mustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "trust"}, Data: map[string]string{"ca.crt": string(ca)}})
	eventually(t, "the CA is inlined in the job and the monitor accepted", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		if err != nil || !strings.Contains(cfg, "BEGIN CERTIFICATE") {
			return false, nil
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(sm), sm); err != nil {
			return false, err
		}
		c := binding(sm, ns, "main")
		return c != nil && c.Status == monitoringv1.ConditionTrue, nil
	})
}

func TestInvalidAdditionalScrapeConfigsKeepThePreviousConfig(t *testing.T) {
	ns := newNamespace(t)
	extra := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extra"},
		StringData: map[string]string{"jobs.yaml": "- job_name: extra\n  static_configs:\n  - targets: [a.example:80]\n"}}
	mustCreate(t, extra)
	p := newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) {
		p.Spec.AdditionalScrapeConfigs = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}, Key: "jobs.yaml"}
	})
	mustCreate(t, p)
	eventually(t, "the additional job ships", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && slices.Contains(jobsIn(cfg), "extra"), nil
	})
	before, _ := configOf(ns, "main")

	update(t, extra, func(s *corev1.Secret) {
		s.Data = nil
		s.StringData = map[string]string{"jobs.yaml": "- job_name: extra\n  scrape_interval: banana\n"}
	})
	eventually(t, "Reconciled=False names the problem", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionFalse && c.Reason == "InvalidAdditionalScrapeConfigs" &&
			strings.Contains(c.Message, "banana"), nil
	})
	if after, _ := configOf(ns, "main"); after != before {
		t.Error("the previous config was not kept")
	}
}
