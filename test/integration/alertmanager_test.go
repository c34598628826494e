package integration

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	amconfig "github.com/prometheus/alertmanager/config"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const baseAlertmanagerConfig = `route:
  receiver: default
  group_by: [alertname]
receivers:
- name: default
  webhook_configs:
  - url: http://default.example:8080/hook
`

func newAlertmanager(ns, name string, opts ...func(*monitoringv1.Alertmanager)) *monitoringv1.Alertmanager {
	am := &monitoringv1.Alertmanager{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: monitoringv1.AlertmanagerSpec{
			AlertmanagerConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		},
	}
	for _, o := range opts {
		o(am)
	}
	return am
}

// newSlackConfig routes severity=page alerts to Slack with the API URL from Secret
// <secret>/url.
func newSlackConfig(ns, name, secret string) *monitoringv1alpha1.AlertmanagerConfig {
	return &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route: &monitoringv1alpha1.Route{
				Receiver: "slack",
				Matchers: []monitoringv1alpha1.Matcher{{Name: "severity", Value: "page", MatchType: monitoringv1alpha1.MatchEqual}},
			},
			Receivers: []monitoringv1alpha1.Receiver{{
				Name: "slack",
				SlackConfigs: []monitoringv1alpha1.SlackConfig{{
					APIURL:  &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "url"},
					Channel: ptr.To("#alerts"),
				}},
			}},
		},
	}
}

// alertmanagerConfigOf reads and gunzips the generated alertmanager.yaml.
func alertmanagerConfigOf(ns, name string) (string, error) {
	var s corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-" + name + "-generated"}, &s); err != nil {
		return "", err
	}
	return gunzip(s.Data["alertmanager.yaml.gz"])
}

// amBinding is the Accepted condition of Alertmanager ns/name on c, nil when none.
func amBinding(c *monitoringv1alpha1.AlertmanagerConfig, ns, name string) *monitoringv1.ConfigResourceCondition {
	for _, b := range c.Status.Bindings {
		if b.Resource == "alertmanagers" && b.Namespace == ns && b.Name == name && len(b.Conditions) > 0 {
			return &b.Conditions[0]
		}
	}
	return nil
}

