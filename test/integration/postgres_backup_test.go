package integration

import (
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controller"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// The manual backup's Job is made once per value of the pgbackrest-backup
// annotation and then left alone: an image change while the annotation
// still holds reconciles (a Job's pod template is immutable: sending the
// Job again with the new image would fail every apply), the Job keeps the
// image it started with, and it stays until the annotation changes.
func TestTheManualBackupJobIsLeftAloneOnceMade(t *testing.T) {
	startPostgresOperator(t)
	ns := newNamespace(t)
	c := &postgresv1beta1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hippo",
			Annotations: map[string]string{postgresv1beta1.AnnotationPGBackRestBackup: "first"}},
		Spec: postgresv1beta1.PostgresClusterSpec{
			PostgresVersion: 15,
			Image:           "lookout-postgres:one",
			InstanceSets: []postgresv1beta1.PostgresInstanceSetSpec{{
				Name: "instance1", Replicas: ptr.To[int32](1), DataVolumeClaimSpec: storageSpec("1Gi"),
			}},
			Backups: &postgresv1beta1.Backups{PGBackRest: postgresv1beta1.PGBackRestArchive{
				Repos: []postgresv1beta1.PGBackRestRepo{{Name: "repo1",
					S3: &postgresv1beta1.RepoS3{Bucket: "b", Endpoint: "s3.example.net", Region: "us-east-1"}}},
				Manual: &postgresv1beta1.PGBackRestManualBackup{RepoName: "repo1"},
			}},
		},
	}
	if err := k8s.Create(testCtx, c); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(c)
	waitReconciled(t, key, metav1.ConditionTrue, controller.ReasonReconcileSucceeded)
	jobKey := client.ObjectKey{Namespace: ns, Name: pgrender.ManualBackupJobName("hippo", "first")}
	jobImage := func() (string, error) {
		var j batchv1.Job
		if err := k8s.Get(testCtx, jobKey, &j); err != nil {
			return "", err
		}
		return j.Spec.Template.Spec.Containers[0].Image, nil
	}
	eventually(t, "the manual backup Job, recorded in the status", func() (bool, error) {
		var got postgresv1beta1.PostgresCluster
		if err := k8s.Get(testCtx, key, &got); err != nil {
			return false, err
		}
		if _, err := jobImage(); err != nil {
			return false, err
		}
		b := got.Status.PGBackRest
		return b != nil && b.ManualBackup != nil && b.ManualBackup.ID == "first", fmt.Errorf("status.pgbackrest %+v", b)
	})
	first, err := jobImage()
	if err != nil {
		t.Fatal(err)
	}

	if err := k8s.Get(testCtx, key, c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Image = "lookout-postgres:two"
	if err := k8s.Update(testCtx, c); err != nil {
		t.Fatal(err)
	}
	waitReconciled(t, key, metav1.ConditionTrue, controller.ReasonReconcileSucceeded)
	if got, err := jobImage(); err != nil || got != first {
		t.Errorf("the manual backup Job after the image change: image %q, %v; want it left as it started (%q)", got, err, first)
	}
	if eventFor(t, ns, "hippo", controller.ReasonApplyFailed) {
		t.Error("an apply failed after the image change")
	}

	// A new value is a new Job, with the new image; the old one goes.
	if err := k8s.Get(testCtx, key, c); err != nil {
		t.Fatal(err)
	}
	c.Annotations[postgresv1beta1.AnnotationPGBackRestBackup] = "second"
	if err := k8s.Update(testCtx, c); err != nil {
		t.Fatal(err)
	}
	second := client.ObjectKey{Namespace: ns, Name: pgrender.ManualBackupJobName("hippo", "second")}
	eventually(t, "the second manual backup Job, and the first gone", func() (bool, error) {
		var j batchv1.Job
		if err := k8s.Get(testCtx, second, &j); err != nil {
			return false, err
		}
		if img := j.Spec.Template.Spec.Containers[0].Image; img == first {
			return false, fmt.Errorf("the second Job runs %s", img)
		}
		var old batchv1.Job
		err := k8s.Get(testCtx, jobKey, &old)
		return err != nil && client.IgnoreNotFound(err) == nil, fmt.Errorf("the first Job: %v", err)
	})
}
