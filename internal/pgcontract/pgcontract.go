// Package pgcontract is the agreement between the PostgresCluster controller,
// which renders the pods of a cluster, and the instance manager (`lookout
// instance`) that runs as the entrypoint of each of them: the names, labels,
// paths, ports and the two JSON documents that cross between them. Neither
// side reads anything of the other that is not written down here.
package pgcontract

import (
	"fmt"
	"time"
)

// Labels and annotations keep Crunchy PGO's names: network policies,
// dashboards and Services select on them.
const (
	LabelPrefix      = "postgres-operator.crunchydata.com/"
	LabelCluster     = LabelPrefix + "cluster"
	LabelInstanceSet = LabelPrefix + "instance-set"
	LabelInstance    = LabelPrefix + "instance"
	// LabelRole is set by the instance manager on its own pod; the
	// `<cluster>-primary` and `<cluster>-replicas` Services select on it.
	LabelRole   = LabelPrefix + "role"
	RolePrimary = "master"
	RoleReplica = "replica"

	// AnnotationTriggerSwitchover on the PostgresCluster starts the
	// switchover that spec.patroni.switchover describes; each new value is
	// a new request.
	AnnotationTriggerSwitchover = LabelPrefix + "trigger-switchover"
)

// The environment of the instance container (downward API).
const (
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
	EnvPodIP        = "POD_IP"
)

// Paths inside an instance pod.
const (
	// DataMount holds PGDATA (see PGDATA) on the instance's data volume.
	DataMount = "/pgdata"
	// WALMount, when the instance set has a walVolumeClaimSpec, holds
	// pg_wal (PGDATA/pg_wal is a symlink to WALMount/pg<major>_wal).
	WALMount = "/pgwal"
	// TLSDir holds the server certificate of the instance and the cluster
	// CA: tls.crt, tls.key, ca.crt. Replication connections verify it.
	TLSDir = "/etc/lookout-pg/tls"
	// SecretsDir holds replication-password: the password of
	// ReplicationUser, the same on every instance.
	SecretsDir              = "/etc/lookout-pg/secrets"
	ReplicationPasswordFile = "replication-password"
)

// PGDATA is the data directory of a major version under DataMount, as PGO
// lays it out (/pgdata/pg15).
func PGDATA(major int) string { return fmt.Sprintf("%s/pg%d", DataMount, major) }

// ReplicationUser streams WAL and runs pg_rewind; PGO's name.
const ReplicationUser = "_crunchyrepl"

// The instance manager's HTTP server (probes, metrics, status).
const (
	ManagerPort     = 8008
	ManagerPortName = "manager"
	PathLive        = "/healthz"
	PathReady       = "/readyz"
	PathMetrics     = "/metrics"
	PathStatus      = "/status"
	// PostgresPortName names the PostgreSQL port on the container and the
	// Services.
	PostgresPortName = "postgres"
)

// LeaseName is the coordination.k8s.io Lease whose holder is the primary.
func LeaseName(cluster string) string { return cluster + "-leader" }

// ConfigSecretName is the Secret the controller writes and every instance
// manager of the cluster watches through the API (get/watch on that one
// name): ConfigKey holds a Config as JSON. Changes take effect without a
// restart where PostgreSQL allows it.
func ConfigSecretName(cluster string) string { return cluster + "-instance-config" }

const ConfigKey = "config.json"

