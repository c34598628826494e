package apply

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func (a *Applier) remember(uid types.UID, rv string) {
	if uid == "" || rv == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.verified == nil {
		a.verified = map[types.UID]string{}
	}
	a.verified[uid] = rv
}

// IsOwnWrite reports whether the object is exactly as this Applier last
// wrote or verified it: an event for it is the echo of our own write. The
// watch often delivers our write before the client has read the answer to
// it; when a write of that object is still waiting for its answer, this
// waits for it (at most echoWait) before deciding.
func (a *Applier) IsOwnWrite(kind string, key client.ObjectKey, uid types.UID, rv string) bool {
	if a.isVerified(uid, rv) {
		return true
	}
	a.mu.Lock()
	done := a.inflight[inflightKey(kind, key)]
	a.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
	case <-time.After(echoWait):
	}
	return a.isVerified(uid, rv)
}

// echoWait bounds how long an event handler waits for a write in flight.
const echoWait = time.Second

func inflightKey(kind string, key client.ObjectKey) string {
	return kind + "/" + key.Namespace + "/" + key.Name
}

// sending registers a write of one object until the returned func is called.
func (a *Applier) sending(kind string, key client.ObjectKey) func() {
	k, done := inflightKey(kind, key), make(chan struct{})
	a.mu.Lock()
	if a.inflight == nil {
		a.inflight = map[string]chan struct{}{}
	}
	a.inflight[k] = done
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		if a.inflight[k] == done {
			delete(a.inflight, k)
		}
		a.mu.Unlock()
		close(done)
	}
}

func (a *Applier) isVerified(uid types.UID, rv string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.verified[uid] == rv
}

// Forget drops what the Applier remembers about an object (after deletion).
func (a *Applier) Forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.verified, uid)
}
