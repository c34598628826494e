package apply

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestAnEchoThatOvertakesTheWriteIsRecognised(t *testing.T) {
	a := &Applier{}
	key := client.ObjectKey{Namespace: "ns", Name: "prometheus-main"}
	if a.IsOwnWrite("Secret", key, "uid", "5") {
		t.Fatal("an unknown version was taken for our own write")
	}

	// The watch delivers version 6 while the write that produced it still
	// waits for its answer.
	sent := a.sending("Secret", key)
	go func() {
		time.Sleep(50 * time.Millisecond)
		a.remember("uid", "6")
		sent()
	}()
	start := time.Now()
	if !a.IsOwnWrite("Secret", key, "uid", "6") {
		t.Fatal("the echo of a write in flight was not recognised once the answer came")
	}
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Errorf("decided after %v, before the answer", waited)
	}

	// Someone else's version, with no write of ours in flight: no wait.
	start = time.Now()
	if a.IsOwnWrite("Secret", key, "uid", "7") {
		t.Fatal("someone else's write was taken for ours")
	}
	if waited := time.Since(start); waited > 10*time.Millisecond {
		t.Errorf("waited %v with no write in flight", waited)
	}
}

func TestHashIsStableAndSeesEveryChange(t *testing.T) {
	role := func(verb string, labels map[string]string) *rbacv1.Role {
		return &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", Labels: labels},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{verb}}},
		}
	}
	labels := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}
	first, err := hashOf(role("get", labels))
	if err != nil {
		t.Fatal(err)
	}
	for range 50 { // map iteration order varies from run to run
		if h, _ := hashOf(role("get", map[string]string{"e": "5", "d": "4", "c": "3", "b": "2", "a": "1"})); h != first {
			t.Fatalf("the same object hashed to %s and %s", first, h)
		}
	}
	if h, _ := hashOf(role("list", labels)); h == first {
		t.Error("a changed rule did not change the hash")
	}
	if h, _ := hashOf(role("get", map[string]string{"a": "1"})); h == first {
		t.Error("changed labels did not change the hash")
	}
	other := role("get", labels)
	other.Kind = "ClusterRole"
	if h, _ := hashOf(other); h == first {
		t.Error("the kind is not part of the hash")
	}
	annotated := role("get", labels)
	annotated.Annotations = map[string]string{HashAnnotation: "x"}
	if _, err := hashOf(annotated); err == nil {
		t.Error("an object already carrying the hash annotation was hashed")
	}
}

func TestSecretsAndConfigMapsHashEveryFieldTheyCarry(t *testing.T) {
	secret := func(data map[string][]byte, mutate ...func(*corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Labels: map[string]string{"a": "1"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}
		for _, m := range mutate {
			m(s)
		}
		return s
	}
	cm := func(data map[string]string, mutate ...func(*corev1.ConfigMap)) *corev1.ConfigMap {
		c := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
			Data:       data,
		}
		for _, m := range mutate {
			m(c)
		}
		return c
	}
	objects := map[string]client.Object{
		"secret":                secret(map[string][]byte{"a": []byte("xy"), "b": []byte("z")}),
		"a byte changed":        secret(map[string][]byte{"a": []byte("xY"), "b": []byte("z")}),
		"a byte moved to a key": secret(map[string][]byte{"a": []byte("x"), "yb": []byte("z")}),
		"a key renamed":         secret(map[string][]byte{"a": []byte("xy"), "c": []byte("z")}),
		"a key less":            secret(map[string][]byte{"a": []byte("xy")}),
		"an empty value":        secret(map[string][]byte{"a": []byte("xy"), "b": []byte("z"), "c": nil}),
		"as stringData":         secret(nil, func(s *corev1.Secret) { s.StringData = map[string]string{"a": "xy", "b": "z"} }),
		"another type":          secret(map[string][]byte{"a": []byte("xy"), "b": []byte("z")}, func(s *corev1.Secret) { s.Type = corev1.SecretTypeTLS }),
		"immutable":             secret(map[string][]byte{"a": []byte("xy"), "b": []byte("z")}, func(s *corev1.Secret) { s.Immutable = ptr.To(true) }),
		"explicitly mutable":    secret(map[string][]byte{"a": []byte("xy"), "b": []byte("z")}, func(s *corev1.Secret) { s.Immutable = ptr.To(false) }),
		"another label":         secret(map[string][]byte{"a": []byte("xy"), "b": []byte("z")}, func(s *corev1.Secret) { s.Labels["a"] = "2" }),
		"another name":          secret(map[string][]byte{"a": []byte("xy"), "b": []byte("z")}, func(s *corev1.Secret) { s.Name = "t" }),
		"configmap":             cm(map[string]string{"a": "xy", "b": "z"}),
		"configmap changed":     cm(map[string]string{"a": "xy", "b": "Z"}),
		"configmap binary":      cm(nil, func(c *corev1.ConfigMap) { c.BinaryData = map[string][]byte{"a": []byte("xy"), "b": []byte("z")} }),
		"configmap immutable":   cm(map[string]string{"a": "xy", "b": "z"}, func(c *corev1.ConfigMap) { c.Immutable = ptr.To(true) }),
		"configmap as a secret": secret(map[string][]byte{"a": []byte("xy"), "b": []byte("z")}, func(s *corev1.Secret) { s.Name, s.Labels, s.Type = "c", nil, "" }),
	}
	seen := map[string]string{}
	for what, obj := range objects {
		h, err := hashOf(obj)
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[h]; ok {
			t.Errorf("%q and %q hash the same", what, other)
		}
		seen[h] = what
		for range 20 { // map iteration order varies from run to run
			if again, _ := hashOf(obj); again != h {
				t.Fatalf("%q hashed to %s, then %s", what, h, again)
			}
		}
	}
}
