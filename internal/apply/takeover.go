package apply

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// adopting is compare's answer for an object another writer made for the same owner:
// takeOver, then apply.
const adopting Result = -1

// takeOverHash marks an object Lookout has taken over but not yet applied as desired; it
// matches no desired hash, so the next apply always follows.
const takeOverHash = "taking-over"

// takeOver makes Lookout the only manager of a Secret or ConfigMap another operator wrote
// for the same owner (a migration), before the desired apply: it applies, with force, the
// desired object plus every data key only the other writer has, so that Lookout owns them
// all; the desired apply that follows then removes the keys Lookout does not want. An old
// rule file left in a rule ConfigMap would otherwise keep firing. Other kinds are applied
// as they are (StatefulSets are recreated instead, see compare).
func (a *Applier) takeOver(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey, desired *unstructured.Unstructured, fieldManager string) error {
	if !metadataOnly(gvk.GroupKind()) {
		return nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	if err := a.Live.Get(ctx, key, live); err != nil {
		return fmt.Errorf("read %s %s to take it over: %w", gvk.Kind, key, err)
	}
	all := desired.DeepCopy()
	for _, field := range []string{"data", "binaryData"} {
		have, _ := live.Object[field].(map[string]any)
		want, _ := all.Object[field].(map[string]any)
		for k, v := range have {
			if _, ok := want[k]; ok {
				continue
			}
			if want == nil {
				want = map[string]any{}
				all.Object[field] = want
			}
			want[k] = v
		}
	}
	annotations := all.GetAnnotations()
	annotations[HashAnnotation] = takeOverHash
	all.SetAnnotations(annotations)
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(all), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("take over %s %s: %w", gvk.Kind, key, err)
	}
	// A field applied with the value it has is shared with its earlier owner, not taken:
	// drop the other writers' entries, so that Lookout alone owns every field.
	if err := a.Live.Get(ctx, key, live); err != nil {
		return fmt.Errorf("read %s %s to take it over: %w", gvk.Kind, key, err)
	}
	var ours []metav1.ManagedFieldsEntry
	for _, e := range live.GetManagedFields() {
		if e.Manager == fieldManager {
			ours = append(ours, e)
		}
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()},
		{"op": "replace", "path": "/metadata/managedFields", "value": ours},
	})
	if err != nil {
		return err
	}
	if err := a.Client.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("take over %s %s: %w", gvk.Kind, key, err)
	}
	return nil
}

var statefulSetKind = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}

// RecreatingError: the live object is being deleted, orphaning its dependents (the pods
// keep running, PVCs are never touched), so that the desired one can be created once it
// is gone. The deletion's watch event brings the owner back.
type RecreatingError struct {
	Kind string
	Key  client.ObjectKey
	Why  string
}

func (e *RecreatingError) Error() string {
	return fmt.Sprintf("%s %s is being recreated, its pods left running: %s", e.Kind, e.Key, e.Why)
}

// recreate deletes the live object (uid, when known, guards against deleting a newer one)
// with orphan propagation and reports a RecreatingError.
func (a *Applier) recreate(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey, uid types.UID, why string) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	opts := []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationOrphan)}
	if uid != "" {
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	sent := a.sending(gvk.Kind, key)
	defer sent()
	if err := a.Client.Delete(ctx, obj, opts...); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s to recreate it: %w", gvk.Kind, key, err)
	}
	if uid != "" {
		a.Forget(uid)
	}
	return &RecreatingError{Kind: gvk.Kind, Key: key, Why: why}
}