// Config is what the controller tells every instance manager of a cluster.
type Config struct {
	// Generation is the PostgresCluster's metadata.generation it was
	// rendered from; instances report the one they applied.
	Generation int64 `json:"generation"`
	// PostgresVersion is the major version (15).
	PostgresVersion int `json:"postgresVersion"`
	Port            int `json:"port"`
	// Parameters are postgresql.conf settings, already validated by the
	// controller; the instance manager owns the rest of the file
	// (listen_addresses, port, replication, ssl).
	Parameters map[string]string `json:"parameters,omitempty"`

	// SynchronousMode, SynchronousModeStrict and SynchronousNodeCount are
	// Patroni's synchronous_mode settings; MaximumLagOnFailover (bytes)
	// keeps a replica further behind than that from being promoted.
	SynchronousMode       bool  `json:"synchronousMode,omitempty"`
	SynchronousModeStrict bool  `json:"synchronousModeStrict,omitempty"`
	SynchronousNodeCount  int   `json:"synchronousNodeCount,omitempty"`
	MaximumLagOnFailover  int64 `json:"maximumLagOnFailover,omitempty"`

	// LeaseDuration is how long a primary's lease lasts without renewal
	// (spec.patroni.leaderLeaseDurationSeconds).
	LeaseDuration Duration `json:"leaseDuration"`

	// Users the primary creates or updates; Verifier is a SCRAM-SHA-256
	// verifier, never a password.
	Users []User `json:"users,omitempty"`

	// Switchover, when set, asks the primary to hand over to Target (any
	// healthy replica when empty). Trigger is the annotation's value: a new
	// value is a new request; the instance reports the last it carried out.
	Switchover *Switchover `json:"switchover,omitempty"`

	// Shutdown stops PostgreSQL on every instance (spec.shutdown); Paused
	// stops the instance managers from changing roles (spec.paused).
	Shutdown bool `json:"shutdown,omitempty"`
	Paused   bool `json:"paused,omitempty"`

	// Restart, when set, asks one instance to restart PostgreSQL so that
	// parameters it takes only at start apply: the controller's rolling
	// restart names one instance at a time, replicas first.
	Restart *Restart `json:"restart,omitempty"`

	// Backups, when set, turns on WAL archiving to its repositories.
	Backups *Backups `json:"backups,omitempty"`
	// Restore, when set, bootstraps a new cluster from a backup.
	Restore *Restore `json:"restore,omitempty"`
	// InPlaceRestore, when set, restores the running cluster from one of
	// its own repositories (spec.backups.pgbackrest.restore and the
	// pgbackrest-restore annotation); the primary carries it out once per
	// ID.
	InPlaceRestore *InPlaceRestore `json:"inPlaceRestore,omitempty"`

	// Poolers, when set (spec.proxy.pgBouncer), are paused around every
	// planned primary change (pooler.go).
	Poolers *Poolers `json:"poolers,omitempty"`

	// MajorUpgrade, when set, asks the instances to move the cluster's data
	// to another major version (upgrade.go).
	MajorUpgrade *MajorUpgrade `json:"majorUpgrade,omitempty"`
}

type User struct {
	Name      string   `json:"name"`
	Databases []string `json:"databases,omitempty"`
	// Options is appended to CREATE/ALTER ROLE (spec.users[].options,
	// validated by the controller).
	Options  string `json:"options,omitempty"`
	Verifier string `json:"verifier"`
}

// Restart names the instance (pod) to restart. Token is new for each
// request; the instance reports the last it carried out
// (Status.RestartDone), and does not carry out one token twice.
type Restart struct {
	Instance string `json:"instance"`
	Token    string `json:"token"`
}

type Switchover struct {
	Trigger string `json:"trigger"`
	// Target is an instance (pod) name, or empty.
	Target string `json:"target,omitempty"`
	// Type is "Switchover" (the primary must be healthy) or "Failover"
	// (promote Target even when the primary is not).
	Type string `json:"type"`
}

// Duration is a time.Duration that is a string ("5s") in JSON.
type Duration struct{ time.Duration }

func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("duration must be a string, got %s", b)
	}
	v, err := time.ParseDuration(string(b[1 : len(b)-1]))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// Status is what an instance manager serves at PathStatus; the controller
