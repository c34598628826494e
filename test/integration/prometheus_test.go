package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestPrometheusAndServiceMonitorBecomeAStatefulSetAndAConfig(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, newServiceMonitor(ns, "app"))
	p := newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) { p.Spec.Replicas = ptr.To[int32](2) })
	mustCreate(t, p)

	eventually(t, "the config Secret holds the ServiceMonitor's job", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && slices.Contains(jobsIn(cfg), "serviceMonitor/"+ns+"/app/0"), err
	})
	var sts appsv1.StatefulSet
	eventually(t, "the StatefulSet exists", func() (bool, error) {
		return k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-main"}, &sts) == nil, nil
	})
	if *sts.Spec.Replicas != 2 {
		t.Errorf("StatefulSet replicas = %d, want 2", *sts.Spec.Replicas)
	}
	if got := sts.Spec.VolumeClaimTemplates; len(got) != 0 {
		// no storage spec: emptyDir named like the PVC template
		t.Errorf("unexpected volumeClaimTemplates %v", got)
	}
	if !isControlledBy(&sts, p) {
		t.Errorf("StatefulSet is not controlled by the Prometheus: %v", sts.OwnerReferences)
	}
	var svc corev1.Service
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-operated"}, &svc); err != nil {
		t.Errorf("governing Service: %v", err)
	}
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-main"}, &svc); !apierrors.IsNotFound(err) {
		t.Errorf("Service prometheus-main: %v, want NotFound (only created with the %s annotation)", err, "lookout.dev/service")
	}
	var secret corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-main-web-config"}, &secret); err != nil {
		t.Errorf("web-config Secret: %v", err)
	}
	// No serviceAccountName: the pods run as the namespace's default account, as with the
	// existing operator (its pull secrets and cloud identity keep working), and none is
	// generated.
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-main"}, &corev1.ServiceAccount{}); !apierrors.IsNotFound(err) {
		t.Errorf("ServiceAccount prometheus-main: %v, want NotFound", err)
	}

	// Status: Reconciled=True with the generation; replicas from the
	// StatefulSet (kube-controller-manager creates pods; no kubelet runs
	// them, so none is available).
	eventually(t, "the Prometheus reports Reconciled=True", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == p.Generation, nil
	})
	eventually(t, "status counts the pods kube-controller-manager created", func() (bool, error) {
		err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p)
		return err == nil && p.Status.Replicas == 2, err
	})
	if c := condition(p, monitoringv1.Available); c == nil || c.Status != monitoringv1.ConditionFalse {
		t.Errorf("Available = %+v, want False (no kubelet runs the pods)", c)
	}
	if p.Status.Selector == "" || p.Status.Shards != 1 {
		t.Errorf("status selector %q shards %d", p.Status.Selector, p.Status.Shards)
	}
	var pods corev1.PodList
	if err := k8s.List(testCtx, &pods, client.InNamespace(ns), client.MatchingLabels{"operator.prometheus.io/name": "main"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Errorf("no pod of the Prometheus")
	}
	for _, pod := range pods.Items {
		if pod.Spec.ServiceAccountName != "default" {
			t.Errorf("pod %s runs as %q, want the namespace's default account", pod.Name, pod.Spec.ServiceAccountName)
		}
	}
}

func TestAServiceMonitorChangeReachesTheConfigAndDeletionRemovesTheJob(t *testing.T) {
	ns := newNamespace(t)
	sm := newServiceMonitor(ns, "app")
	mustCreate(t, sm)
	mustCreate(t, newPrometheus(ns, "main"))
	eventually(t, "the job is in the config", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "serviceMonitor/"+ns+"/app/0"), err
	})

	update(t, sm, func(sm *monitoringv1.ServiceMonitor) {
		sm.Spec.Endpoints[0].RelabelConfigs = []monitoringv1.RelabelConfig{{
			TargetLabel: "team_label", Replacement: ptr.To("added-by-test"), Action: "replace",
		}}
	})
	eventually(t, "the relabeling is in the config", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "added-by-test"), err
	})

	// A label change that makes the monitor stop matching removes it.
	update(t, sm, func(sm *monitoringv1.ServiceMonitor) { sm.Labels = map[string]string{"team": "b"} })
	eventually(t, "the job left the config", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && !strings.Contains(cfg, "serviceMonitor/"+ns+"/app/0"), err
	})
}

