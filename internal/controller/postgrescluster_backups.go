package controller

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// readBackupStatus adds status.pgbackrest and, for a cluster restored from
// a dataSource, the PostgresDataInitialized condition to c's status; a
// restore that is refused or fails is also a Warning Event (once per
// reason).
func (k postgresKind) readBackupStatus(ctx context.Context, r client.Reader, c *postgresv1beta1.PostgresCluster, obs *pgrender.Observed) error {
	if c.Spec.Backups != nil {
		var jobs batchv1.JobList
		if err := r.List(ctx, &jobs, client.InNamespace(c.Namespace), client.MatchingLabels(pgrender.SelectorLabels(c.Name))); err != nil {
			return err
		}
		for i := range jobs.Items {
			if jobs.Items[i].Labels[pgrender.LabelBackup] != "" {
				obs.Jobs = append(obs.Jobs, &jobs.Items[i])
			}
		}
	}
	cond := pgrender.BackupStatus(c, *obs, &c.Status)
	k.restoreCondition(c, pgrender.InPlaceRestoreStatus(c, *obs, &c.Status))
	if cond == nil {
		meta.RemoveStatusCondition(&c.Status.Conditions, postgresv1beta1.ConditionDataInitialized)
		return nil
	}
	prev := meta.FindStatusCondition(c.Status.Conditions, postgresv1beta1.ConditionDataInitialized)
	if cond.Reason == pgrender.ReasonRestoreFailed && k.rec != nil && (prev == nil || prev.Reason != cond.Reason || prev.Message != cond.Message) {
		k.rec.Eventf(c, nil, corev1.EventTypeWarning, cond.Reason, "Restore", "%s", cond.Message)
	}
	meta.SetStatusCondition(&c.Status.Conditions, *cond)
	return nil
}

// restoreCondition sets the PGBackRestRestoreProgressing condition of an
// in-place restore; a refused or failed one is also a Warning Event, one
// that ended a Normal Event (once each).
func (k postgresKind) restoreCondition(c *postgresv1beta1.PostgresCluster, cond *metav1.Condition) {
	if cond == nil {
		return
	}
	prev := meta.FindStatusCondition(c.Status.Conditions, cond.Type)
	if k.rec != nil && cond.Status == metav1.ConditionFalse && (prev == nil || prev.Reason != cond.Reason || prev.Message != cond.Message) {
		typ := corev1.EventTypeWarning
		if cond.Reason == pgrender.ReasonRestored {
			typ = corev1.EventTypeNormal
		}
		k.rec.Eventf(c, nil, typ, cond.Reason, "Restore", "%s", cond.Message)
	}
	meta.SetStatusCondition(&c.Status.Conditions, *cond)
}

// retain keeps the manual backup Job of the pgbackrest-backup annotation's
// value: render stops sending it once the status records it, and it stays
// (running, or finished for its logs) until the annotation changes.
func (k postgresKind) retain(ctx context.Context, c *postgresv1beta1.PostgresCluster, _ []workload.Object, _ *statusUpdate) ([]client.Object, time.Duration, error) {
	id := c.Annotations[postgresv1beta1.AnnotationPGBackRestBackup]
	if id == "" || c.Spec.Backups == nil || k.reader == nil {
		return nil, 0, nil
	}
	var job batchv1.Job
	err := k.reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: pgrender.ManualBackupJobName(c.Name, id)}, &job)
	if apierrors.IsNotFound(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	job.APIVersion, job.Kind = "batch/v1", "Job" // the prune keeps by kind and name
	return []client.Object{&job}, 0, nil
}