func TestAlertmanagerBecomesAStatefulSetAServiceAndAValidatedConfig(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, &corev1.Secret{ObjectMeta: metaName(ns, "alertmanager-main"), StringData: map[string]string{
		"alertmanager.yaml": baseAlertmanagerConfig,
		"custom.tmpl":       `{{ define "custom.title" }}custom{{ end }}`,
	}})
	mustCreate(t, &corev1.Secret{ObjectMeta: metaName(ns, "slack"), StringData: map[string]string{"url": "https://hooks.slack.example/T0/B0/secret"}})
	mustCreate(t, newSlackConfig(ns, "team-a", "slack"))
	am := newAlertmanager(ns, "main", func(am *monitoringv1.Alertmanager) {
		am.Spec.Replicas = ptr.To[int32](2)
		am.Spec.Retention = "48h"
	})
	mustCreate(t, am)

	var cfg string
	eventually(t, "the generated config routes the AlertmanagerConfig's alerts", func() (bool, error) {
		var err error
		cfg, err = alertmanagerConfigOf(ns, "main")
		return err == nil && strings.Contains(cfg, ns+"/team-a/slack"), err
	})
	if _, err := amconfig.Load(cfg); err != nil {
		t.Fatalf("Alertmanager's parser refuses the generated config: %v\n%s", err, cfg)
	}
	if !strings.Contains(cfg, "https://hooks.slack.example/T0/B0/secret") {
		t.Errorf("the Slack API URL from the Secret is not in the config:\n%s", cfg)
	}
	var generated corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main-generated"}, &generated); err != nil {
		t.Fatal(err)
	}
	if string(generated.Data["custom.tmpl"]) == "" {
		t.Errorf("the template file of the user's Secret is not copied: keys %v", slices.Sorted(mapsKeys(generated.Data)))
	}

	var sts appsv1.StatefulSet
	eventually(t, "the StatefulSet exists", func() (bool, error) {
		return k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main"}, &sts) == nil, nil
	})
	checkStatefulSet(t, &sts, map[string]string{
		"app.kubernetes.io/name": "alertmanager", "app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/instance": "main", "alertmanager": "main",
	}, "alertmanager-operated", 2, am)
	checkArgs(t, "alertmanager", sts.Spec.Template.Spec.Containers[0].Args,
		"--data.retention=48h",
		"--cluster.peer=alertmanager-main-0.alertmanager-operated:9094",
		"--cluster.peer=alertmanager-main-1.alertmanager-operated:9094",
		"--cluster.listen-address=[$(POD_IP)]:9094",
		"--cluster.label="+ns+"/main")
	var svc corev1.Service
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-operated"}, &svc); err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Name+"/"+string(p.Protocol))
	}
	if !slices.Equal(ports, []string{"web/TCP", "tcp-mesh/TCP", "udp-mesh/UDP"}) || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("governing Service ports %v clusterIP %q", ports, svc.Spec.ClusterIP)
	}
	var role rbacv1.Role
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "lookout:alertmanager:main"}, &role); err != nil {
		t.Errorf("the reloader's Role: %v", err)
	}

	eventually(t, "Reconciled=True and the replicas kube-controller-manager created", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(am), am); err != nil {
			return false, err
		}
		c := conditionOf(am.Status.Conditions, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == am.Generation && am.Status.Replicas == 2, nil
	})
	if c := conditionOf(am.Status.Conditions, monitoringv1.Available); c == nil || c.Status != monitoringv1.ConditionFalse {
		t.Errorf("Available = %+v, want False (no kubelet runs the pods)", c)
	}
	eventually(t, "the AlertmanagerConfig is bound Accepted=True", func() (bool, error) {
		var c monitoringv1alpha1.AlertmanagerConfig
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "team-a"}, &c); err != nil {
			return false, err
		}
		b := amBinding(&c, ns, "main")
		return b != nil && b.Status == monitoringv1.ConditionTrue, nil
	})

	// A spec change reaches the StatefulSet: a third replica joins the peer list.
	update(t, am, func(am *monitoringv1.Alertmanager) { am.Spec.Replicas = ptr.To[int32](3) })
	eventually(t, "the StatefulSet has three replicas that peer with each other", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main"}, &sts); err != nil {
			return false, err
		}
		return *sts.Spec.Replicas == 3 && slices.Contains(sts.Spec.Template.Spec.Containers[0].Args,
			"--cluster.peer=alertmanager-main-2.alertmanager-operated:9094"), nil
	})

	// Deleting the Alertmanager garbage-collects what it owned and removes its bindings.
	if err := k8s.Delete(testCtx, am); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the StatefulSet and the generated Secret are gone", func() (bool, error) {
		errSts := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main"}, &appsv1.StatefulSet{})
		errSecret := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main-generated"}, &corev1.Secret{})
		return apierrors.IsNotFound(errSts) && apierrors.IsNotFound(errSecret), nil
	})
	eventually(t, "the binding is removed", func() (bool, error) {
		var c monitoringv1alpha1.AlertmanagerConfig
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "team-a"}, &c); err != nil {
			return false, err
		}
		return amBinding(&c, ns, "main") == nil, nil
	})
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-main"}, &corev1.Secret{}); err != nil {
		t.Errorf("the user's config Secret must be left alone: %v", err)
	}
}

func TestAnAlertmanagerConfigWithAMissingSecretIsRejectedAloneAndAcceptedWhenTheSecretAppears(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, &corev1.Secret{ObjectMeta: metaName(ns, "slack"), StringData: map[string]string{"url": "https://hooks.slack.example/good"}})
	mustCreate(t, newSlackConfig(ns, "good", "slack"))
	mustCreate(t, newSlackConfig(ns, "late", "late-slack"))
	mustCreate(t, newAlertmanager(ns, "main"))

	var late monitoringv1alpha1.AlertmanagerConfig
	eventually(t, "the config with the missing Secret is Accepted=False with the reason", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "late"}, &late); err != nil {
			return false, err
		}
		b := amBinding(&late, ns, "main")
		return b != nil && b.Status == monitoringv1.ConditionFalse && b.Reason == "SecretNotFound" && strings.Contains(b.Message, "late-slack"), nil
	})
	cfg, err := alertmanagerConfigOf(ns, "main")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg, ns+"/good/slack") || strings.Contains(cfg, ns+"/late/") {
		t.Errorf("want the good config in and the rejected one out:\n%s", cfg)
	}
	eventually(t, "a Warning Event names the reason", func() (bool, error) {
		return eventFor(t, ns, "late", "SecretNotFound"), nil
	})

	// The Secret appears: accepted without any restart.
	mustCreate(t, &corev1.Secret{ObjectMeta: metaName(ns, "late-slack"), StringData: map[string]string{"url": "https://hooks.slack.example/late"}})
	eventually(t, "the late config ships and is Accepted=True", func() (bool, error) {
		cfg, err := alertmanagerConfigOf(ns, "main")
		if err != nil || !strings.Contains(cfg, "https://hooks.slack.example/late") {
			return false, err
		}
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "late"}, &late); err != nil {
			return false, err
		}
		b := amBinding(&late, ns, "main")
		return b != nil && b.Status == monitoringv1.ConditionTrue, nil
	})
}

