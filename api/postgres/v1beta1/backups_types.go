package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Backups is PGO's spec.backups: pgBackRest archiving and backups.
type Backups struct {
	// +optional
	PGBackRest PGBackRestArchive `json:"pgbackrest"`

	// Documented by PGO, not honoured by Lookout (refused when set).

	// +optional
	Snapshots *apiextensionsv1.JSON `json:"snapshots,omitempty"`
}

// PGBackRestArchive is pgBackRest's configuration: the repositories WAL is
// archived to and backups are written to, and the backups taken.
type PGBackRestArchive struct {
	// Secrets projected into /etc/pgbackrest/conf.d of every instance and
	// backup Job: pgBackRest option files (*.conf), such as the S3
	// credentials (repo1-s3-key, repo1-s3-key-secret).
	// +optional
	// +listType=atomic
	Configuration []ConfigurationProjection `json:"configuration,omitempty"`

	// pgBackRest options for every command ("repo1-retention-full": "2").
	// Options the operator sets itself are refused by name.
	// +optional
	Global map[string]string `json:"global,omitempty"`

	// The repositories: repo1 … repo4.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=name
	Repos []PGBackRestRepo `json:"repos"`

	// The one-off backup the pgbackrest-backup annotation starts.
	// +optional
	Manual *PGBackRestManualBackup `json:"manual,omitempty"`

	// The backup Jobs' pods.
	// +optional
	Jobs *BackupJobs `json:"jobs,omitempty"`

	// The in-place restore a new value of the pgbackrest-restore
	// annotation runs while enabled.
	// +optional
	Restore *PGBackRestRestore `json:"restore,omitempty"`

	// Documented by PGO, not honoured by Lookout (refused when set):
	// pgBackRest runs in the instance container.

	// +optional
	Metadata *apiextensionsv1.JSON `json:"metadata,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// +optional
	RepoHost *apiextensionsv1.JSON `json:"repoHost,omitempty"`
	// +optional
	Sidecars *apiextensionsv1.JSON `json:"sidecars,omitempty"`
}

// ConfigurationProjection is one source of the projected configuration
// volume. Lookout honours Secrets.
type ConfigurationProjection struct {
	// +optional
	Secret *corev1.SecretProjection `json:"secret,omitempty"`

	// Documented by Kubernetes, not honoured by Lookout (refused when set).

	// +optional
	ConfigMap *apiextensionsv1.JSON `json:"configMap,omitempty"`
	// +optional
	DownwardAPI *apiextensionsv1.JSON `json:"downwardAPI,omitempty"`
	// +optional
	ServiceAccountToken *apiextensionsv1.JSON `json:"serviceAccountToken,omitempty"`
	// +optional
	ClusterTrustBundle *apiextensionsv1.JSON `json:"clusterTrustBundle,omitempty"`
}

// PGBackRestRepo is one repository: a volume or an S3 bucket.
type PGBackRestRepo struct {
	// repo1 … repo4, as pgBackRest numbers them.
	// +kubebuilder:validation:Pattern=`^repo[1-4]$`
	Name string `json:"name"`

	// Cron schedules of backups into this repository: a CronJob
	// <cluster>-<repo>-<full|diff|incr> each.
	// +optional
	BackupSchedules *PGBackRestBackupSchedules `json:"schedules,omitempty"`

	// +optional
	S3 *RepoS3 `json:"s3,omitempty"`

	// +optional
	Volume *RepoPVC `json:"volume,omitempty"`

	// Documented by PGO, not honoured by Lookout (refused when set).

	// +optional
	Azure *apiextensionsv1.JSON `json:"azure,omitempty"`
	// +optional
	GCS *apiextensionsv1.JSON `json:"gcs,omitempty"`
}

// PGBackRestBackupSchedules are cron schedules (the CronJob syntax).
type PGBackRestBackupSchedules struct {
	// +optional
	// +kubebuilder:validation:MinLength=6
	Full *string `json:"full,omitempty"`
	// +optional
	// +kubebuilder:validation:MinLength=6
	Differential *string `json:"differential,omitempty"`
	// +optional
	// +kubebuilder:validation:MinLength=6
	Incremental *string `json:"incremental,omitempty"`
}

// RepoS3 is a repository in an S3 (or S3-compatible) bucket; the
// credentials come from a configuration Secret.
type RepoS3 struct {
	Bucket string `json:"bucket"`
	// The endpoint's host, with :port when not 443.
	Endpoint string `json:"endpoint"`
	Region   string `json:"region"`
}

// RepoPVC is a repository on a PersistentVolumeClaim (<cluster>-<repo>)
// mounted into every instance at /pgbackrest/<repo>.
type RepoPVC struct {
	VolumeClaimSpec corev1.PersistentVolumeClaimSpec `json:"volumeClaimSpec"`
}

// PGBackRestManualBackup is the backup a new value of the pgbackrest-backup
// annotation runs.
type PGBackRestManualBackup struct {
	// +kubebuilder:validation:Pattern=`^repo[1-4]$`
	RepoName string `json:"repoName"`

	// pgbackrest backup options; Lookout honours --type=full|diff|incr.
	// +optional
	// +listType=atomic
	Options []string `json:"options,omitempty"`
}

// PGBackRestRestore is PGO's in-place restore: the cluster's data is
// restored from one of its own repositories (repoName), to the target the
// options name (--type=time --target=…), once per value of the
// pgbackrest-restore annotation. Lookout checks the target before it stops
// anything; clusterName and clusterNamespace are refused (the repository
// is the cluster's own), as are the restore Job's fields (the primary
// restores).
type PGBackRestRestore struct {
	// +kubebuilder:default=false
	Enabled *bool `json:"enabled"`

	PostgresClusterDataSource `json:",inline"`
}

// BackupJobs are the settings of the backup Jobs' pods.
type BackupJobs struct {
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	PriorityClassName *string `json:"priorityClassName,omitempty"`
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=60
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// DataSource is what a new cluster is restored from.
type DataSource struct {
	// Another PostgresCluster's repository.
	// +optional
	PostgresCluster *PostgresClusterDataSource `json:"postgresCluster,omitempty"`

	// A repository and stanza (a PGO-made one, too).
	// +optional
	PGBackRest *PGBackRestDataSource `json:"pgbackrest,omitempty"`

	// Documented by PGO, not honoured by Lookout (refused when set).

	// +optional
	Volumes *apiextensionsv1.JSON `json:"volumes,omitempty"`
}

// PostgresClusterDataSource restores from a repository of another cluster
// of the same namespace.
type PostgresClusterDataSource struct {
	// +optional
	ClusterName string `json:"clusterName,omitempty"`
	// The namespace of clusterName; the cluster's own when empty (another
	// is refused: its configuration Secrets cannot be projected here).
	// +optional
	ClusterNamespace string `json:"clusterNamespace,omitempty"`
	// +kubebuilder:validation:Pattern=`^repo[1-4]$`
	RepoName string `json:"repoName"`
	// pgbackrest restore options ("--type=time", "--target=…").
	// +optional
	// +listType=atomic
	Options []string `json:"options,omitempty"`

	// Documented by PGO for its restore Job, not honoured by Lookout (the
	// first instance restores; refused when set).

	// +optional
	Resources *apiextensionsv1.JSON `json:"resources,omitempty"`
	// +optional
	Affinity *apiextensionsv1.JSON `json:"affinity,omitempty"`
	// +optional
	PriorityClassName *apiextensionsv1.JSON `json:"priorityClassName,omitempty"`
	// +optional
	Tolerations *apiextensionsv1.JSON `json:"tolerations,omitempty"`
}

// PGBackRestDataSource restores from a repository given here.
type PGBackRestDataSource struct {
	// Secrets projected into /etc/pgbackrest/restore.d of the first
	// instance: the repository's credentials.
	// +optional
	// +listType=atomic
	Configuration []ConfigurationProjection `json:"configuration,omitempty"`
	// +optional
	Global map[string]string `json:"global,omitempty"`
	Repo   DataSourceRepo    `json:"repo"`
	// +optional
	// +kubebuilder:default=db
	Stanza string `json:"stanza,omitempty"`
	// +optional
	// +listType=atomic
	Options []string `json:"options,omitempty"`

	// +optional
	Resources *apiextensionsv1.JSON `json:"resources,omitempty"`
	// +optional
	Affinity *apiextensionsv1.JSON `json:"affinity,omitempty"`
	// +optional
	PriorityClassName *apiextensionsv1.JSON `json:"priorityClassName,omitempty"`
	// +optional
	Tolerations *apiextensionsv1.JSON `json:"tolerations,omitempty"`
}

// DataSourceRepo is the repository a new cluster restores from: PGO's
// repos[] entry, of which Lookout honours s3.
type DataSourceRepo struct {
	// +kubebuilder:validation:Pattern=`^repo[1-4]$`
	Name string `json:"name"`
	// +optional
	S3 *RepoS3 `json:"s3,omitempty"`

	// Documented by PGO, not honoured by Lookout here (refused when set).

	// +optional
	Volume *apiextensionsv1.JSON `json:"volume,omitempty"`
	// +optional
	BackupSchedules *apiextensionsv1.JSON `json:"schedules,omitempty"`
	// +optional
	Azure *apiextensionsv1.JSON `json:"azure,omitempty"`
	// +optional
	GCS *apiextensionsv1.JSON `json:"gcs,omitempty"`
}

// PGBackRestStatus is PGO's status.pgbackrest, plus the last backups and
// the archiving as the primary reports them.
type PGBackRestStatus struct {
	// +optional
	ManualBackup *PGBackRestJobStatus `json:"manualBackup,omitempty"`

	// The in-place restore of the pgbackrest-restore annotation's value.
	// +optional
	Restore *PGBackRestJobStatus `json:"restore,omitempty"`

	// +optional
	// +listType=atomic
	ScheduledBackups []PGBackRestScheduledBackupStatus `json:"scheduledBackups,omitempty"`

	// +optional
	// +listType=map
	// +listMapKey=name
	Repos []RepoStatus `json:"repos,omitempty"`

	// The last successful backup per repository and type.
	// +optional
	// +listType=atomic
	LastBackups []BackupStatus `json:"lastBackups,omitempty"`

	// WAL archiving on the primary (pg_stat_archiver).
	// +optional
	Archive *ArchiveStatus `json:"archive,omitempty"`
}

// PGBackRestJobStatus is a manual backup Job, or an in-place restore
// (PGO's).
type PGBackRestJobStatus struct {
	// The annotation's value (pgbackrest-backup, pgbackrest-restore) it ran
	// for.
	ID       string `json:"id"`
	Finished bool   `json:"finished"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// +optional
	Active int32 `json:"active,omitempty"`
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
}