func TestDeletingThePrometheusGarbageCollectsEverything(t *testing.T) {
	ns := newNamespace(t)
	other := newNamespace(t)
	// A monitor in another namespace makes the operator grant discovery
	// there: RBAC that cannot carry an owner reference.
	mustCreate(t, newServiceMonitor(other, "remote"))
	p := newPrometheus(ns, "gone", func(p *monitoringv1.Prometheus) {
		p.Spec.ServiceMonitorNamespaceSelector = &metav1.LabelSelector{}
	})
	mustCreate(t, p)
	var roles rbacv1.RoleList
	eventually(t, "a Role is granted in the other namespace", func() (bool, error) {
		err := k8s.List(testCtx, &roles, client.InNamespace(other))
		return err == nil && len(roles.Items) > 0, err
	})
	eventually(t, "the StatefulSet exists", func() (bool, error) {
		return k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-gone"}, &appsv1.StatefulSet{}) == nil, nil
	})

	if err := k8s.Delete(testCtx, p); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Prometheus is gone (finalizer done)", func() (bool, error) {
		return apierrors.IsNotFound(k8s.Get(testCtx, client.ObjectKeyFromObject(p), &monitoringv1.Prometheus{})), nil
	})
	eventually(t, "the StatefulSet, Secrets and Services are garbage-collected", func() (bool, error) {
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Secret{}, &corev1.Service{}} {
			if !apierrors.IsNotFound(k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-gone"}, obj)) {
				return false, nil
			}
		}
		return true, nil
	})
	eventually(t, "the Role in the other namespace is deleted", func() (bool, error) {
		err := k8s.List(testCtx, &roles, client.InNamespace(other))
		return err == nil && len(roles.Items) == 0, err
	})
}

func TestAReconcileWithNothingToChangeWritesNothing(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, newServiceMonitor(ns, "app"))
	p := newPrometheus(ns, "quiet")
	mustCreate(t, p)
	eventually(t, "the Prometheus is reconciled", func() (bool, error) {
		err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p)
		c := condition(p, monitoringv1.Reconciled)
		return err == nil && c != nil && c.Status == monitoringv1.ConditionTrue, err
	})
	// Let the StatefulSet status settle (pods created, status written back).
	time.Sleep(2 * time.Second)

	before, beforeReconciles := writes.Load(), reconciles(t)
	// A label change on the Prometheus triggers a reconcile without changing
	// anything the operator renders.
	patch := client.MergeFrom(p.DeepCopy())
	p.Labels = map[string]string{"touched": "yes"}
	if err := k8s.Patch(testCtx, p, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a reconcile ran", func() (bool, error) {
		return reconciles(t) > beforeReconciles, nil
	})
	time.Sleep(500 * time.Millisecond) // any write would have happened by now
	if got := writesSince(before, ns); len(got) != 0 {
		t.Errorf("a reconcile with nothing to change sent %d writes, want 0: %v", len(got), got)
	}
}

// TestDriftOnTheStatefulSetAndTheConfigIsReverted: another writer edits the owned
// StatefulSet and config Secret; each is reverted within two writes, and then nothing
// more is written: no hot loop.
func TestDriftOnTheStatefulSetAndTheConfigIsReverted(t *testing.T) {
	ns := newNamespace(t)
	p := newPrometheus(ns, "drift")
	mustCreate(t, p)
	key := client.ObjectKey{Namespace: ns, Name: "prometheus-drift"}
	var sts appsv1.StatefulSet
	var secret corev1.Secret
	eventually(t, "the StatefulSet and the config exist", func() (bool, error) {
		return k8s.Get(testCtx, key, &sts) == nil && k8s.Get(testCtx, key, &secret) == nil, nil
	})
	eventually(t, "the Prometheus is Reconciled", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue, nil
	})
	wantConfig := string(secret.Data["prometheus.yaml.gz"])
	before := writes.Load()

	// Someone scales it, edits the retention flag by hand and tampers with the config.
	patch := client.MergeFrom(sts.DeepCopy())
	sts.Spec.Replicas = ptr.To[int32](5)
	for i := range sts.Spec.Template.Spec.Containers {
		c := &sts.Spec.Template.Spec.Containers[i]
		for j, a := range c.Args {
			if strings.HasPrefix(a, "--storage.tsdb.retention.time=") {
				c.Args[j] = "--storage.tsdb.retention.time=1h"
			}
		}
	}
	if err := k8s.Patch(testCtx, &sts, patch); err != nil {
		t.Fatal(err)
	}
	update(t, &secret, func(s *corev1.Secret) { s.Data["prometheus.yaml.gz"] = []byte("tampered") })
	eventually(t, "the drift is reverted", func() (bool, error) {
		if err := k8s.Get(testCtx, key, &sts); err != nil {
			return false, err
		}
		if err := k8s.Get(testCtx, key, &secret); err != nil {
			return false, err
		}
		if *sts.Spec.Replicas != 1 || string(secret.Data["prometheus.yaml.gz"]) != wantConfig {
			return false, nil
		}
		for _, c := range sts.Spec.Template.Spec.Containers {
			if slices.Contains(c.Args, "--storage.tsdb.retention.time=1h") {
				return false, nil
			}
		}
		return true, nil
	})
	count := func(since int64, kind string) int {
		n := 0
		for _, w := range writesSince(since, ns) {
			if strings.Contains(w, kind) && strings.HasSuffix(w, ns+"/prometheus-drift") {
				n++
			}
		}
		return n
	}
	t.Logf("writes while reverting: %v", writesSince(before, ns))
	if n := count(before, "StatefulSet"); n > 2 {
		t.Errorf("%d writes to revert the StatefulSet, want at most 2: %v", n, writesSince(before, ns))
	}
	if n := count(before, "Secret"); n > 2 {
		t.Errorf("%d writes to revert the config Secret, want at most 2: %v", n, writesSince(before, ns))
	}

	// No hot loop: a further reconcile (a label on the Prometheus) writes neither.
	reverted, beforeReconciles := writes.Load(), reconciles(t)
	update(t, p, func(p *monitoringv1.Prometheus) { p.Labels = map[string]string{"touched": "yes"} })
	eventually(t, "a reconcile ran", func() (bool, error) { return reconciles(t) > beforeReconciles, nil })
	if n := count(reverted, "StatefulSet") + count(reverted, "Secret"); n != 0 {
		t.Errorf("writes after the revert: %v", writesSince(reverted, ns))
	}
}

