// Package apply converges desired objects into the cluster with server-side
// apply under one field owner. It writes nothing when the live object already
// holds every desired field, and prunes owned objects that are no longer
// desired.
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// readers is the pool of objects of gvk to read the cache into.
func (a *Applier) readers(gvk schema.GroupVersionKind) *sync.Pool {
	p, ok := a.pools.Load(gvk)
	if !ok {
		p, _ = a.pools.LoadOrStore(gvk, &sync.Pool{})
	}
	return p.(*sync.Pool)
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

var statefulSetKind = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}

// metadataOnly: Secrets and ConfigMaps are cached as metadata only (their contents are
// read by name when needed).
func metadataOnly(gk schema.GroupKind) bool {
	return gk == schema.GroupKind{Kind: "Secret"} || gk == schema.GroupKind{Kind: "ConfigMap"}
}

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

func missingOrErr(err error, gvk schema.GroupVersionKind, key client.ObjectKey) (Result, error) {
	if apierrors.IsNotFound(err) {
		return Created, nil
	}
	return Unchanged, fmt.Errorf("read %s %s: %w", gvk.Kind, key, err)
}

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

// hashOf hashes the desired object as rendered (without the hash
// annotation, which render never sets). Built-in kinds hash their protobuf
// encoding, which Kubernetes generates deterministically (map keys sorted)
// and which is several times cheaper than JSON; other kinds hash their JSON
// (fields in declaration order, map keys sorted). Secrets and ConfigMaps, whose
// data is most of what an apply hashes (the configuration pieces, on every
// reconcile), hash the encoding of their metadata and then their data, key by
// key, without copying it into an encoding first. The kind is part of the
// hash. A library upgrade that changes an encoding costs one write per
// object, never a missed change.
func hashOf(obj client.Object) (string, error) {
	if obj.GetAnnotations()[HashAnnotation] != "" {
		return "", fmt.Errorf("%T %s already carries %s", obj, client.ObjectKeyFromObject(obj), HashAnnotation)
	}
	s := hashStates.Get().(*hashState)
	defer hashStates.Put(s)
	s.h.Reset()
	gvk := obj.GetObjectKind().GroupVersionKind()
	// What gvk.String() gives, without building it.
	s.buf = append(append(append(append(append(append(s.buf[:0], gvk.Group...), '/'), gvk.Version...), ", Kind="...), gvk.Kind...), 0)
	s.h.Write(s.buf)
	var err error
	switch o := obj.(type) {
	case *corev1.Secret:
		err = s.meta(&o.ObjectMeta)
		s.fields(string(o.Type))
		s.bools(o.Immutable)
		hashMap(s, o.Data)
		hashMap(s, o.StringData)
	case *corev1.ConfigMap:
		err = s.meta(&o.ObjectMeta)
		s.bools(o.Immutable)
		hashMap(s, o.Data)
		hashMap(s, o.BinaryData)
	default:
		var b []byte
		if pm, ok := obj.(protoMarshaler); ok {
			b, err = s.marshal(pm)
		} else {
			b, err = json.Marshal(obj)
		}
		s.h.Write(b)
	}
	if err != nil {
		return "", fmt.Errorf("hash %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(s.h.Sum(sum[:0])[:12]), nil
}

// hashState is one hashOf's digest and buffer, pooled: a render applies hundreds of objects
// (a Role and a RoleBinding per namespace), and hashing each would otherwise allocate a
// digest and its encoding every time.
type hashState struct {
	h   hash.Hash
	buf []byte
}

var hashStates = sync.Pool{New: func() any { return &hashState{h: sha256.New()} }}

// protoMarshaler is what the generated protobuf code of the built-in kinds offers.
type protoMarshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// marshal encodes m into the state's buffer, as m.Marshal() would into a new one.
func (s *hashState) marshal(m protoMarshaler) ([]byte, error) {
	size := m.Size()
	s.buf = slices.Grow(s.buf[:0], size)[:size]
	n, err := m.MarshalToSizedBuffer(s.buf)
	if err != nil {
		return nil, err
	}
	return s.buf[:n], nil
}

// meta hashes an object's metadata in its protobuf encoding.
func (s *hashState) meta(m *metav1.ObjectMeta) error {
	b, err := s.marshal(m)
	if err != nil {
		return err
	}
	s.field(b)
	return nil
}

// field hashes b with its length first, so that no two lists of fields hash the same bytes.
func (s *hashState) field(b []byte) {
	s.length(len(b))
	s.h.Write(b)
}

// fields hashes each of fields as field does.
func (s *hashState) fields(fields ...string) {
	for _, f := range fields {
		s.length(len(f))
		io.WriteString(s.h, f)
	}
}

// length hashes n as a varint, the prefix of a field.
func (s *hashState) length(n int) {
	var b [binary.MaxVarintLen64]byte
	s.h.Write(b[:binary.PutUvarint(b[:], uint64(n))])
}

// bools hashes an optional bool as its value and whether it is set, both written out.
func (s *hashState) bools(b *bool) {
	v, set := "false", "false"
	if b != nil {
		set = "true"
		if *b {
			v = "true"
		}
	}
	s.fields(v, set)
}

// hashMap hashes a map's size (written out), then its entries in key order.
func hashMap[V string | []byte](s *hashState, m map[string]V) {
	var n [20]byte
	s.field(strconv.AppendInt(n[:0], int64(len(m)), 10))
	keys := slices.AppendSeq(make([]string, 0, 16), maps.Keys(m))
	slices.Sort(keys)
	for _, k := range keys {
		s.fields(k)
		switch v := any(m[k]).(type) {
		case []byte:
			s.field(v)
		case string:
			s.fields(v)
		}
	}
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

// contains reports whether every field set in desired has the same value in
// live. Lists must have the same length, element by element; fields the
// server defaulted are ignored. Of metadata only labels, annotations and
// ownerReferences are compared.
func contains(desired, live any, path string) bool {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, dv := range d {
			if path == "" && (k == "status" || k == "apiVersion" || k == "kind") {
				continue
			}
			if path == "" && k == "metadata" {
				if !metadataMapContains(dv, l[k]) {
					return false
				}
				continue
			}
			lv, ok := l[k]
			if !ok {
				if isEmpty(dv) {
					continue
				}
				return false
			}
			if !contains(dv, lv, path+"."+k) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(d) {
			return false
		}
		for i := range d {
			if !contains(d[i], l[i], path) {
				return false
			}
		}
		return true
	case string:
		l, ok := live.(string)
		if !ok {
			return false
		}
		if d == l {
			return true
		}
		// Quantities come back canonicalised (0.5 → 500m).
		dq, err1 := resource.ParseQuantity(d)
		lq, err2 := resource.ParseQuantity(l)
		return err1 == nil && err2 == nil && dq.Cmp(lq) == 0
	case int64, float64:
		return numEqual(d, live)
	default:
		return fmt.Sprint(desired) == fmt.Sprint(live)
	}
}

func metadataMapContains(desired, live any) bool {
	d, _ := desired.(map[string]any)
	l, _ := live.(map[string]any)
	for _, k := range []string{"labels", "annotations"} {
		if dv, ok := d[k]; ok {
			if !contains(dv, l[k], ".metadata") {
				return false
			}
		}
	}
	// Owner references are a set keyed by UID: a co-owned object carries
	// other owners' references too.
	dr, _ := d["ownerReferences"].([]any)
	lr, _ := l["ownerReferences"].([]any)
	for _, want := range dr {
		wm, _ := want.(map[string]any)
		found := false
		for _, have := range lr {
			hm, _ := have.(map[string]any)
			if hm["uid"] == wm["uid"] && contains(wm, hm, ".metadata.ownerReferences") {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func metadataContains(desired, live metav1.Object) bool {
	labels, annotations := live.GetLabels(), live.GetAnnotations()
	for k, v := range desired.GetLabels() {
		if labels[k] != v {
			return false
		}
	}
	for k, v := range desired.GetAnnotations() {
		if annotations[k] != v {
			return false
		}
	}
	refs := live.GetOwnerReferences()
	for _, want := range desired.GetOwnerReferences() {
		found := false
		for _, have := range refs {
			if have.UID == want.UID {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case float64:
		return x == 0
	}
	return v == nil
}

func numEqual(a, b any) bool {
	return toFloat(a) == toFloat(b)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case int:
		return float64(x)
	case float64:
		return x
	}
	return -1
}
