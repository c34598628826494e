package postgres

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Labels of the backup Jobs and their pods (PGO's).
const (
	// LabelBackup is "manual" on the manual backup's Job, "scheduled" on
	// the CronJobs' Jobs.
	LabelBackup = pgcontract.LabelPrefix + "pgbackrest-backup"
	// LabelCronJob is the backup type of a CronJob: full, diff or incr.
	LabelCronJob = pgcontract.LabelPrefix + "pgbackrest-cronjob"
	LabelRepo    = pgcontract.LabelPrefix + "pgbackrest-repo"

	BackupManual    = "manual"
	BackupScheduled = "scheduled"

	// BackupContainerName is the container of a backup Job (PGO's).
	BackupContainerName = "pgbackrest"
)

// Volume names in the instance pods.
const (
	volumeBackupConf  = "pgbackrest-config"
	volumeRestoreConf = "pgbackrest-restore"
)

// BackupCommand is what a backup Job runs: `lookout backup`, which has the
// primary's instance manager take the backup.
var BackupCommand = []string{"/bin/lookout", "backup"}

// BackupRBACName names the backup Jobs' ServiceAccount, Role and
// RoleBinding (PGO's name).
func BackupRBACName(cluster string) string { return cluster + "-pgbackrest" }

// CronJobName is PGO's name of a schedule's CronJob: <cluster>-<repo>-<type>.
func CronJobName(cluster, repo, typ string) string { return cluster + "-" + repo + "-" + typ }

// ManualBackupJobName is the Job of the manual backup the annotation value
// id starts: a new value, a new Job.
func ManualBackupJobName(cluster, id string) string {
	h := sha256.Sum256([]byte(id))
	return cluster + "-backup-" + hex.EncodeToString(h[:])[:5]
}

// RepoClaimName is the claim of a volume repository (PGO's name).
func RepoClaimName(cluster, repo string) string { return cluster + "-" + repo }

// scheduleTypes maps PGO's schedule names to pgBackRest's backup types.
func scheduleTypes(s *postgresv1beta1.PGBackRestBackupSchedules) []struct{ typ, schedule string } {
	var out []struct{ typ, schedule string }
	if s == nil {
		return out
	}
	for _, e := range []struct {
		typ string
		v   *string
	}{{pgcontract.BackupFull, s.Full}, {pgcontract.BackupDiff, s.Differential}, {pgcontract.BackupIncr, s.Incremental}} {
		if e.v != nil {
			out = append(out, struct{ typ, schedule string }{e.typ, *e.v})
		}
	}
	return out
}

// backupObjects are the objects of spec.backups beyond the Config: the
// claims of volume repositories, the backup Jobs' RBAC, a CronJob per
// schedule and the manual backup's Job.
func backupObjects(in *Inputs, instances []string) []workload.Object {
	c := in.Cluster
	if c.Spec.Backups == nil {
		return nil
	}
	a := &c.Spec.Backups.PGBackRest
	var out []workload.Object
	for i := range a.Repos {
		r := &a.Repos[i]
		if r.Volume == nil {
			continue
		}
		spec := r.Volume.VolumeClaimSpec.DeepCopy()
		out = append(out, &corev1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: ownedMeta(c, RepoClaimName(c.Name, r.Name), map[string]string{LabelRepo: r.Name}),
			Spec:       *spec,
		})
	}
	sa, role, binding := backupRBAC(c, instances)
	out = append(out, sa, role, binding)
	for i := range a.Repos {
		r := &a.Repos[i]
		for _, s := range scheduleTypes(r.BackupSchedules) {
			labels := map[string]string{LabelBackup: BackupScheduled, LabelRepo: r.Name, LabelCronJob: s.typ}
			out = append(out, &batchv1.CronJob{
				TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
				ObjectMeta: ownedMeta(c, CronJobName(c.Name, r.Name, s.typ), labels),
				Spec: batchv1.CronJobSpec{
					Schedule: s.schedule,
					// One backup of a cluster at a time: the primary refuses a
					// second while one runs.
					ConcurrencyPolicy:          batchv1.ForbidConcurrent,
					SuccessfulJobsHistoryLimit: workload.Ptr(int32(3)),
					FailedJobsHistoryLimit:     workload.Ptr(int32(3)),
					JobTemplate: batchv1.JobTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: backupLabels(c, labels)},
						Spec:       backupJobSpec(in, r.Name, s.typ, labels),
					},
				},
			})
		}
	}
	// The Job of a value the status records is not sent again: it exists
	// (the controller keeps it from the prune), and its pod template is
	// immutable, so an image change while the annotation holds would make
	// every apply fail.
	if id := c.Annotations[postgresv1beta1.AnnotationPGBackRestBackup]; id != "" && a.Manual != nil && !manualBackupSeen(c, id) {
		typ, _ := manualType(a.Manual) // checked by backupsConfig
		labels := map[string]string{LabelBackup: BackupManual, LabelRepo: a.Manual.RepoName}
		meta := ownedMeta(c, ManualBackupJobName(c.Name, id), labels)
		meta.Annotations = map[string]string{postgresv1beta1.AnnotationPGBackRestBackup: id}
		out = append(out, &batchv1.Job{
			TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
			ObjectMeta: meta,
			Spec:       backupJobSpec(in, a.Manual.RepoName, typ, labels),
		})
	}
	return out
}

