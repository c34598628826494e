package integration

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestRemoteWriteReachesTheConfigAndFollowsItsSecret(t *testing.T) {
	ns := newNamespace(t)
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote-write"},
		StringData: map[string]string{"user": "prometheus", "password": "first-s3cret"}}
	mustCreate(t, creds)
	p := newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) {
		p.Spec.RemoteWrite = []monitoringv1.RemoteWriteSpec{{
			URL:  "https://metrics.example.com/api/v1/write",
			Name: ptrTo("central"),
			BasicAuth: &monitoringv1.BasicAuth{
				Username: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "remote-write"}, Key: "user"},
				Password: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "remote-write"}, Key: "password"},
			},
		}}
	})
	mustCreate(t, p)
	eventually(t, "remote_write ships with the password inlined, after scrape_configs", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "\nremote_write:\n") && strings.Index(cfg, "\nremote_write:\n") > strings.Index(cfg, "\nscrape_configs:") &&
			strings.Contains(cfg, "url: https://metrics.example.com/api/v1/write") && strings.Contains(cfg, "password: first-s3cret\n"), nil
	})
	eventually(t, "the Prometheus is Reconciled", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue, nil
	})

	update(t, creds, func(s *corev1.Secret) {
		s.Data = nil
		s.StringData = map[string]string{"user": "prometheus", "password": "second-s3cret"}
	})
	eventually(t, "a change to the Secret reaches the config", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "password: second-s3cret\n") && !strings.Contains(cfg, "first-s3cret"), nil
	})
	before, err := configOf(ns, "main")
	if err != nil {
		t.Fatal(err)
	}

	if err := k8s.Delete(testCtx, creds); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Reconciled=False names the field and the Secret", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionFalse && c.Reason == "InvalidRemoteWrite" &&
			strings.Contains(c.Message, "spec.remoteWrite[0].basicAuth") && strings.Contains(c.Message, "Secret "+ns+"/remote-write not found"), nil
	})
	if after, _ := configOf(ns, "main"); after != before {
		t.Errorf("the previous config was not kept after the Secret was deleted:\n%s", after)
	}

	// The Secret comes back: the Prometheus recovers without a spec change.
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote-write"},
		StringData: map[string]string{"user": "prometheus", "password": "third-s3cret"}})
	eventually(t, "a recreated Secret reaches the config and the Prometheus is Reconciled again", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		if err != nil || !strings.Contains(cfg, "password: third-s3cret\n") {
			return false, err
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue, nil
	})
}
