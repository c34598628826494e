package postgres_test

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/golden"
	pg "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// s3Backups is PGO's S3 example: one repository, credentials in a Secret's
// s3.conf, retention in global.
func s3Backups() *postgresv1beta1.Backups {
	return &postgresv1beta1.Backups{PGBackRest: postgresv1beta1.PGBackRestArchive{
		Configuration: []postgresv1beta1.ConfigurationProjection{{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: "pgo-s3-creds"}}}},
		Global: map[string]string{"repo1-path": "/pgbackrest/hippo/repo1", "repo1-retention-full": "2", "repo1-s3-uri-style": "path",
			"repo1-storage-ca-file": "/etc/pgbackrest/conf.d/ca.crt"},
		Repos: []postgresv1beta1.PGBackRestRepo{{
			Name: "repo1",
			S3:   &postgresv1beta1.RepoS3{Bucket: "hippo-backups", Endpoint: "s3.example.net:9443", Region: "us-east-1"},
			BackupSchedules: &postgresv1beta1.PGBackRestBackupSchedules{
				Full: ptr.To("0 1 * * 0"), Differential: ptr.To("0 1 * * 1-6"),
			},
		}},
		Manual: &postgresv1beta1.PGBackRestManualBackup{RepoName: "repo1", Options: []string{"--type=full"}},
	}}
}

func withBackups(c *postgresv1beta1.PostgresCluster) { c.Spec.Backups = s3Backups() }

func objectsOf[T workload.Object](objs []workload.Object) map[string]T {
	out := map[string]T{}
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out[o.GetName()] = t
		}
	}
	return out
}

func TestBackupsGolden(t *testing.T) {
	c := hippo(withBackups)
	c.Annotations = map[string]string{postgresv1beta1.AnnotationPGBackRestBackup: "first"}
	d := render(t, inputs(t, c, 1))
	golden.Objects(t, filepath.Join("testdata", "backups.yaml"), d.Objects)
}

// The spec becomes the instance managers' Config: the repository with the
// options that describe it (path, URI style, CA file, the endpoint's port),
// the rest of global as global options, and PGO's stanza.
func TestBackupsBecomeTheConfig(t *testing.T) {
	d := render(t, inputs(t, hippo(withBackups), 1))
	b := d.Config.Backups
	if b == nil || b.Stanza != "db" || len(b.Repos) != 1 {
		t.Fatalf("Config.Backups %+v", b)
	}
	want := pgcontract.Repo{Name: "repo1", Path: "/pgbackrest/hippo/repo1", S3: &pgcontract.S3{
		Bucket: "hippo-backups", Endpoint: "s3.example.net", Port: 9443, Region: "us-east-1", URIStyle: "path", CAFile: "/etc/pgbackrest/conf.d/ca.crt"}}
	if got := b.Repos[0]; got.Name != want.Name || got.Path != want.Path || *got.S3 != *want.S3 {
		t.Errorf("repo %+v %+v, want %+v %+v", got, got.S3, want, want.S3)
	}
	if len(b.Global) != 1 || b.Global["repo1-retention-full"] != "2" {
		t.Errorf("global %v, want only repo1-retention-full", b.Global)
	}
	for _, sts := range statefulSetsOf(d.Objects) {
		var conf *corev1.Volume
		for i, v := range sts.Spec.Template.Spec.Volumes {
			if v.Projected != nil {
				conf = &sts.Spec.Template.Spec.Volumes[i]
			}
		}
		if conf == nil || len(conf.Projected.Sources) != 1 || conf.Projected.Sources[0].Secret.Name != "pgo-s3-creds" {
			t.Fatalf("%s: the configuration Secret is not projected: %+v", sts.Name, conf)
		}
		if !slices.ContainsFunc(sts.Spec.Template.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == conf.Name && m.MountPath == pgcontract.BackupConfDir
		}) {
			t.Errorf("%s: the configuration is not mounted at %s", sts.Name, pgcontract.BackupConfDir)
		}
	}
}