// polls it to fill the PostgresCluster's status.
type Status struct {
	Instance string `json:"instance"`
	// Role is RolePrimary, RoleReplica, or "" while neither (starting,
	// fenced, stopped).
	Role string `json:"role"`
	// Ready is what PathReady answers.
	Ready bool `json:"ready"`
	// Fenced: PostgreSQL is kept down (or read-only) because this instance
	// may not act as primary and has not rejoined yet.
	Fenced bool `json:"fenced,omitempty"`
	// State is one word for explain: Initializing, Cloning, Running,
	// Rewinding, Promoting, Demoting, Stopped, Failed.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Incarnation is the id of this run of the instance manager, new at
	// every start: a replica that finds the primary's pod answering with
	// another one than the Lease records knows its container restarted.
	Incarnation string `json:"incarnation,omitempty"`

	PostgresVersion  string `json:"postgresVersion,omitempty"`
	SystemIdentifier string `json:"systemIdentifier,omitempty"`
	Timeline         int    `json:"timeline,omitempty"`
	// WAL positions as LSN strings ("0/3000060"): the primary's current
	// write position, a replica's received and replayed ones.
	CurrentLSN  string `json:"currentLSN,omitempty"`
	ReceivedLSN string `json:"receivedLSN,omitempty"`
	ReplayedLSN string `json:"replayedLSN,omitempty"`
	// Streaming, on a replica: its WAL receiver streams from the primary.
	// A replica electing a new primary compares positions only with peers
	// that stopped streaming, whose positions can no longer move.
	Streaming bool `json:"streaming,omitempty"`
	// Replicas, on the primary: each standby it streams to.
	Replicas []ReplicaStatus `json:"replicas,omitempty"`
	// SynchronousStandbys in force on the primary (synchronous_standby_names).
	SynchronousStandbys []string `json:"synchronousStandbys,omitempty"`
	// FailoverBlocked, on a replica that would take over: why it does not.
	FailoverBlocked string `json:"failoverBlocked,omitempty"`
	// PoolerProblem, after a switchover: the poolers that did not pause or
	// resume, and why (the switchover went on without them).
	PoolerProblem string `json:"poolerProblem,omitempty"`
	// AppliedGeneration is the Config.Generation this instance runs with;
	// PendingRestart lists parameters that need a restart to apply.
	AppliedGeneration int64    `json:"appliedGeneration,omitempty"`
	PendingRestart    []string `json:"pendingRestart,omitempty"`
	// RestartDone is the Token of the last Config.Restart carried out.
	RestartDone string `json:"restartDone,omitempty"`
	// LowersStandbyLimits, on the primary: a pending parameter is one a
	// standby may not hold below the primary's value (max_connections,
	// max_worker_processes, max_wal_senders, max_prepared_transactions,
	// max_locks_per_transaction), and it is being lowered: the primary
	// must restart first, or a restarted standby would refuse to run.
	LowersStandbyLimits bool `json:"lowersStandbyLimits,omitempty"`
	// LastSwitchoverTrigger is the last Switchover.Trigger carried out.
	LastSwitchoverTrigger string `json:"lastSwitchoverTrigger,omitempty"`
	// LastPromotion is when this instance last became primary, and how long
	// the promotion took from the moment the old primary was lost.
	LastPromotion         *time.Time `json:"lastPromotion,omitempty"`
	LastPromotionDuration Duration   `json:"lastPromotionDuration,omitempty"`
	// LastPromotionReason is why: PromotionFailover (the old primary was
	// lost), PromotionSwitchover (it handed over), or PromotionBootstrap
	// (the first primary of the cluster).
	LastPromotionReason string `json:"lastPromotionReason,omitempty"`
	// Archive, on the primary of a cluster with Backups.
	Archive *ArchiveStatus `json:"archive,omitempty"`
	// InPlaceRestore is the in-place restore this instance takes or took
	// part in (its last step); LastRestore is the ID of the last one the
	// cluster finished (the Lease records it).
	InPlaceRestore *InPlaceRestoreStatus `json:"inPlaceRestore,omitempty"`
	LastRestore    string                `json:"lastRestore,omitempty"`
	// Backups are the last backup this instance ran per repo and type.
	Backups []BackupResult `json:"backups,omitempty"`
	// MajorUpgrade is where this instance is in the last Config.MajorUpgrade
	// it took part in.
	MajorUpgrade *MajorUpgradeStatus `json:"majorUpgrade,omitempty"`
}

// Reasons of a promotion (Status.LastPromotionReason).
const (
	PromotionFailover   = "Failover"
	PromotionSwitchover = "Switchover"
	PromotionBootstrap  = "Bootstrap"
)

