package apply

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
