package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PostgresClusterStatus is the observed state of a PostgresCluster: PGO's
// fields, and what users of a replicated database need to see (who is
// primary, how far behind each replica is, the last failover and
// switchover).
type PostgresClusterStatus struct {
	// observedGeneration is the metadata.generation the status was computed
	// for, set when that generation was applied.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Reconciled (the spec was rendered and applied; False with
	// the reason when it cannot be) and Available (every instance ready).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Per instance set, the pods the StatefulSets report.
	// +listType=map
	// +listMapKey=name
	// +optional
	InstanceSets []PostgresInstanceSetStatus `json:"instances,omitempty"`

	// The major version the instances run.
	// +optional
	PostgresVersion int `json:"postgresVersion,omitempty"`

	// +optional
	Patroni PatroniStatus `json:"patroni,omitempty"`

	// pgBackRest: repositories, backup Jobs, the last backups and archiving.
	// +optional
	PGBackRest *PGBackRestStatus `json:"pgbackrest,omitempty"`

	// The pooler's pods, when spec.proxy is set.
	// +optional
	Proxy *PostgresProxyStatus `json:"proxy,omitempty"`

	// Ready is "<ready>/<desired>" instances, for the printer column.
	// +optional
	Ready string `json:"ready,omitempty"`

	// Primary is the instance (pod) that is primary; empty while none is.
	// +optional
	Primary string `json:"primary,omitempty"`

	// Timeline is the primary's PostgreSQL timeline.
	// +optional
	Timeline int64 `json:"timeline,omitempty"`

	// SynchronousStandbys are the replicas the primary waits for on commit
	// (synchronous_standby_names in force); empty when commits wait for none.
	// +optional
	// +listType=atomic
	SynchronousStandbys []string `json:"synchronousStandbys,omitempty"`

	// Replicas is each replica as the primary and the replica report it.
	// +optional
	// +listType=map
	// +listMapKey=name
	Replicas []ReplicaStatus `json:"replicas,omitempty"`

	// FailoverBlocked says why no replica would be promoted if the primary
	// were lost now, or why none is while it is lost; empty when one would.
	// +optional
	FailoverBlocked string `json:"failoverBlocked,omitempty"`

	// LastFailover is the last unplanned change of primary.
	// +optional
	LastFailover *PrimaryChange `json:"lastFailover,omitempty"`

	// LastSwitchover is the last planned change of primary.
	// +optional
	LastSwitchover *PrimaryChange `json:"lastSwitchover,omitempty"`

	// AppliedGeneration is the generation of the spec every instance runs
	// with (Lookout's own field): lower while one has yet to apply the last
	// change, absent while one does not answer.
	// +optional
	AppliedGeneration int64 `json:"appliedGeneration,omitempty"`

	// PendingRestart lists the instances whose PostgreSQL waits for a
	// restart to apply parameters (Lookout's own field). Lookout restarts
	// them one at a time, replicas first, then switches the primary over to
	// a restarted replica.
	// +optional
	PendingRestart []InstancePendingRestart `json:"pendingRestart,omitempty"`

	// InstanceVersions is the PostgreSQL each instance runs (Lookout's own
	// field): its pod's image and the release the server reports. A change
	// of spec.image within the major is rolled out one instance at a time
	// (the MinorUpgrade condition).
	// +optional
	// +listType=map
	// +listMapKey=name
	InstanceVersions []InstanceVersion `json:"instanceVersions,omitempty"`

	// MajorUpgrade is the last major upgrade (Lookout's own field): a
	// change of spec.postgresVersion allowed by the
	// postgres-operator.crunchydata.com/allow-upgrade annotation.
	// +optional
	MajorUpgrade *MajorUpgradeStatus `json:"majorUpgrade,omitempty"`
}

// InstanceVersion is the PostgreSQL one instance runs.
type InstanceVersion struct {
	// The instance (pod).
	Name string `json:"name"`

	// The image of its PostgreSQL container.
	// +optional
	Image string `json:"image,omitempty"`

	// The PostgreSQL release the server reports ("15.20"); empty while it
	// does not answer.
	// +optional
	Version string `json:"version,omitempty"`
}

