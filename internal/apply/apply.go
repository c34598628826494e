// Package apply converges desired objects into the cluster with server-side
// apply under one field owner. It writes nothing when the live object already
// holds every desired field, and prunes owned objects that are no longer
// desired.
package apply

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is Lookout's server-side-apply field manager.
const FieldOwner = "lookout"

// HashAnnotation records the hash of the desired object Lookout last applied.
const HashAnnotation = "lookout.dev/applied-hash"

// Applier applies desired objects. Reads of kinds listed in Cached go to the
// cache; Secrets and ConfigMaps (cached as metadata only) are compared through
// their metadata and a live read when someone else changed them.
type Applier struct {
	Client client.Client // writes, and reads of fully cached kinds
	Live   client.Reader // uncached reads
	// Metadata serves the metadata-only Secrets and ConfigMaps from the
	// informers (the controller-runtime cache itself: the manager's client
	// sends every Secret and ConfigMap read to the API server, as it must
	// for contents). Nil: Client.
	Metadata client.Reader
	Scheme   *runtime.Scheme
	// Cached says which kinds the Client reads from a full informer cache.
	Cached map[schema.GroupKind]bool
	// Updates writes the Secrets and ConfigMaps of which only the content changed (see
	// replace), preferably in protobuf. Nil: Client.
	Updates client.Writer

	mu sync.Mutex
	// verified maps an object's UID to the resourceVersion at which its
	// content was last seen equal to what we applied. Lets metadata-only
	// kinds skip a live read when nobody touched them since.
	verified map[types.UID]string
	// inflight holds, for each write sent and not yet answered, a channel
	// closed when the answer has been recorded ("<Kind>/<ns>/<name>").
	inflight map[string]chan struct{}
	// pools holds, by GroupVersionKind, a sync.Pool of typed objects to read the cache into:
	// every reconcile compares each desired object (hundreds of RBAC objects) with the cache.
	pools sync.Map
}

// Result tells what Apply did.
type Result int

const (
	// Unchanged: the live object already matched; nothing was sent.
	Unchanged Result = iota
	// Created: the object did not exist.
	Created
	// Updated: the object existed and differed (or drifted).
	Updated
)

// Option changes how one object is applied.
type Option func(*options)

type options struct {
	fieldManager string
	shared       bool
}

// Shared applies an object that several owners co-own under the owner's own
// field manager. Each owner's apply then keeps the others' owner references,
// and no hash annotation is written (the owners would overwrite each other's).
func Shared(fieldManager string) Option {
	return func(o *options) { o.fieldManager, o.shared = fieldManager, true }
}

// Apply converges one object. desired must have its TypeMeta set.
func (a *Applier) Apply(ctx context.Context, desired client.Object, opts ...Option) (Result, error) {
	o := options{fieldManager: FieldOwner}
	for _, opt := range opts {
		opt(&o)
	}
	hash := ""
	if !o.shared {
		var err error
		if hash, err = hashOf(desired); err != nil {
			return Unchanged, err
		}
		if a.upToDate(ctx, desired, hash) {
			return Unchanged, nil
		}
	}
	u, err := a.toUnstructured(desired)
	if err != nil {
		return Unchanged, err
	}
	if !o.shared {
		annotations := u.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[HashAnnotation] = hash
		u.SetAnnotations(annotations)
	}
	gvk := u.GroupVersionKind()
	key := client.ObjectKeyFromObject(desired)
	result, err := a.compare(ctx, gvk, key, u, hash)
	if err != nil || result == Unchanged {
		return result, err
	}
	adopt := result == adopting
	if adopt {
		result = Updated
	}
	if result == Updated && !o.shared && metadataOnly(gvk.GroupKind()) {
		if done, err := a.replace(ctx, desired, hash); done {
			return result, err
		}
	}
	sent := a.sending(gvk.Kind, key)
	defer sent()
	if adopt {
		if err := a.takeOver(ctx, gvk, key, u, o.fieldManager); err != nil {
			return Unchanged, err
		}
	}
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(o.fieldManager), client.ForceOwnership); err != nil {
		if gvk.GroupKind() == statefulSetKind && result == Updated && apierrors.IsInvalid(err) {
			// An immutable field changed (volumeClaimTemplates, serviceName,
			// podManagementPolicy, selector): only a new StatefulSet can have it.
			return Unchanged, a.recreate(ctx, gvk, key, "", fmt.Sprintf("the apiserver refuses the change in place: %v", err))
		}
		return Unchanged, fmt.Errorf("apply %s %s: %w", gvk.Kind, key, err)
	}
	// The apply response carries the new resourceVersion and UID.
	a.remember(u.GetUID(), u.GetResourceVersion())
	return result, nil
}

func (a *Applier) toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		gvks, _, err := a.Scheme.ObjectKinds(obj)
		if err != nil || len(gvks) == 0 {
			return nil, fmt.Errorf("unknown kind for %T: %v", obj, err)
		}
		gvk = gvks[0]
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	pruneNil(m)
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	delete(u.Object, "status")
	return u, nil
}

// pruneNil removes null values, which mean "unset" in a desired object
// (creationTimestamp: null and friends) and would otherwise look like drift.
func pruneNil(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			pruneNil(x)
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					pruneNil(em)
				}
			}
		}
	}
}
