package pg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
)

const repoPath = "/pgbackrest/repo1"

func backupConfig(s3 *s3Server) pgcontract.Config {
	return pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432,
		LeaseDuration: pgcontract.Duration{Duration: 5 * time.Second},
		Backups: &pgcontract.Backups{Stanza: "db", Repos: []pgcontract.Repo{s3.Repo("repo1", repoPath)},
			Global: map[string]string{"repo1-retention-full": "2"}},
	}
}

// backup runs `lookout backup` as a backup Job does: it finds the primary
// through the Lease and has its manager take the backup.
func backup(t *testing.T, c *pgharness.Cluster, typ string) pgcontract.BackupResult {
	t.Helper()
	self, err := os.Executable()
	must(t, err)
	cmd := exec.Command(self, "backup", "--cluster", c.Name, "--namespace", c.NS, "--repo", "repo1", "--type", typ,
		"--kubeconfig", env.Kubeconfig, "--timeout", "10m")
	cmd.Env = append(os.Environ(), instanceEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lookout backup: %v: %s", err, stderr.String())
	}
	var res pgcontract.BackupResult
	must(t, json.Unmarshal(out, &res))
	// pgBackRest records the backup's end in whole seconds and restores to
	// a target time only from a later second: a test's target, taken after
	// this returns, is in one.
	ended := time.Now().Truncate(time.Second)
	for !time.Now().Truncate(time.Second).After(ended) {
		time.Sleep(10 * time.Millisecond)
	}
	return res
}

// execSQL runs statements on the primary as the application user.
func execSQL(t *testing.T, c *pgharness.Cluster, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := c.Connect(c.ConnString())
	defer conn.Close(ctx)
	_, err := conn.Exec(ctx, sql, args...)
	must(t, err)
}

// switchWAL closes the primary's current WAL segment, which makes it
// ready for archiving, and returns its name (as the superuser: the
// application user may not switch WAL).
func switchWAL(t *testing.T, c *pgharness.Cluster, primary string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := c.Connect(c.SuperuserConnString(primary, "postgres"))
	defer conn.Close(ctx)
	var seg string
	must(t, conn.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&seg))
	_, err := conn.Exec(ctx, `SELECT pg_switch_wal()`)
	must(t, err)
	return seg
}

func waitArchived(t *testing.T, c *pgharness.Cluster, s3 *s3Server, segment string) {
	t.Helper()
	start := time.Now()
	c.WaitFor(3*time.Minute, "WAL "+segment+" in the repository", func() (bool, string) {
		return s3.HasWAL(repoPath, "db", segment), fmt.Sprint(s3.Keys(strings.TrimPrefix(repoPath, "/") + "/archive/db/"))
	})
	t.Logf("%s archived %s after it was switched", segment, time.Since(start).Round(time.Millisecond))
}

// Archiving and backups follow the primary: the stanza is created, a full
// backup lands in S3, WAL is archived; the primary is killed while S3
// refuses writes, so its last segment is pending; S3 comes back; the new
// primary archives its timeline's history and segments; the old primary
// pushes its pending segment when it comes back and rejoins as a replica
// with nothing left pending.
func TestArchivingAndBackupsFollowThePrimary(t *testing.T) {
	s3 := startS3(t)
	c := newCluster(t, 3, backupConfig(s3), s3.Credentials("repo1"))
	primary := c.WaitHealthy(3 * time.Minute)
	waitStanza(c, primary)

	start := time.Now()
	res := backup(t, c, pgcontract.BackupFull)
	t.Logf("full backup %s: %s, %d bytes read, %d in the repository", res.Label, time.Since(start).Round(time.Millisecond), res.Size, res.RepoSize)
	if !strings.HasSuffix(res.Label, "F") {
		t.Errorf("full backup label %q, want one ending in F", res.Label)
	}
	if keys := s3.Keys(strings.TrimPrefix(repoPath, "/") + "/backup/db/" + res.Label + "/"); len(keys) == 0 {
		t.Errorf("no object of backup %s in the bucket", res.Label)
	}
	st, err := c.Status(primary)
	must(t, err)
	if len(st.Backups) != 1 || st.Backups[0].Label != res.Label {
		t.Errorf("primary reports backups %+v, want the one of label %s", st.Backups, res.Label)
	}

	execSQL(t, c, `CREATE TABLE marker (id int PRIMARY KEY, at timestamptz DEFAULT now())`)
	execSQL(t, c, `INSERT INTO marker (id) VALUES (1)`)
	waitArchived(t, c, s3, switchWAL(t, c, primary))
	c.WaitFor(time.Minute, "the primary's archiving and backup metrics", func() (bool, string) {
		resp, err := http.Get(c.ManagerURL(primary) + pgcontract.PathMetrics)
		if err != nil {
			return false, err.Error()
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, m := range []string{pgcontract.MetricArchiveLastArchived + " ", pgcontract.MetricStanzaReady + " 1",
			pgcontract.MetricBackupLast + `{repo="repo1",type="full"}`, pgcontract.MetricBackupLastSize + `{repo="repo1",type="full"}`} {
			if !strings.Contains(string(body), m) {
				return false, "no " + m
			}
		}
		return true, ""
	})

	// S3 refuses: the next segment stays pending on the primary.
	s3.Down.Store(true)
	execSQL(t, c, `INSERT INTO marker (id) VALUES (2)`)
	pending := switchWAL(t, c, primary)
	c.WaitFor(2*time.Minute, pending+" pending on the primary", func() (bool, string) {
		_, err := os.Stat(filepath.Join(c.Insts[primary].PGData(), "pg_wal", "archive_status", pending+".ready"))
		return err == nil, fmt.Sprint(err)
	})
	if s3.HasWAL(repoPath, "db", pending) {
		t.Fatalf("%s is in the repository while S3 refuses writes", pending)
	}
	old := primary
	c.Kill(old)
	s3.Down.Store(false)
	c.WaitNewPrimary(old, "a new primary", "")
	primary = c.Holder()
	waitArchived(t, c, s3, "00000002.history")
	execSQL(t, c, `INSERT INTO marker (id) VALUES (3)`)
	seg := switchWAL(t, c, primary)
	if !strings.HasPrefix(seg, "00000002") {
		t.Errorf("new primary's segment %s, want one on timeline 2", seg)
	}
	waitArchived(t, c, s3, seg)

	// The former primary pushes what it could not before it rewinds.
	c.Start(old)
	waitArchived(t, c, s3, pending)
	primary = c.WaitHealthy(3 * time.Minute)
	c.WaitFor(2*time.Minute, "no WAL pending on the former primary", func() (bool, string) {
		ready, _ := filepath.Glob(filepath.Join(c.Insts[old].PGData(), "pg_wal", "archive_status", "*.ready"))
		return len(ready) == 0, fmt.Sprint(ready)
	})
	st, err = c.Status(primary)
	must(t, err)
	if st.Archive == nil || !strings.HasPrefix(st.Archive.LastArchivedWAL, "00000002") {
		t.Errorf("the new primary's archive status %+v, want a segment of timeline 2 archived", st.Archive)
	}
	if _, err := os.Stat(c.Insts[old].PGData()); err != nil {
		t.Fatal(err)
	}
}
