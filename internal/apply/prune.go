package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Prune deletes objects of the given kinds in namespace that carry the
// labels, are controlled by ownerUID, and are not among keep. It never
// touches an object another owner controls. Returns the deleted names.
func (a *Applier) Prune(ctx context.Context, namespace string, labels map[string]string, ownerUID types.UID, keep []client.Object, kinds []schema.GroupVersionKind) ([]string, error) {
	return a.prune(ctx, namespace, labels, ownerUID, keep, kinds, false)
}

// PruneLeftovers deletes objects of the given kinds in namespace whose controller is
// ownerUID and that are not among keep, whatever their labels: what another operator wrote
// for the same owner and Lookout does not write. An object that only points at the owner
// without being controlled by it (a user's, deleted with it by the garbage collector) is
// not a leftover. They are listed from the apiserver (metadata
// only): the caches hold owner references only of what Lookout labels.
func (a *Applier) PruneLeftovers(ctx context.Context, namespace string, ownerUID types.UID, keep []client.Object, kinds []schema.GroupVersionKind) ([]string, error) {
	if ownerUID == "" {
		return nil, nil
	}
	return a.prune(ctx, namespace, nil, ownerUID, keep, kinds, true)
}

func (a *Applier) prune(ctx context.Context, namespace string, labels map[string]string, ownerUID types.UID, keep []client.Object, kinds []schema.GroupVersionKind, live bool) ([]string, error) {
	wanted := map[string]bool{}
	for _, o := range keep {
		gvk := o.GetObjectKind().GroupVersionKind()
		wanted[gvk.Kind+"/"+o.GetNamespace()+"/"+o.GetName()] = true
	}
	var deleted []string
	for _, gvk := range kinds {
		items, err := a.listForPrune(ctx, gvk, namespace, labels, live)
		if err != nil {
			return deleted, fmt.Errorf("list %s for pruning: %w", gvk.Kind, err)
		}
		for _, item := range items {
			if wanted[gvk.Kind+"/"+item.Namespace+"/"+item.Name] || !controlledBy(item, ownerUID) || live && !isController(item, ownerUID) {
				continue
			}
			if !item.DeletionTimestamp.IsZero() {
				continue
			}
			item.SetGroupVersionKind(gvk)
			err := a.Client.Delete(ctx, item, client.Preconditions{UID: &item.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if err != nil && !apierrors.IsNotFound(err) {
				return deleted, fmt.Errorf("delete %s %s/%s: %w", gvk.Kind, item.Namespace, item.Name, err)
			}
			a.Forget(item.UID)
			deleted = append(deleted, gvk.Kind+"/"+item.Name)
		}
	}
	return deleted, nil
}

// listForPrune lists the metadata of gvk's objects in namespace with labels: from the
// apiserver when live, from the metadata informers for Secrets and ConfigMaps, and from the
// typed informers for the other cached kinds. A metadata list of a typed-cached kind would
// start a second, metadata-only informer and wait for it to sync (a tenth of a second each
// on the first prune of a process, for every kind).
func (a *Applier) listForPrune(ctx context.Context, gvk schema.GroupVersionKind, namespace string, labels map[string]string, live bool) ([]*metav1.PartialObjectMetadata, error) {
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingLabels(labels)}
	listKind := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	var reader client.Reader = a.Live
	switch gk := gvk.GroupKind(); {
	case live:
	case metadataOnly(gk):
		reader = a.metadata()
	case a.Cached[gk]:
		return a.listTyped(ctx, listKind, opts)
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(listKind)
	if err := reader.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	out := make([]*metav1.PartialObjectMetadata, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// listTyped lists a typed-cached kind from its informer and keeps what prune reads.
func (a *Applier) listTyped(ctx context.Context, listKind schema.GroupVersionKind, opts []client.ListOption) ([]*metav1.PartialObjectMetadata, error) {
	obj, err := a.Scheme.New(listKind)
	if err != nil {
		return nil, err
	}
	typed, ok := obj.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", listKind)
	}
	if err := a.Client.List(ctx, typed, append(opts, client.UnsafeDisableDeepCopy)...); err != nil { // read only
		return nil, err
	}
	var out []*metav1.PartialObjectMetadata
	err = meta.EachListItem(typed, func(o runtime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		out = append(out, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID(),
			OwnerReferences: m.GetOwnerReferences(), DeletionTimestamp: m.GetDeletionTimestamp(),
		}})
		return nil
	})
	return out, err
}

func controlledBy(obj *metav1.PartialObjectMetadata, uid types.UID) bool {
	if uid == "" { // cluster-scoped objects are matched by labels alone
		return true
	}
	for _, ref := range obj.OwnerReferences {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

// isController reports whether uid is obj's controller (an owner reference with
// controller: true), as an operator sets on what it generates.
func isController(obj *metav1.PartialObjectMetadata, uid types.UID) bool {
	for _, ref := range obj.OwnerReferences {
		if ref.UID == uid && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}
