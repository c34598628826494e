package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// The demo's backup and point-in-time restore: a one-instance cluster
// default/pitr archives to an S3 server on the pods' bridge (gofakes3
// behind TLS, as the tests run it: pgBackRest speaks S3 over HTTPS only),
// takes a backup when annotated, gets more rows, and a second cluster
// default/pitr-restored is restored from its repository to a time between
// them.
const (
	pitrCluster   = "pitr"
	pitrRestored  = "pitr-restored"
	pitrRowsBatch = 1000
)

// runPostgresBackup runs the backup and point-in-time restore and prints
// the row counts: the source now, the source at the target time, the
// restored cluster. What it starts is stopped by the functions it adds to
// stops.
func runPostgresBackup(ctx context.Context, c client.Client, cp *controlplane.ControlPlane, bins devenv.Binaries, network *testhost.Network, out string, kc func(args ...string), stops *[]func()) error {
	step("Backups: starting an S3 server (gofakes3 behind TLS, a CA of its own) on %s, its CA and keys in Secret default/pitr-s3 as pgBackRest option files", network.HostIP)
	r := &pgharness.Runner{}
	*stops = append(*stops, r.Close)
	var s3 *pgharness.S3Server
	if err := r.Try(func() { s3 = pgharness.StartS3(r, network.HostIP) }); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: pgNamespace, Name: "pitr-s3"},
		Data:       map[string][]byte{"s3.conf": []byte(pgharness.CredentialsConf("repo1")), "ca.crt": s3.CAPEM},
	}); err != nil {
		return err
	}
	src := pitrManifest(pitrCluster)
	src.Spec.Backups = &postgresv1beta1.Backups{PGBackRest: postgresv1beta1.PGBackRestArchive{
		Configuration: []postgresv1beta1.ConfigurationProjection{{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "pitr-s3"}}}},
		Global: map[string]string{"repo1-path": "/pgbackrest/pitr/repo1", "repo1-retention-full": "2", "repo1-s3-uri-style": "path",
			"repo1-storage-ca-file": pgcontract.BackupConfDir + "/ca.crt"},
		Repos: []postgresv1beta1.PGBackRestRepo{{Name: "repo1",
			S3: &postgresv1beta1.RepoS3{Bucket: pgharness.S3Bucket, Endpoint: s3.Endpoint(), Region: "us-east-1"}}},
		Manual: &postgresv1beta1.PGBackRestManualBackup{RepoName: "repo1", Options: []string{"--type=full"}},
	}}
	step("Applying PostgresCluster default/pitr (one instance) with spec.backups.pgbackrest: repo1 in the S3 bucket, a full manual backup")
	if err := c.Create(ctx, src); err != nil {
		return err
	}
	pods, err := devenv.RunPostgresPods(ctx, c, cp, bins, network, pgNamespace, pitrCluster, filepath.Join(out, "postgres-pitr"))
	if err != nil {
		return err
	}
	*stops = append(*stops, pods.Stop)
	wait := func(name string, timeout time.Duration, what string, ok func(*postgresv1beta1.PostgresCluster) bool) (*postgresv1beta1.PostgresCluster, error) {
		p, err := devenv.WaitPostgresCluster(ctx, c, client.ObjectKey{Namespace: pgNamespace, Name: name}, timeout, ok)
		if err != nil {
			return nil, fmt.Errorf("%s: no %s: %w (pods: %v)", name, what, err, pods.Errors())
		}
		return p, nil
	}
	if _, err := wait(pitrCluster, 5*time.Minute, "ready primary with its stanza", func(p *postgresv1beta1.PostgresCluster) bool {
		return p.Status.Ready == "1/1" && p.Status.PGBackRest != nil && len(p.Status.PGBackRest.Repos) == 1 && p.Status.PGBackRest.Repos[0].StanzaCreated
	}); err != nil {
		return err
	}
	lookup := devenv.ServiceLookup(c)
	uri, err := userURI(ctx, c, pitrCluster)
	if err != nil {
		return err
	}
	if _, err := pitrSQL(ctx, uri, lookup, fmt.Sprintf(`CREATE TABLE zoo_animals (id int PRIMARY KEY, born timestamptz DEFAULT clock_timestamp());
INSERT INTO zoo_animals (id) SELECT generate_series(1, %d)`, pitrRowsBatch)); err != nil {
		return err
	}
	fmt.Printf("    %d rows written through the Secret's uri\n", pitrRowsBatch)

	kc("annotate", "-n", pgNamespace, "postgrescluster", pitrCluster, postgresv1beta1.AnnotationPGBackRestBackup+"=demo")
	p, err := wait(pitrCluster, 5*time.Minute, "finished manual backup", func(p *postgresv1beta1.PostgresCluster) bool {
		b := p.Status.PGBackRest
		return b != nil && b.ManualBackup != nil && b.ManualBackup.Finished && len(b.LastBackups) > 0
	})
	if err != nil {
		return err
	}
	last := p.Status.PGBackRest.LastBackups[0]
	fmt.Printf("    backup %s (%s) of repo1: %s, %d bytes read, %d written to S3 (status.pgbackrest.lastBackups)\n",
		last.Label, last.Type, last.Duration, last.Size, last.RepositorySize)

	// More rows, the target time between two batches, then one more batch
	// whose WAL is archived: the restore replays up to the target.
	if _, err := pitrSQL(ctx, uri, lookup, fmt.Sprintf(`INSERT INTO zoo_animals (id) SELECT generate_series(%d, %d)`, pitrRowsBatch+1, 2*pitrRowsBatch)); err != nil {
		return err
	}
	target, err := pitrSQL(ctx, uri, lookup, `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00'`)
	if err != nil {
		return err
	}
	if _, err := pitrSQL(ctx, uri, lookup, fmt.Sprintf(`INSERT INTO zoo_animals (id) SELECT generate_series(%d, %d)`, 2*pitrRowsBatch+1, 3*pitrRowsBatch)); err != nil {
		return err
	}
	written := time.Now()
	fmt.Printf("    %d rows more after the backup; the target time %s falls after the first %d of them\n", 2*pitrRowsBatch, target, pitrRowsBatch)
	if _, err := wait(pitrCluster, 3*time.Minute, "segment archived after the last write", func(p *postgresv1beta1.PostgresCluster) bool {
		a := p.Status.PGBackRest.Archive
		return a != nil && a.LastArchivedTime != nil && a.LastArchivedTime.Time.After(written.Truncate(time.Second))
	}); err != nil {
		return err
	}
	fmt.Println("    the WAL of the last rows is archived (archive_timeout switches a segment within 30 s)")

	restored := pitrManifest(pitrRestored)
	restored.Spec.DataSource = &postgresv1beta1.DataSource{PostgresCluster: &postgresv1beta1.PostgresClusterDataSource{
		ClusterName: pitrCluster, RepoName: "repo1", Options: []string{"--type=time", "--target=" + target}}}
	step("Applying PostgresCluster default/pitr-restored with spec.dataSource.postgresCluster: pitr's repo1, --type=time --target=%q", target)
	start := time.Now()
	if err := c.Create(ctx, restored); err != nil {
		return err
	}
	rpods, err := devenv.RunPostgresPods(ctx, c, cp, bins, network, pgNamespace, pitrRestored, filepath.Join(out, "postgres-pitr-restored"))
	if err != nil {
		return err
	}
	*stops = append(*stops, rpods.Stop)
	if _, err := wait(pitrRestored, 5*time.Minute, "restored, ready primary", func(p *postgresv1beta1.PostgresCluster) bool {
		return p.Status.Ready == "1/1" && p.Status.Primary != "" && pgrender.DataInitialized(p)
	}); err != nil {
		return fmt.Errorf("%w (restored pods: %v)", err, rpods.Errors())
	}
	fmt.Printf("    restored and ready %s after the apply\n", time.Since(start).Round(time.Second))
	kc("get", "postgresclusters", "-n", pgNamespace)
	ruri, err := userURI(ctx, c, pitrRestored)
	if err != nil {
		return err
	}
	now, err := pitrSQL(ctx, uri, lookup, `SELECT count(*)::text FROM zoo_animals`)
	if err != nil {
		return err
	}
	atTarget, err := pitrSQL(ctx, uri, lookup, fmt.Sprintf(`SELECT count(*)::text FROM zoo_animals WHERE born <= '%s'`, target))
	if err != nil {
		return err
	}
	got, err := pitrSQL(ctx, ruri, lookup, `SELECT count(*)::text FROM zoo_animals`)
	if err != nil {
		return err
	}
	fmt.Printf("    rows: source now %s, source at the target time %s, restored cluster %s\n", now, atTarget, got)
	if got != atTarget {
		return fmt.Errorf("the restored cluster holds %s rows, the source held %s at the target time", got, atTarget)
	}
	return nil
}