func TestAnUnparsableBaseConfigStallsTheAlertmanagerAndKeepsTheLastGoodConfig(t *testing.T) {
	ns := newNamespace(t)
	user := &corev1.Secret{ObjectMeta: metaName(ns, "alertmanager-main"), StringData: map[string]string{"alertmanager.yaml": baseAlertmanagerConfig}}
	mustCreate(t, user)
	am := newAlertmanager(ns, "main")
	mustCreate(t, am)
	var good string
	eventually(t, "the config is generated", func() (bool, error) {
		var err error
		good, err = alertmanagerConfigOf(ns, "main")
		return err == nil && strings.Contains(good, "default.example"), nil
	})

	update(t, user, func(s *corev1.Secret) {
		s.StringData = map[string]string{"alertmanager.yaml": "route:\n  receiver: nobody\nreceivers:\n- name: default\n"}
	})
	eventually(t, "Reconciled=False with the parser's message", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(am), am); err != nil {
			return false, err
		}
		c := conditionOf(am.Status.Conditions, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionFalse && strings.Contains(c.Message, "nobody"), nil
	})
	if cfg, err := alertmanagerConfigOf(ns, "main"); err != nil || cfg != good {
		t.Errorf("the generated config changed while the base config is broken (err %v):\n%s", err, cfg)
	}

	// Fixed: reconciled again.
	update(t, user, func(s *corev1.Secret) {
		s.StringData = map[string]string{"alertmanager.yaml": strings.ReplaceAll(baseAlertmanagerConfig, "default.example", "fixed.example")}
	})
	eventually(t, "the fixed config ships and Reconciled=True", func() (bool, error) {
		cfg, err := alertmanagerConfigOf(ns, "main")
		if err != nil || !strings.Contains(cfg, "fixed.example") {
			return false, err
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(am), am); err != nil {
			return false, err
		}
		c := conditionOf(am.Status.Conditions, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue, nil
	})
}

func TestAlertmanagerDriftIsRevertedAndAQuietReconcileWritesNothing(t *testing.T) {
	ns := newNamespace(t)
	am := newAlertmanager(ns, "drift")
	mustCreate(t, am)
	key := client.ObjectKey{Namespace: ns, Name: "alertmanager-drift"}
	var sts appsv1.StatefulSet
	eventually(t, "the StatefulSet exists and the status counts its pod", func() (bool, error) {
		if err := k8s.Get(testCtx, key, &sts); err != nil {
			return false, nil
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(am), am); err != nil {
			return false, err
		}
		c := conditionOf(am.Status.Conditions, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && am.Status.Replicas == 1 &&
			countsSettled(&sts, am.Status.Replicas, am.Status.UpdatedReplicas, am.Status.AvailableReplicas), nil
	})

	// Nothing to change: a label on the Alertmanager makes a reconcile that writes nothing.
	checkQuietReconcile(t, "alertmanager", ns, am)

	// Someone scales the StatefulSet and edits the generated config: both reverted.
	scaleStatefulSet(t, &sts, 3)
	var generated corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-drift-generated"}, &generated); err != nil {
		t.Fatal(err)
	}
	want := string(generated.Data["alertmanager.yaml.gz"])
	update(t, &generated, func(s *corev1.Secret) { s.Data["alertmanager.yaml.gz"] = []byte("tampered") })
	eventually(t, "the drift is reverted", func() (bool, error) {
		if err := k8s.Get(testCtx, key, &sts); err != nil {
			return false, err
		}
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "alertmanager-drift-generated"}, &generated); err != nil {
			return false, err
		}
		return *sts.Spec.Replicas == 1 && string(generated.Data["alertmanager.yaml.gz"]) == want, nil
	})
}

// eventFor reports whether a Warning Event with reason regards the object named name.
func eventFor(t *testing.T, ns, name, reason string) bool {
	t.Helper()
	var evs eventsv1.EventList
	if err := k8s.List(testCtx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			return true
		}
	}
	return false
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
