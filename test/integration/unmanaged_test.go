package integration

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/render"
)

// unmanagedPrometheus has none of the four monitor selectors: the existing operator's
// unmanaged configuration mode, where prometheus-<name> is the user's.
func unmanagedPrometheus(ns, name string, paused bool) *monitoringv1.Prometheus {
	return newPrometheus(ns, name, func(p *monitoringv1.Prometheus) {
		p.Spec.ServiceMonitorSelector = nil
		p.Spec.Paused = paused
	})
}

// reconciledUnmanaged waits until the Prometheus says Reconciled=True,
// ConfigurationUnmanaged for its generation, and its StatefulSet exists.
func reconciledUnmanaged(t *testing.T, p *monitoringv1.Prometheus) {
	t.Helper()
	eventually(t, "Reconciled=True with reason ConfigurationUnmanaged and the StatefulSet written", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		if c == nil || c.Status != monitoringv1.ConditionTrue || c.Reason != controller.ReasonConfigurationUnmanaged || c.ObservedGeneration != p.Generation {
			return false, nil
		}
		return k8s.Get(testCtx, client.ObjectKey{Namespace: p.Namespace, Name: "prometheus-" + p.Name}, &appsv1.StatefulSet{}) == nil, nil
	})
}

// TestTheUsersConfigSecretSurvivesTheSwitchInUnmanagedMode is the switch as a user makes
// it: the existing operator ran a Prometheus with no monitor selectors and left the
// Secret prometheus-<name> with its owner reference and labels; the user wrote a
// handwritten job into it; Lookout takes over. The Secret must stay exactly as written —
// not adopted, not rewritten, not pruned — while the rest is reconciled.
func TestTheUsersConfigSecretSurvivesTheSwitchInUnmanagedMode(t *testing.T) {
	ns := newNamespace(t)
	p := unmanagedPrometheus(ns, "byhand", true)
	mustCreate(t, p)

	handwritten := "global:\n  scrape_interval: 30s\nscrape_configs:\n- job_name: handwritten\n  static_configs:\n  - targets: ['db.example.com:9187']\n"
	gz, err := render.Gzip([]byte(handwritten))
	if err != nil {
		t.Fatal(err)
	}
	upstreamLabels := map[string]string{"app.kubernetes.io/managed-by": "prometheus-operator"}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-byhand", Labels: upstreamLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", Name: p.Name, UID: p.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Data: map[string][]byte{"prometheus.yaml.gz": gz},
	}
	if err := k8s.Create(testCtx, secret, client.FieldOwner(upstreamManager)); err != nil {
		t.Fatal(err)
	}

	update(t, p, func(p *monitoringv1.Prometheus) { p.Spec.Paused = false })
	reconciledUnmanaged(t, p)
	// A second reconcile (a spec change) must not touch it either.
	update(t, p, func(p *monitoringv1.Prometheus) { p.Spec.Replicas = ptr.To[int32](2) })
	reconciledUnmanaged(t, p)

	var live corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(secret), &live); err != nil {
		t.Fatalf("the user's config Secret: %v", err)
	}
	if live.ResourceVersion != secret.ResourceVersion {
		t.Errorf("the user's config Secret was written (resourceVersion %s, was %s): labels %v, managers %v",
			live.ResourceVersion, secret.ResourceVersion, live.Labels, managersOf(live.ManagedFields))
	}
	got, err := gunzip(live.Data["prometheus.yaml.gz"])
	if err != nil || got != handwritten || len(live.Data) != 1 {
		t.Errorf("prometheus.yaml.gz = %q (%v), keys %d; want the user's config with the handwritten job", got, err, len(live.Data))
	}
	if !maps.Equal(live.Labels, upstreamLabels) {
		t.Errorf("labels %v, want the user's %v", live.Labels, upstreamLabels)
	}

	// The pods still load the Secret: the StatefulSet mounts it and the reloader follows it.
	var sts appsv1.StatefulSet
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-byhand"}, &sts); err != nil {
		t.Fatal(err)
	}
	mounted := false
	for _, v := range sts.Spec.Template.Spec.Volumes {
		mounted = mounted || v.Secret != nil && v.Secret.SecretName == "prometheus-byhand"
	}
	if !mounted {
		t.Errorf("the StatefulSet does not mount the config Secret prometheus-byhand: %v", sts.Spec.Template.Spec.Volumes)
	}
}

// TestUnmanagedModeCreatesAnEmptyConfigOnceAndThenLeavesIt: with no Secret yet, Lookout
// creates one holding an empty configuration (the pods start), as the existing operator
// does; what the user then writes into it stays, and a monitor selector set later hands
// the Secret back to Lookout.
func TestUnmanagedModeCreatesAnEmptyConfigOnceAndThenLeavesIt(t *testing.T) {
	ns := newNamespace(t)
	p := unmanagedPrometheus(ns, "fresh", false)
	mustCreate(t, p)
	reconciledUnmanaged(t, p)

	key := client.ObjectKey{Namespace: ns, Name: "prometheus-fresh"}
	var s corev1.Secret
	if err := k8s.Get(testCtx, key, &s); err != nil {
		t.Fatalf("the empty config Secret: %v", err)
	}
	if got, err := gunzip(s.Data["prometheus.yaml.gz"]); err != nil || got != "" {
		t.Fatalf("the created config is %q (%v), want an empty one", got, err)
	}

	mine, _ := render.Gzip([]byte("scrape_configs:\n- job_name: handwritten\n"))
	s.Data["prometheus.yaml.gz"] = mine
	if err := k8s.Update(testCtx, &s); err != nil {
		t.Fatal(err)
	}
	written := s.ResourceVersion
	update(t, p, func(p *monitoringv1.Prometheus) { p.Spec.Replicas = ptr.To[int32](2) })
	reconciledUnmanaged(t, p)
	if err := k8s.Get(testCtx, key, &s); err != nil || s.ResourceVersion != written || !bytes.Equal(s.Data["prometheus.yaml.gz"], mine) {
		t.Fatalf("the user's edit did not survive a reconcile: %v (resourceVersion %s, was %s)", err, s.ResourceVersion, written)
	}

	// A selector: the configuration is Lookout's again.
	update(t, p, func(p *monitoringv1.Prometheus) {
		p.Spec.ServiceMonitorSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	})
	eventually(t, "Lookout writes the generated configuration into prometheus-fresh", func() (bool, error) {
		cfg, err := configOf(ns, "fresh")
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && strings.Contains(cfg, "global:") && !strings.Contains(cfg, "handwritten"), err
	})
}

func managersOf(fields []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, f := range fields {
		out = append(out, f.Manager+"/"+string(f.Operation))
	}
	return out
}