// Each schedule is a CronJob with PGO's name whose Job runs `lookout backup`
// for its repository and type, one at a time; the manual backup is a Job
// per annotation value, which carries the value.
func TestSchedulesAndTheManualBackupAreJobs(t *testing.T) {
	c := hippo(withBackups)
	d := render(t, inputs(t, c, 1))
	crons := objectsOf[*batchv1.CronJob](d.Objects)
	if len(crons) != 2 || crons["hippo-repo1-full"] == nil || crons["hippo-repo1-diff"] == nil {
		t.Fatalf("CronJobs %v, want hippo-repo1-full and hippo-repo1-diff", slices.Sorted(maps.Keys(crons)))
	}
	full := crons["hippo-repo1-full"]
	if full.Spec.Schedule != "0 1 * * 0" || full.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("schedule %q, concurrency %s", full.Spec.Schedule, full.Spec.ConcurrencyPolicy)
	}
	ct := full.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	if got := strings.Join(append(slices.Clone(ct.Command), ct.Args...), " "); got != "/bin/lookout backup --cluster=hippo --repo=repo1 --type=full" {
		t.Errorf("the Job runs %q", got)
	}
	if sa := full.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName; sa != "hippo-pgbackrest" {
		t.Errorf("service account %q", sa)
	}
	if len(objectsOf[*batchv1.Job](d.Objects)) != 0 {
		t.Error("a manual backup Job without the annotation")
	}

	c.Annotations = map[string]string{postgresv1beta1.AnnotationPGBackRestBackup: "one"}
	jobs := objectsOf[*batchv1.Job](render(t, inputs(t, c, 1)).Objects)
	c.Annotations[postgresv1beta1.AnnotationPGBackRestBackup] = "two"
	jobs2 := objectsOf[*batchv1.Job](render(t, inputs(t, c, 1)).Objects)
	if len(jobs) != 1 || len(jobs2) != 1 {
		t.Fatalf("jobs %d and %d, want one each", len(jobs), len(jobs2))
	}
	for name, j := range jobs {
		if !strings.HasPrefix(name, "hippo-backup-") || j.Annotations[postgresv1beta1.AnnotationPGBackRestBackup] != "one" {
			t.Errorf("Job %s annotations %v", name, j.Annotations)
		}
		if jobs2[name] != nil {
			t.Errorf("a new annotation value kept the Job %s", name)
		}
	}
}

// The backup Jobs' ServiceAccount may read the Lease and the instances'
// pods, by name, and nothing else.
func TestTheBackupJobsRoleReadsTheLeaseAndPodsOnly(t *testing.T) {
	d := render(t, inputs(t, hippo(withBackups), 1))
	role := objectsOf[*rbacv1.Role](d.Objects)["hippo-pgbackrest"]
	if role == nil {
		t.Fatal("no Role hippo-pgbackrest")
	}
	for _, r := range role.Rules {
		if len(r.ResourceNames) == 0 || len(r.Verbs) != 1 || r.Verbs[0] != "get" {
			t.Errorf("rule %+v: want get by name only", r)
		}
	}
}