// PGBackRestScheduledBackupStatus is the last Job of a schedule's CronJob
// (PGO's).
type PGBackRestScheduledBackupStatus struct {
	CronJobName string `json:"cronJobName,omitempty"`
	RepoName    string `json:"repo,omitempty"`
	Type        string `json:"type,omitempty"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// +optional
	Active int32 `json:"active,omitempty"`
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
}

// RepoStatus is one repository (PGO's fields that apply).
type RepoStatus struct {
	Name string `json:"name"`
	// A volume repository's claim is bound.
	// +optional
	Bound bool `json:"bound,omitempty"`
	// +optional
	VolumeName string `json:"volume,omitempty"`
	// stanza-create succeeded on the primary for the repositories as they
	// are now.
	StanzaCreated bool `json:"stanzaCreated"`
	// A hash of the repository's definition: a change means a new
	// stanza-create.
	// +optional
	RepoOptionsHash string `json:"repoOptionsHash,omitempty"`
}

// BackupStatus is the last successful backup of one type into one
// repository.
type BackupStatus struct {
	Repo string `json:"repo"`
	// full, diff or incr.
	Type string `json:"type"`
	// pgBackRest's label of the backup.
	// +optional
	Label          string      `json:"label,omitempty"`
	CompletionTime metav1.Time `json:"completionTime"`
	// How long it ran ("12.5s").
	// +optional
	Duration string `json:"duration,omitempty"`
	// Bytes of the database it read, and written to the repository.
	// +optional
	Size int64 `json:"size,omitempty"`
	// +optional
	RepositorySize int64 `json:"repositorySize,omitempty"`
}

// ArchiveStatus is the primary's WAL archiving.
type ArchiveStatus struct {
	// +optional
	LastArchivedWAL string `json:"lastArchivedWAL,omitempty"`
	// +optional
	LastArchivedTime *metav1.Time `json:"lastArchivedTime,omitempty"`
	// +optional
	LastFailedWAL string `json:"lastFailedWAL,omitempty"`
	// +optional
	LastFailedTime *metav1.Time `json:"lastFailedTime,omitempty"`
	// Why stanza-create fails, while it does.
	// +optional
	StanzaError string `json:"stanzaError,omitempty"`
}

// AnnotationPGBackRestBackup on the PostgresCluster starts the manual
// backup; each new value is a new backup (PGO's).
const AnnotationPGBackRestBackup = "postgres-operator.crunchydata.com/pgbackrest-backup"

// AnnotationPGBackRestRestore on the PostgresCluster starts the in-place
// restore spec.backups.pgbackrest.restore describes; each new value is a
// new restore (PGO's).
const AnnotationPGBackRestRestore = "postgres-operator.crunchydata.com/pgbackrest-restore"

// ConditionRestoreProgressing (PGO's) True: an in-place restore runs (the
// reason is its step: Checking, StoppingReplicas, Restoring, Replaying);
// False: it ended (Restored), or was refused before anything stopped
// (RestoreRefused) or failed (RestoreFailed), the message says why.
const ConditionRestoreProgressing = "PGBackRestRestoreProgressing"

// ConditionDataInitialized (PGO's PostgresDataInitialized) True: the
// cluster's data exists (initdb, or a restore from spec.dataSource ended);
// False: the restore is refused or failed (the reason and message say why;
// a cluster restored from leaves the source untouched).
const ConditionDataInitialized = "PostgresDataInitialized"
