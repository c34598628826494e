package controller

import "time"

// Reasons of the Prometheus conditions. The condition types themselves are
// the API's: monitoringv1.Available and monitoringv1.Reconciled.
//
// Reconciled
//   - True: the generated config, Services and StatefulSets match the spec.
//   - False: the spec cannot be rendered (the reason names the problem) or
//     the cluster refused a write; what was running before is left as it was.
//
// Available
//   - True: every replica of every shard is available.
//   - Degraded: some replicas are available.
//   - False: none is.
const (
	// ReasonReconcileSucceeded: everything was applied.
	ReasonReconcileSucceeded = "ReconcileSucceeded"
	// ReasonApplyFailed: the apiserver refused a write; retried with backoff.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonObjectNotOwned: an object of a name Lookout would write exists without
	// Lookout's owner reference; it is left alone, everything else is applied.
	ReasonObjectNotOwned = "ObjectNotOwned"
	// ReasonRecreating: a StatefulSet is being deleted (its pods orphaned, left running)
	// to be created anew: an immutable field changed, or another operator wrote it.
	ReasonRecreating = "StatefulSetRecreating"
	// ReasonReadFailed: reading the inputs (monitors, Secrets, ConfigMaps,
	// ServiceAccount) failed; retried with backoff.
	ReasonReadFailed = "ReadFailed"
	// ReasonPaused: spec.paused is true; nothing is changed.
	ReasonPaused = "Paused"
	// ReasonAllReplicasAvailable: Available=True.
	ReasonAllReplicasAvailable = "AllReplicasAvailable"
	// ReasonSomeReplicasUnavailable: Available=Degraded.
	ReasonSomeReplicasUnavailable = "SomeReplicasUnavailable"
	// ReasonNoReplicasAvailable: Available=False.
	ReasonNoReplicasAvailable = "NoReplicasAvailable"
)

// Finalizer lets the controller delete what cannot carry an owner reference
// to the Prometheus: RBAC in other namespaces and cluster-scoped RBAC.
const Finalizer = "lookout.dev/cleanup"

// notOwnedRecheck is how often an owner whose object is held by someone else checks
// again: such an object has no owner reference, so no watch event leads back to it.
const notOwnedRecheck = time.Minute

// recreatingRecheck bounds the wait for a StatefulSet's deletion event.
const recreatingRecheck = 5 * time.Second