type ReplicaStatus struct {
	Instance   string  `json:"instance"`
	State      string  `json:"state"`     // pg_stat_replication.state
	SyncState  string  `json:"syncState"` // async, sync, quorum, potential
	LagBytes   int64   `json:"lagBytes"`
	LagSeconds float64 `json:"lagSeconds"`
}

// The instance manager's metrics at PathMetrics (gauges unless _total), for
// the PodMonitor and PrometheusRule the controller renders.
const (
	MetricUp                    = "lookout_pg_up"                      // 1 while postgres answers
	MetricRole                  = "lookout_pg_role"                    // 1, label role: master|replica|""
	MetricTimeline              = "lookout_pg_timeline"                // current timeline
	MetricWALPosition           = "lookout_pg_wal_position_bytes"      // current (primary) or received (replica) LSN
	MetricReplicationLagBytes   = "lookout_pg_replication_lag_bytes"   // label replica (on the primary)
	MetricReplicationLagSeconds = "lookout_pg_replication_lag_seconds" // label replica (on the primary)
	MetricReplicaSync           = "lookout_pg_replica_sync_state"      // 1, labels replica, sync_state
	MetricStreaming             = "lookout_pg_streaming"               // 1 while a replica streams
	MetricConnections           = "lookout_pg_connections"             // client backends
	MetricMaxConnections        = "lookout_pg_max_connections"         // max_connections
	MetricXactCommit            = "lookout_pg_xact_commit_total"
	MetricXactRollback          = "lookout_pg_xact_rollback_total"
	MetricSyncStandbys          = "lookout_pg_synchronous_standbys" // standbys a commit waits for (0: asynchronous)
	MetricFailoverBlocked       = "lookout_pg_failover_blocked"     // 1 while a failover is refused
	MetricPendingRestart        = "lookout_pg_pending_restart"      // parameters waiting for a restart

	// With backups: archiving (pg_stat_archiver) and the last backups.
	MetricArchiveLastArchived = "lookout_pg_archive_last_archived_timestamp_seconds"
	MetricArchiveLastFailed   = "lookout_pg_archive_last_failed_timestamp_seconds"
	MetricStanzaReady         = "lookout_pg_backup_stanza_ready"                      // 1 once stanza-create succeeded (primary)
	MetricBackupLast          = "lookout_pg_backup_last_completion_timestamp_seconds" // labels repo, type
	MetricBackupLastDuration  = "lookout_pg_backup_last_duration_seconds"             // labels repo, type
	MetricBackupLastSize      = "lookout_pg_backup_last_repository_bytes"             // labels repo, type
)

// Backups configure pgBackRest on every instance (spec.backups.pgbackrest):
// the repositories WAL is archived to and backups are written to.
type Backups struct {
	// Stanza names the cluster in its repositories ("db", PGO's name).
	Stanza string `json:"stanza"`
	Repos  []Repo `json:"repos"`
	// Global are pgBackRest options for every command ("repo1-retention-full":
	// "2"), already validated by the controller.
	Global map[string]string `json:"global,omitempty"`
}

// Repo is one pgBackRest repository: a path on a volume, or an S3 bucket.
// S3 credentials are never in the Config: they are pgBackRest option files
// ("repo1-s3-key=…") in BackupConfDir, as PGO projects its configuration
// Secrets.
type Repo struct {
	// Name is repo1 … repo4, as pgBackRest numbers them.
	Name   string  `json:"name"`
	Volume *Volume `json:"volume,omitempty"`
	S3     *S3     `json:"s3,omitempty"`
	// Path is the repository's path on the volume or in the bucket
	// (default /pgbackrest/<name>).
	Path string `json:"path,omitempty"`
}

type Volume struct{}

type S3 struct {
	Bucket   string `json:"bucket"`
	Endpoint string `json:"endpoint"`
	Region   string `json:"region"`
	// Port of the endpoint (443 when 0).
	Port int `json:"port,omitempty"`
	// CAFile is a file of the CAs the endpoint's certificate is checked
	// against (the system's when empty); pgBackRest 2.45 speaks only HTTPS.
	CAFile string `json:"caFile,omitempty"`
	// URIStyle is "host" (default) or "path".
	URIStyle string `json:"uriStyle,omitempty"`
}