func TestBadBackupsAreRefusedByName(t *testing.T) {
	source := hippo(withBackups)
	for _, tc := range []struct {
		name, reason, contains string
		mutate                 func(*postgresv1beta1.PostgresCluster)
		dataSource             *postgresv1beta1.PostgresCluster
	}{
		{"refuses PGO fields it does not honour, by name", "UnsupportedField", "spec.backups.pgbackrest.repoHost, spec.backups.pgbackrest.repos[0].gcs are not supported", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.RepoHost = rawJSON(`{"resources":{}}`)
			c.Spec.Backups.PGBackRest.Repos[0].GCS = rawJSON(`{"bucket":"b"}`)
		}, nil},
		{"refuses an in-place restore's Job fields, by name", "UnsupportedField", "spec.backups.pgbackrest.restore.resources is not supported", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Restore = inPlace("repo1")
			c.Spec.Backups.PGBackRest.Restore.Resources = rawJSON(`{"limits":{"cpu":"1"}}`)
		}, nil},
		{"refuses an in-place restore from another cluster", "UnsupportedField", `restore.clusterName: "other": an in-place restore reads the cluster's own repository`, func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Restore = inPlace("repo1")
			c.Spec.Backups.PGBackRest.Restore.ClusterName = "other"
		}, nil},
		{"refuses an in-place restore from no repository", "InvalidBackups", `restore.repoName: "repo2" is not one of the repositories`, func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Restore = inPlace("repo2")
		}, nil},
		{"refuses an in-place restore option the instance manager owns", "InvalidBackups", `restore.options[0]: "--delta": Lookout takes --type`, func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Restore = inPlace("repo1", "--delta")
		}, nil},
		{"refuses an in-place restore to a time without the time", "InvalidBackups", "restore.options: --type=time needs --target", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Restore = inPlace("repo1", "--type=time")
		}, nil},
		{"refuses an option the operator sets", "InvalidBackups", "spec.backups.pgbackrest.global.repo1-s3-bucket: cannot be set: set by repos[].s3.bucket", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Global["repo1-s3-bucket"] = "other"
		}, nil},
		{"refuses credentials in the spec", "InvalidBackups", "repo1-s3-key-secret: cannot be set: credentials belong in a configuration Secret", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Global["repo1-s3-key-secret"] = "x"
		}, nil},
		{"refuses the data directory's options", "InvalidBackups", "spec.backups.pgbackrest.global.pg1-path: cannot be set", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Global["pg1-path"] = "/x"
		}, nil},
		{"refuses options of a repository that is not defined", "InvalidBackups", "global.repo2-retention-full: repo2 is not one of the repositories", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Global["repo2-retention-full"] = "1"
		}, nil},
		{"refuses a volume repository three instances cannot share", "InvalidBackups", "the cluster has 3 instances and whichever is primary archives to the volume: its claim needs ReadWriteMany", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Repos = append(c.Spec.Backups.PGBackRest.Repos, postgresv1beta1.PGBackRestRepo{Name: "repo2", Volume: &postgresv1beta1.RepoPVC{VolumeClaimSpec: storage("1Gi")}})
		}, nil},
		{"refuses a schedule that is not cron", "InvalidBackups", `repos[0].schedules.full: "0 1 * *" has 4 fields`, func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Repos[0].BackupSchedules.Full = ptr.To("0 1 * *")
		}, nil},
		{"refuses a manual backup option it does not honour", "UnsupportedField", `manual.options[0]: "--start-fast=n": Lookout honours --type=full|diff|incr only`, func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Manual.Options = []string{"--start-fast=n"}
		}, nil},
		{"refuses a manual backup into no repository", "InvalidBackups", `manual.repoName: "repo3" is not one of the repositories`, func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.Backups.PGBackRest.Manual.RepoName = "repo3"
		}, nil},
		{"refuses two data sources", "InvalidDataSource", "spec.dataSource: set postgresCluster or pgbackrest, not both", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.DataSource = &postgresv1beta1.DataSource{PostgresCluster: &postgresv1beta1.PostgresClusterDataSource{ClusterName: "hippo-src", RepoName: "repo1"},
				PGBackRest: &postgresv1beta1.PGBackRestDataSource{Repo: postgresv1beta1.DataSourceRepo{Name: "repo1", S3: s3Backups().PGBackRest.Repos[0].S3}}}
		}, source},
		{"refuses a source in another namespace", "UnsupportedField", "clusterNamespace: \"elsewhere\": Lookout restores from a cluster of the same namespace only", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.DataSource = &postgresv1beta1.DataSource{PostgresCluster: &postgresv1beta1.PostgresClusterDataSource{ClusterName: "hippo-src", ClusterNamespace: "elsewhere", RepoName: "repo1"}}
		}, source},
		{"refuses a time target without its time", "InvalidDataSource", "--type=time needs --target", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.DataSource = &postgresv1beta1.DataSource{PostgresCluster: &postgresv1beta1.PostgresClusterDataSource{ClusterName: "hippo-src", RepoName: "repo1", Options: []string{"--type=time"}}}
		}, source},
		{"refuses a restore option the instance manager owns", "InvalidDataSource", `options[0]: "--stanza=other": Lookout takes --type`, func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.DataSource = &postgresv1beta1.DataSource{PostgresCluster: &postgresv1beta1.PostgresClusterDataSource{ClusterName: "hippo-src", RepoName: "repo1", Options: []string{"--stanza=other"}}}
		}, source},
		{"waits for a source that does not exist", "DataSourceNotFound", "PostgresCluster zoo/hippo-src does not exist", func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.DataSource = &postgresv1beta1.DataSource{PostgresCluster: &postgresv1beta1.PostgresClusterDataSource{ClusterName: "hippo-src", RepoName: "repo1"}}
		}, nil},
		{"refuses a repository the source has not got", "DataSourceNotFound", `PostgresCluster zoo/hippo-src has no repository "repo2"`, func(c *postgresv1beta1.PostgresCluster) {
			c.Spec.DataSource = &postgresv1beta1.DataSource{PostgresCluster: &postgresv1beta1.PostgresClusterDataSource{ClusterName: "hippo-src", RepoName: "repo2"}}
		}, source},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hippo(withBackups)
			tc.mutate(c)
			in := inputs(t, c, 1)
			if tc.dataSource != nil {
				src := tc.dataSource.DeepCopy()
				src.Name = "hippo-src"
				in.DataSource = src
			}
			d, err := pg.Render(in)
			var se *workload.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, %v; want a SpecError", d, err)
			}
			if se.Reason != tc.reason || !strings.Contains(se.Message, tc.contains) {
				t.Errorf("got %s: %s\nwant %s containing %q", se.Reason, se.Message, tc.reason, tc.contains)
			}
		})
	}
}

