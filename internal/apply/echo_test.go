package apply

import (
	"testing"
	"time"

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