// backupLabels are the cluster's labels and extra.
func backupLabels(c *postgresv1beta1.PostgresCluster, extra map[string]string) map[string]string {
	l := SelectorLabels(c.Name)
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// backupJobSpec is a Job that runs `lookout backup` once: it finds the
// primary through the cluster's Lease and waits for the backup's end.
// A failed backup is retried twice.
func backupJobSpec(in *Inputs, repo, typ string, labels map[string]string) batchv1.JobSpec {
	c := in.Cluster
	j := c.Spec.Backups.PGBackRest.Jobs
	if j == nil {
		j = &postgresv1beta1.BackupJobs{}
	}
	uid := runAsUser(in)
	container := corev1.Container{
		Name:                     BackupContainerName,
		Image:                    instanceImage(in),
		Command:                  slices.Clone(BackupCommand),
		Args:                     []string{"--cluster=" + c.Name, "--repo=" + repo, "--type=" + typ},
		Env:                      []corev1.EnvVar{fieldEnv(pgcontract.EnvPodNamespace, "metadata.namespace")},
		Resources:                *j.Resources.DeepCopy(),
		SecurityContext:          workload.ContainerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	pod := corev1.PodSpec{
		ServiceAccountName:           BackupRBACName(c.Name),
		AutomountServiceAccountToken: workload.Ptr(true),
		EnableServiceLinks:           workload.Ptr(false),
		RestartPolicy:                corev1.RestartPolicyNever,
		Containers:                   []corev1.Container{container},
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   workload.Ptr(true),
			RunAsUser:      workload.Ptr(uid),
			RunAsGroup:     workload.Ptr(uid),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Affinity:    j.Affinity.DeepCopy(),
		Tolerations: slices.Clone(j.Tolerations),
	}
	if j.PriorityClassName != nil {
		pod.PriorityClassName = *j.PriorityClassName
	}
	return batchv1.JobSpec{
		BackoffLimit:            workload.Ptr(int32(2)),
		TTLSecondsAfterFinished: j.TTLSecondsAfterFinished,
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: backupLabels(c, labels)},
			Spec:       pod,
		},
	}
}

func instanceImage(in *Inputs) string {
	if in.Cluster.Spec.Image != "" {
		return in.Cluster.Spec.Image
	}
	return in.Image
}

func runAsUser(in *Inputs) int64 {
	if in.RunAsUser == 0 {
		return DefaultRunAsUser
	}
	return in.RunAsUser
}

// backupRBAC lets a backup Job find the primary: read the cluster's Lease
// and the instances' pods, by name.
func backupRBAC(c *postgresv1beta1.PostgresCluster, instances []string) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	name := BackupRBACName(c.Name)
	pods := make([]string, len(instances))
	for i, inst := range instances {
		pods[i] = PodName(inst)
	}
	return serviceAccountWithRole(c, name, []rbacv1.PolicyRule{
		{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"},
			ResourceNames: []string{pgcontract.LeaseName(c.Name)}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: pods, Verbs: []string{"get"}},
	})
}

// withBackupVolumes gives the instance pods what pgBackRest reads: the
// configuration Secrets projected into BackupConfDir, the restore source's
// into RestoreConfDir, and each volume repository at /pgbackrest/<repo>.
func withBackupVolumes(c *postgresv1beta1.PostgresCluster, restore *restoreSource, sts *appsv1.StatefulSet) {
	pod := &sts.Spec.Template.Spec
	ct := &pod.Containers[0]
	mode := int32(0o640) // group postgres (fsGroup): the credentials are no one else's
	project := func(name, dir string, cs []postgresv1beta1.ConfigurationProjection) {
		v := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode}}}
		for _, s := range cs {
			if s.Secret != nil {
				v.Projected.Sources = append(v.Projected.Sources, corev1.VolumeProjection{Secret: s.Secret.DeepCopy()})
			}
		}
		pod.Volumes = append(pod.Volumes, v)
		ct.VolumeMounts = append(ct.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
	}
	if b := c.Spec.Backups; b != nil {
		project(volumeBackupConf, pgcontract.BackupConfDir, b.PGBackRest.Configuration)
		for _, r := range b.PGBackRest.Repos {
			if r.Volume == nil {
				continue
			}
			name := "pgbackrest-" + r.Name
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: RepoClaimName(c.Name, r.Name)}}})
			ct.VolumeMounts = append(ct.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: repoMount(r.Name)})
		}
	}
	switch {
	case restore == nil:
	case restore.volume != nil:
		pod.Volumes = append(pod.Volumes, *restore.volume.DeepCopy())
		ct.VolumeMounts = append(ct.VolumeMounts, corev1.VolumeMount{Name: volumeRestoreConf, MountPath: pgcontract.RestoreConfDir, ReadOnly: true})
	case restore.restore != nil:
		project(volumeRestoreConf, pgcontract.RestoreConfDir, restore.configuration)
	}
}

// manualBackupSeen says whether the status records the manual backup Job of
// the annotation's value id (PGO's status.pgbackrest.manualBackup).
func manualBackupSeen(c *postgresv1beta1.PostgresCluster, id string) bool {
	s := c.Status.PGBackRest
	return s != nil && s.ManualBackup != nil && s.ManualBackup.ID == id
}
