package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// replace writes a Secret or ConfigMap of which only the content changed with an update
// at the resourceVersion this Applier last wrote or verified, instead of an apply: the
// apiserver then stores the new content without merging it field by field, which is most
// of what a configuration piece's write costs there (a change among thousands of monitors
// rewrites one). It is taken only when the object is exactly as this Applier left it (a
// verified resourceVersion, not being deleted) and its labels, owner references and
// annotations but the hash are those desired: the update then writes exactly what the
// apply would. It reports false, having written nothing, when that does not hold or the
// update meets a conflict (someone wrote meanwhile); the apply follows.
func (a *Applier) replace(ctx context.Context, desired client.Object, hash string) (bool, error) {
	gvk := desired.GetObjectKind().GroupVersionKind()
	key := client.ObjectKeyFromObject(desired)
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(gvk)
	if a.metadata().Get(ctx, key, live, client.UnsafeDisableDeepCopy) != nil { // read only
		return false, nil
	}
	if !a.isVerified(live.UID, live.ResourceVersion) || live.DeletionTimestamp != nil ||
		!maps.Equal(live.Labels, desired.GetLabels()) ||
		!apiequality.Semantic.DeepEqual(live.OwnerReferences, desired.GetOwnerReferences()) ||
		len(live.Annotations) != len(desired.GetAnnotations())+1 || live.Annotations[HashAnnotation] == "" {
		return false, nil
	}
	for k, v := range desired.GetAnnotations() {
		if live.Annotations[k] != v {
			return false, nil
		}
	}
	var obj client.Object
	switch d := desired.(type) {
	case *corev1.Secret: // the values are only read; the answer is decoded into maps of its own
		c := *d
		c.ObjectMeta, c.Data, c.StringData = *d.ObjectMeta.DeepCopy(), maps.Clone(d.Data), maps.Clone(d.StringData)
		obj = &c
	case *corev1.ConfigMap:
		c := *d
		c.ObjectMeta, c.Data, c.BinaryData = *d.ObjectMeta.DeepCopy(), maps.Clone(d.Data), maps.Clone(d.BinaryData)
		obj = &c
	default:
		return false, nil
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[HashAnnotation] = hash
	obj.SetAnnotations(annotations)
	obj.SetResourceVersion(live.ResourceVersion)
	obj.SetUID(live.UID)
	obj.SetFinalizers(slices.Clone(live.Finalizers)) // the cache's own, and the answer is decoded into obj
	w := a.Updates
	if w == nil {
		w = a.Client
	}
	sent := a.sending(gvk.Kind, key)
	defer sent()
	if err := w.Update(ctx, obj, client.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return true, fmt.Errorf("update %s %s: %w", gvk.Kind, key, err)
	}
	a.remember(obj.GetUID(), obj.GetResourceVersion())
	return true, nil
}
