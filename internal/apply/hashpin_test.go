package apply

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestHashesStayTheSameAcrossReleases pins the hash of one object of each way hashOf
// reads objects (Secrets and ConfigMaps field by field, protobuf kinds, JSON for the
// rest). A hash that changes makes the first reconcile after an upgrade rewrite every
// object of that kind: when that is meant, docs/compatibility.md says so and the
// values here change with it.
func TestHashesStayTheSameAcrossReleases(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "n", Labels: map[string]string{"b": "2", "a": "1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", Name: "p", UID: "u", Controller: ptr.To(true)}}}
	for name, tc := range map[string]struct {
		obj  client.Object
		want string
	}{
		"Secret": {&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta,
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v"), "a": nil}, StringData: map[string]string{"s": "t"}}, "38cf059496dabbe619fbb9fa"},
		"ConfigMap": {&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta,
			Immutable: ptr.To(false), Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": {0, 1}}}, "e509e0d42f91f4bb54057177"},
		"Role": {&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: meta,
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}, "e099a180313427ac328139f6"},
		"StatefulSet": {&appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "i", Args: []string{"--x"}}}}}}}, "7f810d41cb516d1912903514"},
	} {
		got, err := hashOf(tc.obj)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != tc.want {
			t.Errorf("%s hashes to %s, was %s", name, got, tc.want)
		}
	}
}

func BenchmarkHashRole(b *testing.B) {
	r := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "n", Labels: map[string]string{"a": "1"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "services", "endpoints"}, Verbs: []string{"get", "list", "watch"}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := hashOf(r); err != nil {
			b.Fatal(err)
		}
	}
}