func TestABadServiceMonitorIsRejectedAloneWithAnEvent(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, newServiceMonitor(ns, "good"))
	mustCreate(t, newServiceMonitor(ns, "bad-regex", withRelabeling(monitoringv1.RelabelConfig{
		SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_name"}, Regex: "(unclosed", Action: "keep",
	})))
	mustCreate(t, newServiceMonitor(ns, "missing-secret", func(sm *monitoringv1.ServiceMonitor) {
		sm.Spec.Endpoints[0].BasicAuth = &monitoringv1.BasicAuth{
			Username: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "user"},
			Password: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "pass"},
		}
	}))
	mustCreate(t, newPrometheus(ns, "main"))

	eventually(t, "the good monitor ships and the bad ones do not", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		if err != nil {
			return false, err
		}
		jobs := jobsIn(cfg)
		return slices.Contains(jobs, "serviceMonitor/"+ns+"/good/0") &&
			!slices.Contains(jobs, "serviceMonitor/"+ns+"/bad-regex/0") &&
			!slices.Contains(jobs, "serviceMonitor/"+ns+"/missing-secret/0"), nil
	})
	for name, reason := range map[string]string{"bad-regex": "InvalidRegex", "missing-secret": "SecretNotFound"} {
		eventually(t, "a Warning Event "+reason+" on "+name, func() (bool, error) {
			var evs eventsv1.EventList
			if err := k8s.List(testCtx, &evs, client.InNamespace(ns)); err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
					return true, nil
				}
			}
			return false, nil
		})
	}

	// The Secret arrives later: the monitor is accepted without a restart.
	mustCreate(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data:       map[string][]byte{"user": []byte("u"), "pass": []byte("p")},
	})
	eventually(t, "the late Secret lets the monitor ship", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && slices.Contains(jobsIn(cfg), "serviceMonitor/"+ns+"/missing-secret/0"), err
	})
}

func TestAnInvalidPrometheusSpecLeavesTheRunningStatefulSetAlone(t *testing.T) {
	ns := newNamespace(t)
	p := newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) { p.Spec.Retention = "15d" })
	mustCreate(t, p)
	key := client.ObjectKey{Namespace: ns, Name: "prometheus-main"}
	var before appsv1.StatefulSet
	eventually(t, "the StatefulSet exists", func() (bool, error) { return k8s.Get(testCtx, key, &before) == nil, nil })

	update(t, p, func(p *monitoringv1.Prometheus) { p.Spec.Replicas = ptr.To[int32](-1) })
	eventually(t, "Reconciled=False with a reason", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionFalse && c.ObservedGeneration == p.Generation, nil
	})
	c := condition(p, monitoringv1.Reconciled)
	if !strings.Contains(c.Message, "replicas") {
		t.Errorf("Reconciled message %q does not name the field", c.Message)
	}
	var after appsv1.StatefulSet
	if err := k8s.Get(testCtx, key, &after); err != nil {
		t.Fatal(err)
	}
	if after.Generation != before.Generation || *after.Spec.Replicas != *before.Spec.Replicas {
		t.Errorf("the StatefulSet changed: generation %d → %d", before.Generation, after.Generation)
	}
}