// A clone restores from the source's repository with the source's
// credentials, once: after the data is initialized the source is not
// needed and the instances keep the volume they run with.
func TestACloneRestoresFromTheSourcesRepositoryOnce(t *testing.T) {
	src := hippo(withBackups)
	src.Name = "hippo-src"
	clone := hippo(func(c *postgresv1beta1.PostgresCluster) {
		c.Name = "hippo-clone"
		c.Spec.DataSource = &postgresv1beta1.DataSource{PostgresCluster: &postgresv1beta1.PostgresClusterDataSource{
			ClusterName: "hippo-src", RepoName: "repo1", Options: []string{"--type=time", "--target=2026-11-28 20:00:00+00"}}}
	})
	in := inputs(t, clone, 1)
	in.DataSource = src
	d := render(t, in)
	r := d.Config.Restore
	if r == nil || r.Stanza != "db" || r.Repo.Path != "/pgbackrest/hippo/repo1" || r.Repo.S3 == nil || r.Repo.S3.Bucket != "hippo-backups" ||
		strings.Join(r.Options, " ") != "--type=time --target=2026-11-28 20:00:00+00" {
		t.Fatalf("Config.Restore %+v", r)
	}
	if d.Config.Backups != nil {
		t.Error("the clone archives without backups of its own")
	}
	sts := statefulSetsOf(d.Objects)
	restoreVolume := func(s *appsv1.StatefulSet) *corev1.Volume {
		for i, v := range s.Spec.Template.Spec.Volumes {
			if v.Name == "pgbackrest-restore" {
				return &s.Spec.Template.Spec.Volumes[i]
			}
		}
		return nil
	}
	if v := restoreVolume(sts[0]); v == nil || v.Projected.Sources[0].Secret.Name != "pgo-s3-creds" {
		t.Fatalf("the source's credentials are not projected into the restore directory: %+v", v)
	}

	clone.Status.Conditions = []metav1.Condition{{Type: postgresv1beta1.ConditionDataInitialized, Status: metav1.ConditionTrue, Reason: pg.ReasonInitialized}}
	after := inputs(t, clone, 2)
	after.StatefulSets = sts // the source is gone
	d2 := render(t, after)
	if d2.Config.Restore != nil {
		t.Errorf("an initialized clone is told to restore: %+v", d2.Config.Restore)
	}
	for i, s := range statefulSetsOf(d2.Objects) {
		if a, b := restoreVolume(sts[i]), restoreVolume(s); b == nil || a.Projected.Sources[0].Secret.Name != b.Projected.Sources[0].Secret.Name {
			t.Errorf("%s: the restore volume changed once the data was initialized: %+v", s.Name, b)
		}
	}
}