// pitrManifest is a one-instance cluster with user rhino owning zoo.
func pitrManifest(name string) *postgresv1beta1.PostgresCluster {
	return &postgresv1beta1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: pgNamespace, Name: name},
		Spec: postgresv1beta1.PostgresClusterSpec{
			PostgresVersion: 15,
			InstanceSets: []postgresv1beta1.PostgresInstanceSetSpec{{Name: "instance1", Replicas: ptr.To[int32](1),
				DataVolumeClaimSpec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				}}},
			Users: []postgresv1beta1.PostgresUserSpec{{Name: pgUser, Databases: []string{"zoo"}}},
		},
	}
}

func userURI(ctx context.Context, c client.Client, cluster string) (string, error) {
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: pgNamespace, Name: pgrender.UserSecretName(cluster, pgUser)}, &secret); err != nil {
		return "", err
	}
	return string(secret.Data["uri"]), nil
}

// pitrSQL runs sql through uri and returns its one value as text, or ""
// for statements that return none (several may be given then).
func pitrSQL(ctx context.Context, uri string, lookup devenv.LookupFunc, sql string) (string, error) {
	addr, err := devenv.ResolvedURI(ctx, uri, lookup)
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(cctx, addr)
	if err != nil {
		return "", err
	}
	defer conn.Close(cctx)
	if !strings.HasPrefix(sql, "SELECT") {
		_, err := conn.Exec(cctx, sql)
		return "", err
	}
	var out string
	err = conn.QueryRow(cctx, sql).Scan(&out)
	return out, err
}
