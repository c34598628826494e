package pge2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/pgharness"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// backupDeadline bounds a backup Job from the annotation to its result in
// the status, and a restore from kubectl apply to a ready primary: a
// backup of a small database takes seconds, but pods start slowly on a
// busy 2-core machine.
const backupDeadline = 5 * time.Minute

// clusterManifest is a one-instance PostgresCluster as PGO's documentation
// writes one, with rhino owning zoo and extra YAML under spec.
func clusterManifest(name, spec string) string {
	return fmt.Sprintf(`apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata:
  name: %s
spec:
  postgresVersion: 15
  instances:
    - name: instance1
      dataVolumeClaimSpec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 1Gi
  users:
    - name: rhino
      databases: ["zoo"]
%s`, name, spec)
}

// TestBackupsToS3AndAClone runs PGO's S3 backups story against a real S3
// server (gofakes3 behind TLS on the pods' bridge, its CA and keys in the
// configuration Secret, as PGO's users put them): the stanza is created,
// a backup the pgbackrest-backup annotation asks for runs as a Job and
// shows in the status, a schedule is a CronJob of PGO's name whose Job,
// run once, takes its backup; a clone restored from the repository holds
// the source's rows, and a clone to a time before the first backup is
// refused with the reason while the source's backups stay as they were.
func TestBackupsToS3AndAClone(t *testing.T) {
	ns := fmt.Sprintf("pgbak-%d", time.Now().UnixNano()%1e6)
	must(t, k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	s3 := startS3Repo(t, ns)
	repoPath := "/pgbackrest/" + ns + "/src/repo1"
	apply(t, ns, clusterManifest("src", s3Backups(s3, repoPath, `        schedules:
          full: "0 1 * * 0"
          differential: "0 1 * * 1-6"
`, `      manual:
        repoName: repo1
        options: ["--type=full"]
`)))
	src := runPods(t, ns, "src")

	start := time.Now()
	pgc := waitPGC(t, ns, "src", startDeadline, "a ready primary with the stanza created", func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "1/1" && c.Status.Primary != "" && c.Status.PGBackRest != nil &&
			len(c.Status.PGBackRest.Repos) == 1 && c.Status.PGBackRest.Repos[0].StanzaCreated
	}, src)
	t.Logf("src ready, stanza created %s after kubectl apply (machine load: %s)", time.Since(start).Round(time.Second), loadavg())

	uri := userURI(t, ns, "src")
	lookup := devenv.ServiceLookup(k8s)
	const rows = 500
	execURI(t, uri, lookup, fmt.Sprintf(`CREATE TABLE marks (id int PRIMARY KEY, note text); INSERT INTO marks SELECT i, md5(i::text) FROM generate_series(1, %d) i`, rows))

	// The manual backup: the annotation's value is the request.
	start = time.Now()
	kc(t, "annotate", "-n", ns, "pgc", "src", postgresv1beta1.AnnotationPGBackRestBackup+"=first")
	pgc = waitPGC(t, ns, "src", backupDeadline, "the manual backup finished and a full backup of repo1 in the status", func(c *postgresv1beta1.PostgresCluster) bool {
		b := c.Status.PGBackRest
		return b != nil && b.ManualBackup != nil && b.ManualBackup.ID == "first" && b.ManualBackup.Finished && lastBackup(b, "full") != nil
	}, src)
	m, full := pgc.Status.PGBackRest.ManualBackup, lastBackup(pgc.Status.PGBackRest, "full")
	if m.Succeeded != 1 || m.Failed != 0 {
		t.Errorf("manual backup %+v: want one pod succeeded, none failed", m)
	}
	if full.Size == 0 || full.RepositorySize == 0 || full.Label == "" || full.Duration == "" {
		t.Errorf("last full backup %+v: want its label, size, repository size and duration", full)
	}
	if keys := s3.Keys(strings.TrimPrefix(repoPath, "/") + "/backup/db/" + full.Label + "/"); len(keys) == 0 {
		t.Errorf("backup %s is not in the bucket", full.Label)
	}
	t.Logf("manual backup %s: %s, %d bytes read, %d written; %s from the annotation (machine load: %s)",
		full.Label, full.Duration, full.Size, full.RepositorySize, time.Since(start).Round(time.Second), loadavg())
	var jobs batchv1.JobList
	must(t, k8s.List(testCtx, &jobs, client.InNamespace(ns), client.MatchingLabels{pgrender.LabelBackup: pgrender.BackupManual}))
	if len(jobs.Items) != 1 || jobs.Items[0].Name != pgrender.ManualBackupJobName("src", "first") {
		t.Errorf("manual backup Jobs %v, want %s", jobNames(jobs.Items), pgrender.ManualBackupJobName("src", "first"))
	}

	// The schedules: CronJobs with PGO's names. Their schedules are hours
	// away, so the differential one's Job is run once, as an operator on
	// call would run it (kubectl create job --from=cronjob/…).
	var cron batchv1.CronJob
	must(t, k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "src-repo1-diff"}, &cron))
	ct := cron.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	if cron.Spec.Schedule != "0 1 * * 1-6" || !slices.Contains(ct.Args, "--type=diff") || !slices.Contains(ct.Args, "--repo=repo1") {
		t.Errorf("CronJob src-repo1-diff: schedule %q, args %v", cron.Spec.Schedule, ct.Args)
	}
	must(t, k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "src-repo1-full"}, &cron))
	if cron.Spec.Schedule != "0 1 * * 0" {
		t.Errorf("CronJob src-repo1-full: schedule %q", cron.Spec.Schedule)
	}
	kc(t, "create", "job", "-n", ns, "--from=cronjob/src-repo1-diff", "src-repo1-diff-now")
	pgc = waitPGC(t, ns, "src", backupDeadline, "a differential backup of repo1 in the status", func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.PGBackRest != nil && lastBackup(c.Status.PGBackRest, "diff") != nil
	}, src)
	if diff := lastBackup(pgc.Status.PGBackRest, "diff"); !strings.HasPrefix(diff.Label, full.Label+"_") {
		t.Errorf("differential backup %s is not based on the full backup %s", diff.Label, full.Label)
	}
	if a := pgc.Status.PGBackRest.Archive; a == nil || a.LastArchivedWAL == "" {
		t.Errorf("status.pgbackrest.archive %+v: want the last archived WAL", a)
	}
	backupsBefore := s3.Keys(strings.TrimPrefix(repoPath, "/") + "/backup/db/")

	// A clone to a time before the first backup ended is refused by its
	// instance with the reason; the source is not written to.
	before := time.Unix(full.CompletionTime.Unix(), 0).Add(-time.Hour).UTC().Format("2006-01-02 15:04:05+00")
	apply(t, ns, clusterManifest("early", fmt.Sprintf(`  dataSource:
    postgresCluster:
      clusterName: src
      repoName: repo1
      options: ["--type=time", "--target=%s"]
`, before)))
	early := runPods(t, ns, "early")
	pgcEarly := waitPGC(t, ns, "early", startDeadline, "PostgresDataInitialized False with the reason", func(c *postgresv1beta1.PostgresCluster) bool {
		cond := meta.FindStatusCondition(c.Status.Conditions, postgresv1beta1.ConditionDataInitialized)
		return cond != nil && cond.Reason == pgrender.ReasonRestoreFailed
	}, early)
	cond := meta.FindStatusCondition(pgcEarly.Status.Conditions, postgresv1beta1.ConditionDataInitialized)
	if !strings.Contains(cond.Message, "is before the first backup") {
		t.Errorf("PostgresDataInitialized: %s", cond.Message)
	}
	if out := kc(t, "get", "events", "-n", ns, "--field-selector=involvedObject.name=early"); !strings.Contains(out, pgrender.ReasonRestoreFailed) {
		t.Errorf("no %s Event for early:\n%s", pgrender.ReasonRestoreFailed, out)
	}
	t.Logf("early: %s", cond.Message)

	// A clone to the end of the archive holds the source's rows.
	apply(t, ns, clusterManifest("clone", `  dataSource:
    postgresCluster:
      clusterName: src
      repoName: repo1
`))
	clone := runPods(t, ns, "clone")
	start = time.Now()
	waitPGC(t, ns, "clone", backupDeadline, "the clone ready, its data initialized", func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "1/1" && c.Status.Primary != "" && pgrender.DataInitialized(c)
	}, clone)
	t.Logf("clone restored and ready %s after kubectl apply (machine load: %s)", time.Since(start).Round(time.Second), loadavg())
	srcRows, cloneRows := count(t, uri, lookup), count(t, userURI(t, ns, "clone"), lookup)
	if srcRows != rows || cloneRows != srcRows {
		t.Errorf("rows: source %d, clone %d; want %d in both", srcRows, cloneRows, rows)
	}
	if after := s3.Keys(strings.TrimPrefix(repoPath, "/") + "/backup/db/"); !slices.Equal(after, backupsBefore) {
		t.Errorf("the source's backups changed during the restores:\nbefore %v\nafter  %v", backupsBefore, after)
	}
	waitPGC(t, ns, "src", time.Minute, "the source still ready", func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "1/1" && c.Status.Primary != ""
	}, src)
}