// status.pgbackrest: the stanza per repository, the manual backup of the
// annotation's value, the last Job of each CronJob, the last backup per
// repository and type (kept when a new primary does not know it) and the
// primary's archiving.
func TestBackupStatus(t *testing.T) {
	c := hippo(withBackups)
	c.Annotations = map[string]string{postgresv1beta1.AnnotationPGBackRestBackup: "two"}
	t0 := time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC)
	archived := t0.Add(time.Minute)
	obs := pg.Observed{
		Instances: map[string]*pgcontract.Status{
			"hippo-instance1-abcd-0": {Role: pgcontract.RolePrimary, Ready: true,
				Archive: &pgcontract.ArchiveStatus{StanzaReady: true, LastArchivedWAL: "000000010000000000000003", LastArchivedTime: &archived},
				Backups: []pgcontract.BackupResult{{Repo: "repo1", Type: "full", Label: "20261128-200000F", Start: t0,
					Duration: pgcontract.Duration{Duration: 12 * time.Second}, Size: 30 << 20, RepoSize: 4 << 20}}},
		},
		Jobs: []*batchv1.Job{
			job("hippo-backup-aaaaa", map[string]string{pg.LabelBackup: pg.BackupManual, pg.LabelRepo: "repo1"}, "one", t0, true),
			job("hippo-backup-bbbbb", map[string]string{pg.LabelBackup: pg.BackupManual, pg.LabelRepo: "repo1"}, "two", t0, true),
			job("hippo-repo1-full-1", map[string]string{pg.LabelBackup: pg.BackupScheduled, pg.LabelRepo: "repo1", pg.LabelCronJob: "full"}, "", t0, true),
			job("hippo-repo1-full-2", map[string]string{pg.LabelBackup: pg.BackupScheduled, pg.LabelRepo: "repo1", pg.LabelCronJob: "full"}, "", t0.Add(time.Hour), false),
		},
	}
	s := &postgresv1beta1.PostgresClusterStatus{Primary: "hippo-instance1-abcd-0",
		PGBackRest: &postgresv1beta1.PGBackRestStatus{LastBackups: []postgresv1beta1.BackupStatus{
			{Repo: "repo1", Type: "diff", Label: "20261127-010000F_20261128-010000D", CompletionTime: metav1.NewTime(t0.Add(-19 * time.Hour))},
		}}}
	if cond := pg.BackupStatus(c, obs, s); cond != nil {
		t.Errorf("a cluster without a dataSource got %+v", cond)
	}
	b := s.PGBackRest
	if len(b.Repos) != 1 || !b.Repos[0].StanzaCreated || b.Repos[0].RepoOptionsHash == "" {
		t.Errorf("repos %+v", b.Repos)
	}
	if m := b.ManualBackup; m == nil || m.ID != "two" || !m.Finished || m.Succeeded != 1 {
		t.Errorf("manual backup %+v, want two, finished", m)
	}
	if sb := b.ScheduledBackups; len(sb) != 1 || sb[0].CronJobName != "hippo-repo1-full" || sb[0].Type != "full" || sb[0].Active != 1 {
		t.Errorf("scheduled backups %+v, want the last Job of hippo-repo1-full, running", sb)
	}
	if lb := b.LastBackups; len(lb) != 2 || lb[0].Type != "diff" || lb[1].Type != "full" || lb[1].Duration != "12s" ||
		!lb[1].CompletionTime.Time.Equal(t0.Add(12*time.Second)) || lb[1].Size != 30<<20 || lb[1].RepositorySize != 4<<20 {
		t.Errorf("last backups %+v", lb)
	}
	if a := b.Archive; a == nil || a.LastArchivedWAL != "000000010000000000000003" || !a.LastArchivedTime.Time.Equal(archived) {
		t.Errorf("archive %+v", a)
	}
}

// A restore the instance refuses is the PostgresDataInitialized condition,
// False with the instance's reason; once a primary is ready it is True.
func TestARefusedRestoreIsAConditionWithTheReason(t *testing.T) {
	c := hippo(func(c *postgresv1beta1.PostgresCluster) {
		c.Spec.DataSource = &postgresv1beta1.DataSource{PostgresCluster: &postgresv1beta1.PostgresClusterDataSource{ClusterName: "hippo-src", RepoName: "repo1"}}
	})
	reason := `target time 2026-11-28T19:00:00Z is before the first backup of stanza "db" ended`
	s := &postgresv1beta1.PostgresClusterStatus{}
	cond := pg.BackupStatus(c, pg.Observed{Instances: map[string]*pgcontract.Status{
		"hippo-instance1-abcd-0": {State: "Failed", Reason: reason}}}, s)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != pg.ReasonRestoreFailed || !strings.Contains(cond.Message, reason) {
		t.Fatalf("condition %+v", cond)
	}
	s.Primary = "hippo-instance1-abcd-0"
	cond = pg.BackupStatus(c, pg.Observed{Instances: map[string]*pgcontract.Status{
		"hippo-instance1-abcd-0": {Role: pgcontract.RolePrimary, Ready: true, State: "Running"}}}, s)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("condition %+v", cond)
	}
	meta.SetStatusCondition(&c.Status.Conditions, *cond)
	if !pg.DataInitialized(c) {
		t.Error("DataInitialized is false with the condition True")
	}
}

func job(name string, labels map[string]string, id string, start time.Time, done bool) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(start)}}
	if id != "" {
		j.Annotations = map[string]string{postgresv1beta1.AnnotationPGBackRestBackup: id}
	}
	st := metav1.NewTime(start)
	j.Status.StartTime = &st
	if done {
		end := metav1.NewTime(start.Add(time.Minute))
		j.Status.CompletionTime, j.Status.Succeeded = &end, 1
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	} else {
		j.Status.Active = 1
	}
	return j
}

func rawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }
