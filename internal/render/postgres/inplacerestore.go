package postgres

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Reasons of the PGBackRestRestoreProgressing condition besides the steps
// the primary reports (pgcontract.RestoreChecking … RestoreReplaying).
const (
	ReasonRestorePending = "Pending"
	ReasonRestored       = "Restored"
	ReasonRestoreRefused = "RestoreRefused"
)

// checkInPlaceRestore checks spec.backups.pgbackrest.restore: the
// repository is one of the cluster's, and the options are ones Lookout
// passes to pgbackrest restore.
func checkInPlaceRestore(c *postgresv1beta1.PostgresCluster) error {
	if c.Spec.Backups == nil || c.Spec.Backups.PGBackRest.Restore == nil {
		return nil
	}
	const p = "spec.backups.pgbackrest.restore"
	r := c.Spec.Backups.PGBackRest.Restore
	if r.ClusterName != "" && r.ClusterName != c.Name {
		return specError(p+".clusterName", workload.ReasonUnsupportedField,
			"%q: an in-place restore reads the cluster's own repository; restore another cluster's into a new cluster with spec.dataSource.postgresCluster", r.ClusterName)
	}
	if r.ClusterNamespace != "" && r.ClusterNamespace != c.Namespace {
		return specError(p+".clusterNamespace", workload.ReasonUnsupportedField, "%q: an in-place restore reads the cluster's own repository", r.ClusterNamespace)
	}
	if !slices.ContainsFunc(c.Spec.Backups.PGBackRest.Repos, func(x postgresv1beta1.PGBackRestRepo) bool { return x.Name == r.RepoName }) {
		return specError(p+".repoName", ReasonInvalidBackups, "%q is not one of the repositories", r.RepoName)
	}
	return checkRestoreOptions(p+".options", ReasonInvalidBackups, r.Options)
}

// inPlaceRestore is Config.InPlaceRestore: set while the restore is
// enabled and the annotation holds a value the status does not record as
// finished.
func inPlaceRestore(c *postgresv1beta1.PostgresCluster) *pgcontract.InPlaceRestore {
	if c.Spec.Backups == nil {
		return nil
	}
	r := c.Spec.Backups.PGBackRest.Restore
	id := c.Annotations[postgresv1beta1.AnnotationPGBackRestRestore]
	if r == nil || r.Enabled == nil || !*r.Enabled || id == "" || restoreFinished(c, id) {
		return nil
	}
	return &pgcontract.InPlaceRestore{ID: id, Repo: r.RepoName, Options: slices.Clone(r.Options)}
}

func restoreFinished(c *postgresv1beta1.PostgresCluster, id string) bool {
	s := c.Status.PGBackRest
	return s != nil && s.Restore != nil && s.Restore.ID == id && s.Restore.Finished
}

// InPlaceRestoreStatus writes status.pgbackrest.restore (after
// BackupStatus) for the annotation's value, from what the instances
// report: the primary's step, or the Lease's record of the restore done.
// It returns the PGBackRestRestoreProgressing condition, nil when there is
// nothing to say: no restore asked, or one finished (the condition set
// when it finished stays).
func InPlaceRestoreStatus(c *postgresv1beta1.PostgresCluster, obs Observed, s *postgresv1beta1.PostgresClusterStatus) *metav1.Condition {
	if s.PGBackRest == nil {
		return nil
	}
	st, cond := inPlaceRestoreStatus(c, obs, s.PGBackRest)
	s.PGBackRest.Restore = st
	return cond
}

func inPlaceRestoreStatus(c *postgresv1beta1.PostgresCluster, obs Observed, prev *postgresv1beta1.PGBackRestStatus) (*postgresv1beta1.PGBackRestJobStatus, *metav1.Condition) {
	id := c.Annotations[postgresv1beta1.AnnotationPGBackRestRestore]
	var kept *postgresv1beta1.PGBackRestJobStatus
	if prev != nil && prev.Restore != nil && prev.Restore.ID == id {
		kept = prev.Restore
	}
	if restore := inPlaceRestore(c); restore == nil {
		return kept, nil
	}
	st := &postgresv1beta1.PGBackRestJobStatus{ID: id}
	if kept != nil {
		st.StartTime = kept.StartTime
	}
	cond := &metav1.Condition{Type: postgresv1beta1.ConditionRestoreProgressing, ObservedGeneration: c.Generation,
		Status: metav1.ConditionTrue, Reason: ReasonRestorePending, Message: "waiting for the primary to start restore " + id}
	for _, n := range sortedKeys(obs.Instances) {
		in := obs.Instances[n]
		if in.LastRestore == id {
			st.Finished, st.Succeeded, st.Active = true, 1, 0
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonRestored,
				"restored in place: the primary runs on a new timeline; the replicas clone it again"
			return st, cond
		}
		r := in.InPlaceRestore
		if r == nil || r.ID != id || r.Step == pgcontract.RestoreStopped || r.Step == pgcontract.RestoreRecloning || r.Step == pgcontract.RestoreDone {
			continue
		}
		switch r.Step {
		case pgcontract.RestoreRefused:
			st.Finished, st.Failed = true, 1
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonRestoreRefused,
				n+": "+r.Reason+"; nothing was stopped"
			return st, cond
		case pgcontract.RestoreFailed:
			st.Finished, st.Failed = true, 1
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonRestoreFailed,
				n+": "+r.Reason+"; a replica, which kept its data, takes over"
			return st, cond
		}
		st.Active = 1
		cond.Reason, cond.Message = r.Step, n+": "+r.Step
		if r.Reason != "" {
			cond.Message += ": " + r.Reason
		}
	}
	return st, cond
}
