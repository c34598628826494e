package postgres

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// Reasons of the PostgresDataInitialized condition.
const (
	ReasonInitialized   = "Initialized"
	ReasonRestoring     = "Restoring"
	ReasonRestoreFailed = "RestoreFailed"
)

// BackupStatus writes status.pgbackrest from what obs says: each
// repository's stanza, the manual and scheduled backup Jobs, the last
// successful backup per repository and type (kept across failovers: a new
// primary knows only its own), and the primary's archiving. It returns the
// PostgresDataInitialized condition of a cluster restored from a
// dataSource, nil for others.
func BackupStatus(c *postgresv1beta1.PostgresCluster, obs Observed, s *postgresv1beta1.PostgresClusterStatus) *metav1.Condition {
	var primary *pgcontract.Status
	if s.Primary != "" {
		primary = obs.Instances[s.Primary]
	}
	cond := dataInitialized(c, obs, primary)
	if c.Spec.Backups == nil {
		s.PGBackRest = nil
		return cond
	}
	prev := s.PGBackRest
	next := &postgresv1beta1.PGBackRestStatus{}
	a := &c.Spec.Backups.PGBackRest
	stanza := primary != nil && primary.Archive != nil && primary.Archive.StanzaReady
	for i := range a.Repos {
		r := &a.Repos[i]
		st := postgresv1beta1.RepoStatus{Name: r.Name, RepoOptionsHash: repoHash(r, a.Global)}
		if prev != nil {
			for _, p := range prev.Repos {
				// A primary that has not reported yet does not undo what is
				// known of a repository that did not change.
				if p.Name == r.Name && p.RepoOptionsHash == st.RepoOptionsHash && primary == nil {
					st.StanzaCreated = p.StanzaCreated
				}
			}
		}
		if primary != nil {
			st.StanzaCreated = stanza
		}
		next.Repos = append(next.Repos, st)
	}
	if primary != nil && primary.Archive != nil {
		pa := primary.Archive
		next.Archive = &postgresv1beta1.ArchiveStatus{
			LastArchivedWAL: pa.LastArchivedWAL, LastFailedWAL: pa.LastFailedWAL, StanzaError: pa.StanzaError,
			LastArchivedTime: metaTime(pa.LastArchivedTime), LastFailedTime: metaTime(pa.LastFailedTime),
		}
	} else if prev != nil {
		next.Archive = prev.Archive
	}
	next.LastBackups = lastBackups(prev, obs)
	if prev != nil {
		next.Restore = prev.Restore // InPlaceRestoreStatus's
	}

	manualID := c.Annotations[postgresv1beta1.AnnotationPGBackRestBackup]
	latest := map[string]*batchv1.Job{}
	for _, j := range obs.Jobs {
		switch j.Labels[LabelBackup] {
		case BackupManual:
			if j.Annotations[postgresv1beta1.AnnotationPGBackRestBackup] == manualID && manualID != "" {
				next.ManualBackup = jobStatus(manualID, j)
			}
		case BackupScheduled:
			name := CronJobName(c.Name, j.Labels[LabelRepo], j.Labels[LabelCronJob])
			if l := latest[name]; l == nil || l.CreationTimestamp.Before(&j.CreationTimestamp) {
				latest[name] = j
			}
		}
	}
	// The manual backup of a value already carried out is kept when its Job
	// is gone (a TTL), as PGO keeps it.
	if next.ManualBackup == nil && prev != nil && prev.ManualBackup != nil && prev.ManualBackup.ID == manualID {
		next.ManualBackup = prev.ManualBackup
	}
	for _, name := range sortedKeys(latest) {
		j := latest[name]
		js := jobStatus("", j)
		next.ScheduledBackups = append(next.ScheduledBackups, postgresv1beta1.PGBackRestScheduledBackupStatus{
			CronJobName: name, RepoName: j.Labels[LabelRepo], Type: j.Labels[LabelCronJob],
			StartTime: js.StartTime, CompletionTime: js.CompletionTime,
			Active: js.Active, Succeeded: js.Succeeded, Failed: js.Failed,
		})
	}
	s.PGBackRest = next
	return cond
}

// dataInitialized is the PostgresDataInitialized condition of a cluster
// with a dataSource: True once a primary is ready (and then for good),
// False with the instance's reason while its restore is refused or failed.
func dataInitialized(c *postgresv1beta1.PostgresCluster, obs Observed, primary *pgcontract.Status) *metav1.Condition {
	if c.Spec.DataSource == nil {
		return nil
	}
	cond := &metav1.Condition{Type: postgresv1beta1.ConditionDataInitialized, ObservedGeneration: c.Generation}
	switch {
	case DataInitialized(c) || primary != nil && primary.Ready:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonInitialized, "the restore from spec.dataSource ended; the cluster runs on its own data"
		return cond
	}
	for _, n := range sortedKeys(obs.Instances) {
		if st := obs.Instances[n]; st.State == "Failed" && st.Reason != "" {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonRestoreFailed, n+": "+st.Reason
			return cond
		}
	}
	cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonRestoring, "restoring from spec.dataSource"
	for _, n := range sortedKeys(obs.Instances) {
		if st := obs.Instances[n]; st.State == "Restoring" && st.Reason != "" {
			cond.Message = n + ": " + st.Reason
		}
	}
	return cond
}

// lastBackups merges the backups each instance reports with those the
// status knew: the newest per repository and type.
func lastBackups(prev *postgresv1beta1.PGBackRestStatus, obs Observed) []postgresv1beta1.BackupStatus {
	by := map[string]postgresv1beta1.BackupStatus{}
	if prev != nil {
		for _, b := range prev.LastBackups {
			by[b.Repo+"/"+b.Type] = b
		}
	}
	for _, n := range sortedKeys(obs.Instances) {
		for _, b := range obs.Instances[n].Backups {
			if b.Error != "" {
				continue
			}
			done := metav1.NewTime(b.Start.Add(b.Duration.Duration).UTC().Truncate(time.Second))
			k := b.Repo + "/" + b.Type
			if have, ok := by[k]; ok && !have.CompletionTime.Before(&done) {
				continue
			}
			by[k] = postgresv1beta1.BackupStatus{
				Repo: b.Repo, Type: b.Type, Label: b.Label, CompletionTime: done,
				Duration: b.Duration.Round(10 * time.Millisecond).String(), Size: b.Size, RepositorySize: b.RepoSize,
			}
		}
	}
	out := make([]postgresv1beta1.BackupStatus, 0, len(by))
	for _, k := range sortedKeys(by) {
		out = append(out, by[k])
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func jobStatus(id string, j *batchv1.Job) *postgresv1beta1.PGBackRestJobStatus {
	st := &postgresv1beta1.PGBackRestJobStatus{
		ID: id, StartTime: j.Status.StartTime, CompletionTime: j.Status.CompletionTime,
		Active: j.Status.Active, Succeeded: j.Status.Succeeded, Failed: j.Status.Failed,
	}
	for _, cond := range j.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			st.Finished = true
		}
	}
	return st
}

// repoHash is a hash of a repository's definition (PGO's repoOptionsHash):
// what a stanza-create depends on.
func repoHash(r *postgresv1beta1.PGBackRestRepo, global map[string]string) string {
	def := struct {
		S3     *postgresv1beta1.RepoS3
		Volume bool
		Global map[string]string
	}{S3: r.S3, Volume: r.Volume != nil, Global: map[string]string{}}
	for k, v := range global {
		if strings.HasPrefix(k, r.Name+"-") {
			def.Global[k] = v
		}
	}
	b, _ := json.Marshal(def)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:10]
}

func metaTime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	m := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
