package apply

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readers is the pool of objects of gvk to read the cache into.
func (a *Applier) readers(gvk schema.GroupVersionKind) *sync.Pool {
	p, ok := a.pools.Load(gvk)
	if !ok {
		p, _ = a.pools.LoadOrStore(gvk, &sync.Pool{})
	}
	return p.(*sync.Pool)
}

// compare reports whether desired must be sent, and as what.
func (a *Applier) compare(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey, desired *unstructured.Unstructured, hash string) (Result, error) {
	gk := gvk.GroupKind()
	if metadataOnly(gk) {
		return a.compareMetadataOnly(ctx, gvk, key, desired, hash)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	reader := a.Live
	if a.Cached[gk] {
		typed, err := a.Scheme.New(gvk)
		if err != nil {
			return Unchanged, err
		}
		obj := typed.(client.Object)
		err = a.Client.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			// The cache holds only what Lookout labels: an object of this name someone
			// else made is not in it. Ask the apiserver before creating.
			err = a.Live.Get(ctx, key, obj)
		}
		if err != nil {
			return missingOrErr(err, gvk, key)
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return Unchanged, err
		}
		live.Object = m
	} else if err := reader.Get(ctx, key, live); err != nil {
		return missingOrErr(err, gvk, key)
	}
	if !owned(desired, live) {
		return Unchanged, &NotOwnedError{Kind: gvk.Kind, Key: key}
	}
	if gk == statefulSetKind && !live.GetDeletionTimestamp().IsZero() {
		return Unchanged, &RecreatingError{Kind: gvk.Kind, Key: key, Why: "waiting for the old one to be deleted"}
	}
	if gk == statefulSetKind && hash != "" && live.GetAnnotations()[HashAnnotation] == "" {
		// Written for the same owner by another operator (a migration): its fields,
		// volumes and containers would survive an apply. Start over; the pods keep
		// running and the new StatefulSet adopts them.
		return Unchanged, a.recreate(ctx, gvk, key, live.GetUID(), "it was written by another operator for the same owner")
	}
	if h := live.GetAnnotations()[HashAnnotation]; hash != "" && (h == "" || h == takeOverHash) {
		return adopting, nil
	}
	if (hash == "" || live.GetAnnotations()[HashAnnotation] == hash) && contains(desired.Object, live.Object, "") {
		if hash != "" {
			a.remember(live.GetUID(), live.GetResourceVersion())
		}
		return Unchanged, nil
	}
	return Updated, nil
}

func (a *Applier) metadata() client.Reader {
	if a.Metadata != nil {
		return a.Metadata
	}
	return a.Client
}

// upToDate is the fast path of a reconcile that changes nothing: the object
// in the cache carries the desired hash and is at the resourceVersion at
// which we last wrote it or saw it hold every desired field. Then no
// conversion or field comparison is needed. Kinds that are not cached are
// never up to date here: they take the slow path.
func (a *Applier) upToDate(ctx context.Context, desired client.Object, hash string) bool {
	gvk := desired.GetObjectKind().GroupVersionKind()
	gk := gvk.GroupKind()
	key := client.ObjectKeyFromObject(desired)
	var live metav1.Object
	switch {
	case metadataOnly(gk):
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(gvk)
		if a.metadata().Get(ctx, key, meta, client.UnsafeDisableDeepCopy) != nil { // read only
			return false
		}
		live = meta
	case a.Cached[gk]:
		pool := a.readers(gvk)
		obj, ok := pool.Get().(client.Object)
		if !ok {
			typed, err := a.Scheme.New(gvk)
			if err != nil {
				return false
			}
			obj = typed.(client.Object)
		}
		defer func() {
			// The read shares the cache's own data: forget it before lending obj again.
			reflect.ValueOf(obj).Elem().SetZero()
			pool.Put(obj)
		}()
		if a.Client.Get(ctx, key, obj, client.UnsafeDisableDeepCopy) != nil { // read only
			return false
		}
		live = obj
	default:
		return false
	}
	return live.GetAnnotations()[HashAnnotation] == hash && metadataContains(desired, live) &&
		a.isVerified(live.GetUID(), live.GetResourceVersion())
}

// compareMetadataOnly handles Secrets and ConfigMaps, whose content the cache
// does not hold. The hash annotation proves the last apply carried the same
// content; the resourceVersion proves nobody changed it since we last checked.
func (a *Applier) compareMetadataOnly(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey, desired *unstructured.Unstructured, hash string) (Result, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	if err := a.metadata().Get(ctx, key, meta); err != nil {
		return missingOrErr(err, gvk, key)
	}
	if h := meta.Annotations[HashAnnotation]; !owned(desired, meta) || h == "" || h == takeOverHash {
		// The metadata cache keeps owner references and annotations only of what
		// Lookout labels: an object written for the same owner by another operator is
		// seen without them.
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		if err := a.Live.Get(ctx, key, live); err != nil {
			return missingOrErr(err, gvk, key)
		}
		if !owned(desired, live) {
			return Unchanged, &NotOwnedError{Kind: gvk.Kind, Key: key}
		}
		if h := live.GetAnnotations()[HashAnnotation]; h == "" || h == takeOverHash {
			return adopting, nil
		}
		return Updated, nil
	}
	if meta.Annotations[HashAnnotation] != hash || !metadataContains(desired, meta) {
		return Updated, nil
	}
	if a.isVerified(meta.UID, meta.ResourceVersion) {
		return Unchanged, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	if err := a.Live.Get(ctx, key, live); err != nil {
		return missingOrErr(err, gvk, key)
	}
	if !contains(desired.Object, live.Object, "") {
		return Updated, nil
	}
	a.remember(live.GetUID(), live.GetResourceVersion())
	return Unchanged, nil
}

// metadataOnly: Secrets and ConfigMaps are cached as metadata only (their contents are
// read by name when needed).
func metadataOnly(gk schema.GroupKind) bool {
	return gk == schema.GroupKind{Kind: "Secret"} || gk == schema.GroupKind{Kind: "ConfigMap"}
}

func missingOrErr(err error, gvk schema.GroupVersionKind, key client.ObjectKey) (Result, error) {
	if apierrors.IsNotFound(err) {
		return Created, nil
	}
	return Unchanged, fmt.Errorf("read %s %s: %w", gvk.Kind, key, err)
}
