package webhook

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	monitoringv1beta1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestV1beta1AlertmanagerConfigsAreConvertedNotPruned: the webhook points the
// AlertmanagerConfig CRD at its conversion endpoint, so a v1beta1 object is stored as
// v1alpha1 with every field carried over (timeIntervals becomes muteTimeIntervals, Secret
// references keep their shape), the controllers read it as v1alpha1, and reading it back
// as v1beta1 gives what was written.
func TestV1beta1AlertmanagerConfigsAreConvertedNotPruned(t *testing.T) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	waitFor(t, "the CRD names the conversion webhook", func() bool {
		if err := k8s.Get(testCtx, client.ObjectKey{Name: "alertmanagerconfigs.monitoring.coreos.com"}, crd); err != nil {
			t.Logf("read the CRD: %v", err)
			return false
		}
		strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
		url, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "url")
		ca, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
		return strategy == "Webhook" && url == webhookOpts.URL+"/convert" && ca != ""
	})

	ns := newNamespace(t)
	in := &monitoringv1beta1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
		Spec: monitoringv1beta1.AlertmanagerConfigSpec{
			Route: &monitoringv1beta1.Route{
				Receiver:          "hook",
				GroupBy:           []string{"alertname"},
				Matchers:          []monitoringv1beta1.Matcher{{Name: "service", Value: "api|web", MatchType: monitoringv1beta1.MatchRegexp}},
				MuteTimeIntervals: []string{"weekends"},
			},
			Receivers: []monitoringv1beta1.Receiver{{
				Name: "hook",
				WebhookConfigs: []monitoringv1beta1.WebhookConfig{{
					URLSecret:    &monitoringv1beta1.SecretKeySelector{Name: "hook", Key: "url"},
					SendResolved: ptr.To(true),
				}},
				SlackConfigs: []monitoringv1beta1.SlackConfig{{
					APIURL:  &monitoringv1beta1.SecretKeySelector{Name: "slack", Key: "url"},
					Channel: ptr.To("#alerts"),
				}},
			}},
			TimeIntervals: []monitoringv1beta1.TimeInterval{{
				Name:          "weekends",
				TimeIntervals: []monitoringv1beta1.TimePeriod{{Weekdays: []monitoringv1beta1.WeekdayRange{"saturday", "sunday"}}},
			}},
		},
	}
	want := in.Spec.DeepCopy()
	if err := k8s.Create(testCtx, in); err != nil {
		t.Fatalf("create the v1beta1 AlertmanagerConfig: %v", err)
	}

	var stored monitoringv1alpha1.AlertmanagerConfig
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(in), &stored); err != nil {
		t.Fatalf("read it as v1alpha1: %v", err)
	}
	s := stored.Spec
	if len(s.MuteTimeIntervals) != 1 || s.MuteTimeIntervals[0].Name != "weekends" || len(s.MuteTimeIntervals[0].TimeIntervals) != 1 {
		t.Errorf("v1alpha1 muteTimeIntervals %+v, want the v1beta1 timeIntervals", s.MuteTimeIntervals)
	}
	if s.Route == nil || len(s.Route.Matchers) != 1 || s.Route.Matchers[0].MatchType != monitoringv1alpha1.MatchRegexp || s.Route.Receiver != "hook" {
		t.Errorf("v1alpha1 route %+v", s.Route)
	}
	if len(s.Receivers) != 1 || len(s.Receivers[0].WebhookConfigs) != 1 || s.Receivers[0].WebhookConfigs[0].URLSecret == nil ||
		s.Receivers[0].WebhookConfigs[0].URLSecret.Name != "hook" || len(s.Receivers[0].SlackConfigs) != 1 ||
		s.Receivers[0].SlackConfigs[0].APIURL == nil || s.Receivers[0].SlackConfigs[0].APIURL.Key != "url" {
		t.Errorf("v1alpha1 receivers %+v", s.Receivers)
	}

	var back monitoringv1beta1.AlertmanagerConfig
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(in), &back); err != nil {
		t.Fatalf("read it back as v1beta1: %v", err)
	}
	if !reflect.DeepEqual(*want, back.Spec) {
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(back.Spec)
		t.Errorf("v1beta1 → stored → v1beta1 changed the spec:\nwritten %s\nread    %s", w, g)
	}
}

// waitFor polls cond until it holds (the rotator applies the CRD's conversion on its
// first pass, which may follow the test's start).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}
