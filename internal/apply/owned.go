package apply

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NotOwnedError: an object of the desired name exists that Lookout does not own. It is
// left exactly as it is.
type NotOwnedError struct {
	Kind string
	Key  client.ObjectKey
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %s exists and is not managed by Lookout (no owner reference to its owner): left as it is", e.Kind, e.Key)
}

// ManagedByLabel marks the objects Lookout writes that cannot carry an owner reference
// (cluster-scoped, or in another namespace than their owner).
const ManagedByLabel = "app.kubernetes.io/managed-by"

// owned reports whether live is Lookout's to change. An object with an owner reference
// in desired must carry it (the same UID) — an object another operator created for the
// same owner counts, which is how a migration adopts it; an object several owners share
// (no controller reference) must carry a reference to an owner of the same kind; one
// that cannot point at its owner must carry desired's managed-by label.
func owned(desired, live metav1.Object) bool {
	want := desired.GetOwnerReferences()
	if len(want) == 0 {
		v := desired.GetLabels()[ManagedByLabel]
		return v != "" && live.GetLabels()[ManagedByLabel] == v
	}
	for _, w := range want {
		shared := w.Controller == nil || !*w.Controller
		for _, have := range live.GetOwnerReferences() {
			if have.UID == w.UID {
				return true
			}
			if shared && have.Kind == w.Kind && groupOf(have.APIVersion) == groupOf(w.APIVersion) {
				return true
			}
		}
	}
	return false
}

func groupOf(apiVersion string) string {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return group
}