func lastBackup(b *postgresv1beta1.PGBackRestStatus, typ string) *postgresv1beta1.BackupStatus {
	for i := range b.LastBackups {
		if b.LastBackups[i].Repo == "repo1" && b.LastBackups[i].Type == typ {
			return &b.LastBackups[i]
		}
	}
	return nil
}

func jobNames(jobs []batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}

// apply applies a manifest with kubectl, as a user would.
func apply(t *testing.T, ns, manifest string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	must(t, os.WriteFile(f, []byte(manifest), 0o644))
	kc(t, "apply", "-n", ns, "-f", f)
}

// runPods runs the instance and backup Job pods of cluster ns/name until
// the test ends, logging them when it failed.
func runPods(t *testing.T, ns, name string) *devenv.PostgresPods {
	t.Helper()
	pods, err := devenv.RunPostgresPods(testCtx, k8s, cp, bins, network, ns, name, filepath.Join(work, ns, name))
	must(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			logPods(t, pods, ns)
		}
		pods.Stop()
	})
	return pods
}

func waitPGC(t *testing.T, ns, name string, deadline time.Duration, what string, ok func(*postgresv1beta1.PostgresCluster) bool, pods *devenv.PostgresPods) *postgresv1beta1.PostgresCluster {
	t.Helper()
	c, err := devenv.WaitPostgresCluster(testCtx, k8s, client.ObjectKey{Namespace: ns, Name: name}, deadline, ok)
	if err != nil {
		var last postgresv1beta1.PostgresCluster
		_ = k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: name}, &last)
		t.Fatalf("%s: no %s: %v; status %+v; pod errors: %v", name, what, err, last.Status, pods.Errors())
	}
	return c
}

