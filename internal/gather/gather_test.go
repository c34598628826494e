package gather

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lookout-operator/lookout/internal/render"
	"github.com/lookout-operator/lookout/internal/scheme"
)

func selector(name, key string, optional bool) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}
}

// alertingPrometheus sends alerts to alertmanager-main with basic auth from the Secret
// "am-auth", plus the additional alertmanager and alert relabel configs of the Secret "alerting".
func alertingPrometheus(opts ...func(*monitoringv1.PrometheusSpec)) *monitoringv1.Prometheus {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main"}}
	p.Spec.Alerting = &monitoringv1.AlertingSpec{Alertmanagers: []monitoringv1.AlertmanagerEndpoints{{
		Name: "alertmanager-main", Port: intstr.FromString("web"),
		BasicAuth: &monitoringv1.BasicAuth{Username: *selector("am-auth", "user", false), Password: *selector("am-auth", "password", false)},
	}}}
	p.Spec.AdditionalAlertManagerConfigs = selector("alerting", "alertmanagers.yaml", false)
	p.Spec.AdditionalAlertRelabelConfigs = selector("alerting", "relabel.yaml", false)
	for _, o := range opts {
		o(&p.Spec)
	}
	return p
}

func gatherFrom(t *testing.T, p *monitoringv1.Prometheus, objs ...client.Object) (*Result, error) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).Build()
	return (&Cluster{Cache: c, Live: c}).Prometheus(context.Background(), p, nil)
}

func secret(name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: name}, StringData: data}
}

func TestAlertingSecretsAreReadAndWatched(t *testing.T) {
	res, err := gatherFrom(t, alertingPrometheus(),
		secret("alerting", map[string]string{"alertmanagers.yaml": "- static_configs: []\n", "relabel.yaml": "- action: labeldrop\n  regex: tmp\n"}),
		secret("am-auth", map[string]string{"user": "u", "password": "p"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Inputs.AdditionalAlertManagerConfigs); got != "- static_configs: []\n" {
		t.Errorf("additional alertmanager configs = %q", got)
	}
	if got := string(res.Inputs.AdditionalAlertRelabelConfigs); got != "- action: labeldrop\n  regex: tmp\n" {
		t.Errorf("additional alert relabel configs = %q", got)
	}
	if res.Inputs.Secrets["monitoring/am-auth"] == nil {
		t.Error("the basic auth Secret of the alertmanager endpoint was not read")
	}
	for _, ref := range []string{"Secret/monitoring/alerting", "Secret/monitoring/am-auth"} {
		if !slices.Contains(res.Refs, ref) {
			t.Errorf("Refs %v lack %s: a change to it would not re-render", res.Refs, ref)
		}
	}
	res.Inputs.ReloaderImage = "reloader:test"
	if d, err := render.Prometheus(res.Inputs); err != nil || !strings.Contains(string(d.Config()), "password: p\n") {
		t.Errorf("render of the gathered inputs: %v", err)
	}
}

func TestMissingAdditionalAlertingSecretsAreSpecErrors(t *testing.T) {
	cases := []struct {
		name    string
		p       *monitoringv1.Prometheus
		objs    []client.Object
		reason  string
		message string
	}{
		{"refuses a missing Secret of additional alertmanager configs", alertingPrometheus(), nil,
			"AdditionalAlertManagerConfigsNotFound", "spec.additionalAlertManagerConfigs: Secret monitoring/alerting does not exist"},
		{"refuses a missing key of additional alert relabel configs", alertingPrometheus(),
			[]client.Object{secret("alerting", map[string]string{"alertmanagers.yaml": "[]"})},
			"AdditionalAlertRelabelConfigsNotFound", `spec.additionalAlertRelabelConfigs: Secret monitoring/alerting has no key "relabel.yaml"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gatherFrom(t, tc.p, tc.objs...)
			var se *render.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("gather = %v, want a *render.SpecError", err)
			}
			if se.Reason != tc.reason || se.Message != tc.message {
				t.Errorf("SpecError %s: %q; want %s: %q", se.Reason, se.Message, tc.reason, tc.message)
			}
		})
	}
}

func TestOptionalAdditionalAlertingSecretsMayBeMissing(t *testing.T) {
	p := alertingPrometheus(func(s *monitoringv1.PrometheusSpec) {
		s.AdditionalAlertManagerConfigs.Optional = ptr(true)
		s.AdditionalAlertRelabelConfigs.Optional = ptr(true)
	})
	res, err := gatherFrom(t, p, secret("am-auth", map[string]string{"user": "u", "password": "p"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Inputs.AdditionalAlertManagerConfigs != nil || res.Inputs.AdditionalAlertRelabelConfigs != nil {
		t.Error("missing optional Secrets gave content")
	}
}

func ptr[T any](v T) *T { return &v }