func TestAPausedPrometheusIsNotTouched(t *testing.T) {
	ns := newNamespace(t)
	p := newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) { p.Spec.Paused = true })
	mustCreate(t, p)
	eventually(t, "status says paused", func() (bool, error) {
		err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p)
		c := condition(p, monitoringv1.Reconciled)
		return err == nil && p.Status.Paused && c != nil && c.Reason == "Paused", err
	})
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-main"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a paused Prometheus got a StatefulSet (err %v)", err)
	}
}

func isControlledBy(obj metav1.Object, owner metav1.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

func TestADeletedConfigSecretIsRecreated(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, newServiceMonitor(ns, "app"))
	mustCreate(t, newPrometheus(ns, "main"))
	eventually(t, "the config holds the job", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "serviceMonitor/"+ns+"/app/0"), err
	})
	if err := k8s.Delete(testCtx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-main"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the config Secret is back", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "serviceMonitor/"+ns+"/app/0"), nil
	})
}

func TestAnObjectNoLongerDesiredIsDeleted(t *testing.T) {
	ns := newNamespace(t)
	// A serviceAccountName that names no ServiceAccount: Lookout creates it.
	p := newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) { p.Spec.ServiceAccountName = "prometheus-sa" })
	mustCreate(t, p)
	generated := client.ObjectKey{Namespace: ns, Name: "prometheus-sa"}
	eventually(t, "the generated ServiceAccount exists", func() (bool, error) {
		return k8s.Get(testCtx, generated, &corev1.ServiceAccount{}) == nil, nil
	})

	// The user brings an existing ServiceAccount: the generated one goes.
	mustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own"}})
	update(t, p, func(p *monitoringv1.Prometheus) { p.Spec.ServiceAccountName = "own" })
	eventually(t, "the generated ServiceAccount is deleted and the pods run as the user's", func() (bool, error) {
		var sts appsv1.StatefulSet
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-main"}, &sts); err != nil {
			return false, err
		}
		gone := apierrors.IsNotFound(k8s.Get(testCtx, generated, &corev1.ServiceAccount{}))
		return gone && sts.Spec.Template.Spec.ServiceAccountName == "own", nil
	})
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "own"}, &corev1.ServiceAccount{}); err != nil {
		t.Errorf("the user's ServiceAccount was touched: %v", err)
	}
}

// A configuration change to a Secret exactly as Lookout left it is an update at the
// resourceVersion Lookout wrote (the apiserver stores it without merging fields); a
// Secret someone else touched since goes through the apply, which keeps what they added.
func TestAConfigChangeUpdatesTheSecretLookoutLeftAndAppliesToOneTouchedSince(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, newServiceMonitor(ns, "a"))
	mustCreate(t, newPrometheus(ns, "upd"))
	key := client.ObjectKey{Namespace: ns, Name: "prometheus-upd"}
	hasJob := func(name string) func() (bool, error) {
		return func() (bool, error) {
			cfg, err := configOf(ns, "upd")
			if err != nil {
				return false, err
			}
			return slices.Contains(jobsIn(cfg), "serviceMonitor/"+ns+"/"+name+"/0"), nil
		}
	}
	eventually(t, "the first monitor is in the config", hasJob("a"))
	managers := func() map[string]bool {
		var s corev1.Secret
		if err := k8s.Get(testCtx, key, &s); err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, e := range s.ManagedFields {
			m[e.Manager+"/"+string(e.Operation)] = true
		}
		return m
	}
	if m := managers(); !m["lookout/Apply"] || m["lookout/Update"] {
		t.Fatalf("the created config Secret is managed by %v, want lookout's apply alone", m)
	}

	mustCreate(t, newServiceMonitor(ns, "b"))
	eventually(t, "the second monitor is in the config", hasJob("b"))
	if m := managers(); !m["lookout/Update"] {
		t.Errorf("the config Secret Lookout left was not updated: managers %v", m)
	}

	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	update(t, &s, func(s *corev1.Secret) { s.Labels["team"] = "storage" })
	mustCreate(t, newServiceMonitor(ns, "c"))
	eventually(t, "the third monitor is in the config", hasJob("c"))
	if err := k8s.Get(testCtx, key, &s); err != nil {
		t.Fatal(err)
	}
	if s.Labels["team"] != "storage" {
		t.Errorf("the label another writer added is gone: %v", s.Labels)
	}
	cfg, err := configOf(ns, "upd")
	if err != nil {
		t.Fatal(err)
	}
	if jobs := jobsIn(cfg); len(jobs) != 3 {
		t.Errorf("jobs %v, want the three monitors'", jobs)
	}
}