// BackupConfDir holds pgBackRest option files (*.conf) the instance manager
// includes: the S3 credentials of Config.Backups' repositories.
// RestoreConfDir holds those of the repository a new cluster is restored
// from (Config.Restore), which may be another cluster's.
const (
	BackupConfDir  = "/etc/pgbackrest/conf.d"
	RestoreConfDir = "/etc/pgbackrest/restore.d"
)

// Restore makes the first instance of a new cluster restore a backup from
// a repository instead of running initdb (spec.dataSource).
type Restore struct {
	Stanza string `json:"stanza"`
	Repo   Repo   `json:"repo"`
	// Options are pgbackrest restore options ("--type=time",
	// "--target=2026-11-28 20:00:00+00"), validated by the controller.
	Options []string `json:"options,omitempty"`
}

// InPlaceRestore asks the primary to restore the cluster's own data from
// Repo (one of Config.Backups' repositories) to the target Options name:
// it checks the target first and refuses it without stopping anything;
// then the replicas stop, the primary restores with --delta and promotes
// on a new timeline, and the replicas clone it again.
type InPlaceRestore struct {
	// ID is the annotation's value: a new value is a new restore.
	ID      string   `json:"id"`
	Repo    string   `json:"repo"`
	Options []string `json:"options,omitempty"`
}

// InPlaceRestoreStatus is one instance's part in the in-place restore ID.
type InPlaceRestoreStatus struct {
	ID string `json:"id"`
	// Step is one of the Restore* steps.
	Step   string `json:"step"`
	Reason string `json:"reason,omitempty"`
}

// Steps of an in-place restore (InPlaceRestoreStatus.Step): the primary
// checks, waits for the replicas to stop, restores, replays WAL and
// promotes; a replica stops and clones the restored primary.
const (
	RestoreChecking  = "Checking"
	RestoreRefused   = "Refused"
	RestoreStopping  = "StoppingReplicas"
	RestoreRestoring = "Restoring"
	RestoreReplaying = "Replaying"
	RestoreDone      = "Done"
	RestoreFailed    = "Failed"
	RestoreStopped   = "Stopped"
	RestoreRecloning = "Recloning"
)

// Backup types (PGO's schedule names map to these).
const (
	BackupFull = "full"
	BackupDiff = "diff"
	BackupIncr = "incr"
)

// PathBackup on the manager port: a POST with BackupRequest as JSON runs a
// backup on the primary and answers BackupResult when it ended. A backup
// Job runs `lookout backup`, which sends it to the primary.
const PathBackup = "/pgbackrest/backup"

type BackupRequest struct {
	Repo string `json:"repo"`
	Type string `json:"type"`
}

type BackupResult struct {
	Repo  string    `json:"repo"`
	Type  string    `json:"type"`
	Label string    `json:"label,omitempty"`
	Start time.Time `json:"start"`
	// Duration is how long the backup ran; Size the database size it read
	// and RepoSize what it wrote to the repository (bytes).
	Duration Duration `json:"duration"`
	Size     int64    `json:"size,omitempty"`
	RepoSize int64    `json:"repoSize,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// ArchiveStatus is the primary's WAL archiving (pg_stat_archiver).
type ArchiveStatus struct {
	LastArchivedWAL  string     `json:"lastArchivedWAL,omitempty"`
	LastArchivedTime *time.Time `json:"lastArchivedTime,omitempty"`
	LastFailedWAL    string     `json:"lastFailedWAL,omitempty"`
	LastFailedTime   *time.Time `json:"lastFailedTime,omitempty"`
	// StanzaReady: the stanza exists in every repository (stanza-create
	// succeeded on this primary); StanzaError says why not.
	StanzaReady bool   `json:"stanzaReady,omitempty"`
	StanzaError string `json:"stanzaError,omitempty"`
}
