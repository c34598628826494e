package integration

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kube-prometheus-stack's Alertmanager with the chart's default values (release "kps"):
// Lookout takes it over with Reconciled=True, and its StatefulSet and Service carry the
// web port name http-web wherever the existing operator puts it.
func TestKubePrometheusStacksAlertmanagerIsReconciled(t *testing.T) {
	ns := newNamespace(t)
	var nsObj corev1.Namespace
	if err := k8s.Get(testCtx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
		t.Fatal(err)
	}
	update(t, &nsObj, func(n *corev1.Namespace) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels["release"] = "kps"
	})
	release := map[string]string{"release": "kps"}
	mustCreate(t, &corev1.Secret{ObjectMeta: metaName(ns, "alertmanager-kps-alertmanager"), StringData: map[string]string{
		"alertmanager.yaml": "route:\n  receiver: 'null'\n  group_by: [namespace]\n  routes:\n  - receiver: 'null'\n    matchers: [alertname = \"Watchdog\"]\nreceivers:\n- name: 'null'\n",
	}})
	amc := &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team", Labels: release},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route: &monitoringv1alpha1.Route{Receiver: "hook"},
			Receivers: []monitoringv1alpha1.Receiver{{Name: "hook", WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
				URL: ptr.To("http://hooks.example:8080/")}}}},
		},
	}
	mustCreate(t, amc)
	am := &monitoringv1.Alertmanager{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kps-alertmanager", Labels: release},
		Spec: monitoringv1.AlertmanagerSpec{
			Image:                               ptr.To("quay.io/prometheus/alertmanager:v0.34.0"),
			Version:                             "v0.34.0",
			Replicas:                            ptr.To[int32](1),
			ServiceAccountName:                  "kps-alertmanager",
			PortName:                            "http-web",
			ExternalURL:                         "http://kps-alertmanager." + ns + ":9093",
			LogLevel:                            "info",
			LogFormat:                           "logfmt",
			AlertmanagerConfigSelector:          &metav1.LabelSelector{MatchLabels: release},
			AlertmanagerConfigNamespaceSelector: &metav1.LabelSelector{MatchLabels: release},
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](2000),
				FSGroup: ptr.To[int64](2000), RunAsNonRoot: ptr.To(true)},
		},
	}
	mustCreate(t, am)

	eventually(t, "Reconciled=True", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(am), am); err != nil {
			return false, err
		}
		c := conditionOf(am.Status.Conditions, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == am.Generation, nil
	})
	var sts appsv1.StatefulSet
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-kps-alertmanager"}, &sts); err != nil {
		t.Fatal(err)
	}
	pod := sts.Spec.Template.Spec
	c := pod.Containers[slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "alertmanager" })]
	if c.Ports[0].Name != "http-web" || c.ReadinessProbe.HTTPGet.Port != intstr.FromString("http-web") || c.LivenessProbe.HTTPGet.Port != intstr.FromString("http-web") {
		t.Errorf("web port and probes: %+v %+v", c.Ports, c.ReadinessProbe.HTTPGet)
	}
	if pod.ServiceAccountName != "kps-alertmanager" || *pod.SecurityContext.RunAsUser != 1000 || *pod.SecurityContext.FSGroup != 2000 {
		t.Errorf("serviceAccountName %q securityContext %+v", pod.ServiceAccountName, pod.SecurityContext)
	}
	var svc corev1.Service
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-operated"}, &svc); err != nil {
		t.Fatal(err)
	}
	if p := svc.Spec.Ports[0]; p.Name != "http-web" || p.TargetPort != intstr.FromString("http-web") {
		t.Errorf("governing Service web port %+v", p)
	}
	eventually(t, "the chart's AlertmanagerConfig is merged and bound Accepted=True", func() (bool, error) {
		cfg, err := alertmanagerConfigOf(ns, "kps-alertmanager")
		if err != nil || !strings.Contains(cfg, "receiver: "+ns+"/team/hook") {
			return false, err
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(amc), amc); err != nil {
			return false, err
		}
		b := amBinding(amc, ns, "kps-alertmanager")
		return b != nil && b.Status == monitoringv1.ConditionTrue, nil
	})
}

// kube-prometheus's v0.28.1 Alertmanager and an AlertmanagerConfig whose webhook sets a
// v0.32 field: the field is left out, the AlertmanagerConfig stays bound Accepted=True
// with the reason and the field named, and a Warning Event says so.
func TestATooNewAlertmanagerConfigFieldIsDroppedWithAWarning(t *testing.T) {
	ns := newNamespace(t)
	amc := &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hooks", Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route: &monitoringv1alpha1.Route{Receiver: "hook"},
			Receivers: []monitoringv1alpha1.Receiver{{Name: "hook", WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
				URL: ptr.To("http://hooks.example:8080/"), Payload: ptr.To(`{"text": "x"}`)}}}},
		},
	}
	mustCreate(t, amc)
	mustCreate(t, newAlertmanager(ns, "main", func(am *monitoringv1.Alertmanager) { am.Spec.Version = "0.28.1" }))
	eventually(t, "the binding is Accepted=True with the dropped field named", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(amc), amc); err != nil {
			return false, err
		}
		b := amBinding(amc, ns, "main")
		return b != nil && b.Status == monitoringv1.ConditionTrue && b.Reason == "FieldsDroppedForVersion" &&
			strings.Contains(b.Message, "webhookConfigs[0].payload"), nil
	})
	cfg, err := alertmanagerConfigOf(ns, "main")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg, "receiver: "+ns+"/hooks/hook") || strings.Contains(cfg, "payload") {
		t.Errorf("want the route kept and the payload left out:\n%s", cfg)
	}
	eventually(t, "a Warning Event names it", func() (bool, error) { return eventFor(t, ns, "hooks", "FieldsDroppedForVersion"), nil })
}