func userURI(t *testing.T, ns, cluster string) string {
	t.Helper()
	var secret corev1.Secret
	must(t, k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: pgrender.UserSecretName(cluster, userName)}, &secret))
	return string(secret.Data["uri"])
}

// connectRetrying connects with uri, trying again for a minute: the
// -primary Service follows a new primary's label within seconds.
func connectRetrying(t *testing.T, uri string, lookup devenv.LookupFunc) (*pgx.Conn, context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx, 2*time.Minute)
	var conn *pgx.Conn
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		conn, last = connect(cctx, uri, lookup)
		return last == nil, nil
	})
	if err != nil {
		cancel()
		t.Fatalf("connect with the Secret's uri: %v", last)
	}
	return conn, ctx, cancel
}

func execURI(t *testing.T, uri string, lookup devenv.LookupFunc, sql string) {
	t.Helper()
	conn, ctx, cancel := connectRetrying(t, uri, lookup)
	defer cancel()
	defer conn.Close(ctx)
	_, err := conn.Exec(ctx, sql)
	must(t, err)
}

func count(t *testing.T, uri string, lookup devenv.LookupFunc) int {
	t.Helper()
	conn, ctx, cancel := connectRetrying(t, uri, lookup)
	defer cancel()
	defer conn.Close(ctx)
	var n int
	must(t, conn.QueryRow(ctx, `SELECT count(*) FROM marks`).Scan(&n))
	return n
}

// startS3Repo starts the test's S3 server and puts its CA and keys in the
// Secret s3-creds of ns, as PGO's users put them.
func startS3Repo(t *testing.T, ns string) *pgharness.S3Server {
	t.Helper()
	s3 := pgharness.StartS3(t, network.HostIP)
	must(t, k8s.Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-creds"},
		Data:       map[string][]byte{"s3.conf": []byte(pgharness.CredentialsConf("repo1")), "ca.crt": s3.CAPEM},
	}))
	return s3
}

// s3Backups is spec.backups of a cluster archiving to the S3 server of
// startS3Repo at path; repoExtra goes into repo1 (schedules), extra into
// pgbackrest (manual).
func s3Backups(s3 *pgharness.S3Server, path, repoExtra, extra string) string {
	return fmt.Sprintf(`  backups:
    pgbackrest:
      configuration:
      - secret:
          name: s3-creds
      global:
        repo1-path: %s
        repo1-retention-full: "2"
        repo1-s3-uri-style: path
        repo1-storage-ca-file: /etc/pgbackrest/conf.d/ca.crt
      repos:
      - name: repo1
%s        s3:
          bucket: %s
          endpoint: %q
          region: us-east-1
%s`, path, repoExtra, pgharness.S3Bucket, s3.Endpoint(), extra)
}
