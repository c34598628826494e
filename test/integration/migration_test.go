package integration

import (
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// upstreamManager is the field manager the existing operator writes with (Update
// operations, not server-side apply).
const upstreamManager = "PrometheusOperator"

// TestMigrationFromTheExistingOperator: a Prometheus whose objects the existing operator
// wrote (its field manager, its labels, three rule ConfigMaps, a TLS assets Secret, a
// StatefulSet with its own volumes, containers and env, a PVC) is handed to Lookout by
// unpausing it. Lookout adopts what it writes (same names, same owner), recreates the
// StatefulSet so that it carries only what Lookout renders, removes the leftovers, never
// deletes a PVC and leaves the user's own Service of the old convenience name alone. A
// later change of an immutable StatefulSet field (the volume claim size) recreates it
// again instead of failing forever.
func TestMigrationFromTheExistingOperator(t *testing.T) {
	ns := newNamespace(t)
	p := newPrometheus(ns, "k8s", func(p *monitoringv1.Prometheus) {
		p.Spec.Paused = true
		p.Spec.RuleSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		p.Spec.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}}
	})
	mustCreate(t, p)
	mustCreate(t, newRule(ns, "rules", "vector(1)"))

	// What the existing operator left, written with its field manager.
	owner := metav1.OwnerReference{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", Name: p.Name, UID: p.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	upstreamLabels := map[string]string{"app.kubernetes.io/managed-by": "prometheus-operator", "prometheus-name": "k8s"}
	selector := map[string]string{
		"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/instance": "k8s", "operator.prometheus.io/name": "k8s", "prometheus": "k8s", "operator.prometheus.io/shard": "0",
	}
	upstream := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-k8s-rulefiles-0", Labels: upstreamLabels, OwnerReferences: []metav1.OwnerReference{owner}},
			Data: map[string]string{"old.yaml": "groups: []\n"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-k8s-rulefiles-1", Labels: upstreamLabels, OwnerReferences: []metav1.OwnerReference{owner}},
			Data: map[string]string{"old.yaml": "groups: []\n"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-k8s-rulefiles-2", Labels: upstreamLabels, OwnerReferences: []metav1.OwnerReference{owner}},
			Data: map[string]string{"old.yaml": "groups: []\n"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-k8s-tls-assets-0", Labels: upstreamLabels, OwnerReferences: []metav1.OwnerReference{owner}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-k8s", Labels: upstreamLabels, OwnerReferences: []metav1.OwnerReference{owner}},
			Data: map[string][]byte{"prometheus.yaml.gz": []byte("old")}},
		// The user's own ConfigMap, deleted with the Prometheus by the garbage collector but
		// not controlled by it: not a leftover.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "user-notes", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", Name: p.Name, UID: p.UID}}},
			Data: map[string]string{"notes": "mine"}},
		// The user's own Service of the name prometheus-operator's docs suggest.
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-k8s"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 9090, TargetPort: intstr.FromString("web")}}, Selector: selector}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-k8s-db-prometheus-k8s-0", Labels: selector},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			}},
		&appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus-k8s", Labels: upstreamLabels, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To[int32](1),
				ServiceName: "prometheus-operated",
				Selector:    &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: selector},
					Spec: corev1.PodSpec{
						Containers: []corev1.Container{
							{Name: "prometheus", Image: "quay.io/prometheus/prometheus:v2.55.0", Env: []corev1.EnvVar{{Name: "LEGACY", Value: "1"}},
								VolumeMounts: []corev1.VolumeMount{{Name: "tls-assets", MountPath: "/etc/prometheus/certs"}}},
							{Name: "config-reloader", Image: "quay.io/prometheus-operator/prometheus-config-reloader:v0.80.0"},
							{Name: "legacy-sidecar", Image: "example.invalid/sidecar:1"},
						},
						Volumes: []corev1.Volume{{Name: "tls-assets", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "prometheus-k8s-tls-assets-0"}}}},
					},
				},
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
					ObjectMeta: metav1.ObjectMeta{Name: "prometheus-k8s-db"},
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
					},
				}},
			},
		},
	}
	for _, obj := range upstream {
		if err := k8s.Create(testCtx, obj, client.FieldOwner(upstreamManager)); err != nil {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
	oldSts := upstream[len(upstream)-1].(*appsv1.StatefulSet)
	userSvc := upstream[6].(*corev1.Service)
	pvc := upstream[7].(*corev1.PersistentVolumeClaim)

	// Lookout takes over.
	update(t, p, func(p *monitoringv1.Prometheus) { p.Spec.Paused = false })

	var sts appsv1.StatefulSet
	eventually(t, "the StatefulSet is recreated with only what Lookout renders and the Prometheus is Reconciled=True", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}, &sts); err != nil {
			return false, nil
		}
		if sts.UID == oldSts.UID || sts.Annotations["lookout.dev/applied-hash"] == "" {
			return false, nil
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == p.Generation, nil
	})
	for _, c := range sts.Spec.Template.Spec.Containers {
		if c.Name == "legacy-sidecar" {
			t.Errorf("the old operator's extra container survived: %v", containerNames(sts.Spec.Template.Spec.Containers))
		}
		for _, e := range c.Env {
			if e.Name == "LEGACY" {
				t.Errorf("container %s keeps the old operator's env LEGACY", c.Name)
			}
		}
	}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == "tls-assets" {
			t.Errorf("the old operator's volume tls-assets survived")
		}
	}

	eventually(t, "the leftovers are gone: rule ConfigMaps Lookout does not write, the TLS assets Secret", func() (bool, error) {
		for _, key := range []client.ObjectKey{{Namespace: ns, Name: "prometheus-k8s-rulefiles-1"}, {Namespace: ns, Name: "prometheus-k8s-rulefiles-2"}} {
			if !apierrors.IsNotFound(k8s.Get(testCtx, key, &corev1.ConfigMap{})) {
				return false, nil
			}
		}
		return apierrors.IsNotFound(k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s-tls-assets-0"}, &corev1.Secret{})), nil
	})
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "user-notes"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the user's ConfigMap that only points at the Prometheus was deleted: %v", err)
	}
	var rules corev1.ConfigMap
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s-rulefiles-0"}, &rules); err != nil {
		t.Fatalf("Lookout's rule ConfigMap: %v", err)
	}
	if _, old := rules.Data["old.yaml"]; old || len(rules.Data) != 1 {
		t.Errorf("rule ConfigMap keys %v, want only Lookout's file for the one PrometheusRule", slices.Sorted(mapsKeys(rules.Data)))
	}
	for _, e := range rules.ManagedFields {
		if e.Manager == upstreamManager {
			t.Errorf("the old operator still manages fields of the adopted rule ConfigMap: %+v", rules.ManagedFields)
		}
	}

	var livePVC corev1.PersistentVolumeClaim
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(pvc), &livePVC); err != nil || livePVC.UID != pvc.UID || !livePVC.DeletionTimestamp.IsZero() {
		t.Errorf("the PVC must never be deleted: %v (uid %s, was %s)", err, livePVC.UID, pvc.UID)
	}
	var svc corev1.Service
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(userSvc), &svc); err != nil || svc.ResourceVersion != userSvc.ResourceVersion {
		t.Errorf("the user's Service prometheus-k8s was touched: %v (resourceVersion %s, was %s)", err, svc.ResourceVersion, userSvc.ResourceVersion)
	}

	// An immutable field changes: the StatefulSet is recreated again, the PVC stays.
	adopted := sts.UID
	update(t, p, func(p *monitoringv1.Prometheus) {
		p.Spec.Storage.VolumeClaimTemplate.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	})
	eventually(t, "a new StatefulSet carries the larger claim template and the Prometheus is Reconciled=True", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-k8s"}, &sts); err != nil {
			return false, nil
		}
		if sts.UID == adopted || len(sts.Spec.VolumeClaimTemplates) != 1 {
			return false, nil
		}
		got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
		if got.Cmp(resource.MustParse("2Gi")) != 0 {
			return false, nil
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == p.Generation, nil
	})
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(pvc), &livePVC); err != nil || livePVC.UID != pvc.UID {
		t.Errorf("the PVC after the recreation: %v", err)
	}
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
