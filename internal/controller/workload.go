package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/lookout-operator/lookout/internal/render"
)

// The steps the workload skeleton (skeleton.go) is built of.

// memories holds what a reconciler remembers per workload, made on first use.
// Reconciles of one key never overlap, so an M needs no lock of its own.
type memories[M any] struct {
	mu    sync.Mutex
	byKey map[types.NamespacedName]*M
}

// of is the memory of key; made by make (nil: the zero M) when there is none.
func (s *memories[M]) of(key types.NamespacedName, make func() *M) *M {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = map[types.NamespacedName]*M{}
	}
	m := s.byKey[key]
	if m == nil {
		if make != nil {
			m = make()
		} else {
			m = new(M)
		}
		s.byKey[key] = m
	}
	return m
}

func (s *memories[M]) drop(key types.NamespacedName) {
	s.mu.Lock()
	delete(s.byKey, key)
	s.mu.Unlock()
}

// getWorkload reads the workload named by key into obj; false when it is gone.
func getWorkload(ctx context.Context, c client.Reader, key types.NamespacedName, obj client.Object) (bool, error) {
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// ensureFinalizer adds Finalizer to obj unless it has it.
func ensureFinalizer(ctx context.Context, c client.Client, obj client.Object, kind string) error {
	if controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	controllerutil.AddFinalizer(obj, Finalizer)
	if err := c.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("add finalizer to %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// removeFinalizer lets obj go.
func removeFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := c.Patch(ctx, obj, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// selectionEvents implements handler.TypedEventHandler for watches that map an
// object (a monitor, an AlertmanagerConfig) or a Namespace to the workloads
// whose selectors match it, before or after an update: an object that stops
// matching must leave the config too. enqueue does the matching.
type selectionEvents struct {
	namespaces bool // the watched objects are Namespaces: only labels matter
	enqueue    func(ctx context.Context, q queue, objs ...client.Object)
}

func (h *selectionEvents) Create(ctx context.Context, e event.CreateEvent, q queue) {
	h.enqueue(ctx, q, e.Object)
}

func (h *selectionEvents) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	if h.namespaces && equalLabels(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) {
		return // only labels matter to namespace selectors
	}
	if !h.namespaces && e.ObjectOld.GetGeneration() == e.ObjectNew.GetGeneration() &&
		equalLabels(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) &&
		e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp()) {
		return // a status or metadata-only change
	}
	h.enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
}

func (h *selectionEvents) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.enqueue(ctx, q, e.Object)
}

func (h *selectionEvents) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.enqueue(ctx, q, e.Object)
}

// renderFailed ends a reconcile whose gather or render failed (stop is false when err is
// nil). A *render.SpecError stalls until the user changes the spec or an input it reads:
// Reconciled=False with the reason, a Warning Event, no requeue, and what runs keeps its
// last good configuration. Any other error is a read failure, retried with backoff.
func renderFailed(ctx context.Context, rec recorder.EventRecorder, owner client.Object, kind string, st *statusUpdate, err error) (stop bool, _ ctrl.Result, _ error) {
	if err == nil {
		return false, ctrl.Result{}, nil
	}
	var specErr *render.SpecError
	if errors.As(err, &specErr) {
		st.reconcileErr = specErr
		rec.Eventf(owner, nil, corev1.EventTypeWarning, specErr.Reason, "Reconcile", "%s", specErr.Message)
		ctrl.LoggerFrom(ctx).Info(kind+" cannot be rendered", "object", klog.KObj(owner), "reason", specErr.Reason, "message", specErr.Message)
		return true, ctrl.Result{}, nil
	}
	st.reconcileErr = &render.SpecError{Reason: ReasonReadFailed, Message: err.Error()}
	return true, ctrl.Result{}, err
}
