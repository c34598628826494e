package controller

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