// MajorUpgradeStatus is where a major upgrade is, as its primary reports it.
type MajorUpgradeStatus struct {
	From int `json:"from"`
	To   int `json:"to"`

	// Step: Checking (pg_upgrade --check), Stopping (the replicas), Upgrading
	// (pg_upgrade --link), Upgraded (the new major serves; replicas cloning),
	// Complete (every instance runs it), CheckFailed or Failed (the old
	// major runs on).
	Step string `json:"step"`

	// What failed, or what is left.
	// +optional
	Message string `json:"message,omitempty"`

	// Downtime: from the primary's shutdown to the new major accepting
	// writes.
	// +optional
	Downtime string `json:"downtime,omitempty"`

	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// InstancePendingRestart is what one instance waits for a restart to apply.
type InstancePendingRestart struct {
	// The instance (pod).
	Name string `json:"name"`

	// The parameters that apply only at the next start.
	// +optional
	Parameters []string `json:"parameters,omitempty"`

	// The last restart of a rolling restart the instance carried out.
	// +optional
	RestartDone string `json:"restartDone,omitempty"`

	// On the primary: a pending parameter lowers one that standbys may not
	// run below the primary's value (max_connections, ...), so the primary
	// restarts first, in place.
	// +optional
	LowersStandbyLimits bool `json:"lowersStandbyLimits,omitempty"`
}

// PostgresInstanceSetStatus counts the pods of one instance set.
type PostgresInstanceSetStatus struct {
	Name string `json:"name"`

	// Total number of pods.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Total number of ready pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Total number of pods that have the desired specification.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
}

// PatroniStatus keeps PGO's status fields for the HA engine.
type PatroniStatus struct {
	// The PostgreSQL system identifier of the cluster.
	// +optional
	SystemIdentifier string `json:"systemIdentifier,omitempty"`

	// The value of the trigger-switchover annotation last carried out.
	// +optional
	Switchover *string `json:"switchover,omitempty"`

	// The timeline the last switchover started from.
	// +optional
	SwitchoverTimeline *int64 `json:"switchoverTimeline,omitempty"`
}

// ReplicaStatus is one replica's replication state.
type ReplicaStatus struct {
	// The instance (pod).
	Name string `json:"name"`

	// Streaming, Catchup, ... (pg_stat_replication.state on the primary), or
	// NotStreaming when the primary lists no connection from it.
	// +optional
	State string `json:"state,omitempty"`

	// async, sync, quorum or potential.
	// +optional
	SyncState string `json:"syncState,omitempty"`

	// How many bytes of WAL the replica has yet to replay.
	// +optional
	LagBytes int64 `json:"lagBytes"`

	// How far behind the replica's replay is, in seconds ("0.25").
	// +optional
	LagSeconds string `json:"lagSeconds,omitempty"`
}

// PrimaryChange is a failover or switchover as the new primary reported it.
type PrimaryChange struct {
	// When the new primary was promoted.
	Time metav1.Time `json:"time"`

	// The instance promoted.
	To string `json:"to"`

	// How long it took from the loss (or hand-over) of the old primary to
	// the promotion ("1.4s").
	// +optional
	Duration string `json:"duration,omitempty"`

	// The timeline the new primary started.
	// +optional
	Timeline int64 `json:"timeline,omitempty"`
}

// Condition types of a PostgresCluster.
const (
	// ConditionReconciled True: every object of the spec was applied;
	// False: the spec cannot be rendered or a write failed (the reason says
	// which); what runs is left as it was.
	ConditionReconciled = "Reconciled"
	// ConditionAvailable True: every desired instance is ready and one is
	// primary; False otherwise (the reason and message say what is missing).
	ConditionAvailable = "Available"
	// ConditionMinorUpgrade True: spec.image changed within the major and
	// the instances are being moved to it one at a time (reason Upgrading;
	// the message says which run what); False with reason Upgraded once
	// every instance runs it and the cluster is whole again (the message
	// says how long it took). Absent until the image first changes.
	ConditionMinorUpgrade = "MinorUpgrade"
)

// Reasons of the MinorUpgrade condition; a refused image is
// Reconciled=False with ReasonMinorDowngrade or ReasonImageMajor.
const (
	ReasonUpgrading      = "Upgrading"
	ReasonUpgraded       = "Upgraded"
	ReasonMinorDowngrade = "MinorDowngrade"
	ReasonImageMajor     = "ImageMajorMismatch"
)

// AnnotationAllowMinorDowngrade set to "true" lets a change of spec.image
// to an older minor release of the major roll out (PostgreSQL's on-disk
// format is the same across minors; a release's notes may still ask for
// steps after an upgrade that a downgrade does not undo).
const AnnotationAllowMinorDowngrade = "lookout.dev/allow-minor-downgrade"
