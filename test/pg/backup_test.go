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

	"github.com/jackc/pgx/v5"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

const repoPath = "/pgbackrest/repo1"

func backupConfig(s3 *s3Server) pgcontract.Config {
	return pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432,
		LeaseDuration: pgcontract.Duration{Duration: 5 * time.Second},
		Backups: &pgcontract.Backups{Stanza: "db", Repos: []pgcontract.Repo{s3.repo("repo1", repoPath)},
			Global: map[string]string{"repo1-retention-full": "2"}},
	}
}

func (c *cluster) managerURL(name string) string {
	return fmt.Sprintf("http://%s:%d", c.insts[name].host.IP, pgcontract.ManagerPort)
}

// backup runs `lookout backup` as a backup Job does: it finds the primary
// through the Lease and has its manager take the backup.
func (c *cluster) backup(typ string) pgcontract.BackupResult {
	c.t.Helper()
	self, err := os.Executable()
	must(c.t, err)
	cmd := exec.Command(self, "backup", "--cluster", c.name, "--namespace", c.ns, "--repo", "repo1", "--type", typ,
		"--kubeconfig", kubeconfig, "--timeout", "10m")
	cmd.Env = append(os.Environ(), instanceEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("lookout backup: %v: %s", err, stderr.String())
	}
	var res pgcontract.BackupResult
	must(c.t, json.Unmarshal(out, &res))
	return res
}

// exec runs statements on the primary as the application user.
func (c *cluster) exec(sql string, args ...any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.connString())
	must(c.t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	must(c.t, err)
}

// switchWAL closes the primary's current WAL segment, which makes it
// ready for archiving, and returns its name (as the superuser: the
// application user may not switch WAL).
func (c *cluster) switchWAL(primary string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.superuserConnString(primary, "postgres"))
	must(c.t, err)
	defer conn.Close(ctx)
	var seg string
	must(c.t, conn.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&seg))
	_, err = conn.Exec(ctx, `SELECT pg_switch_wal()`)
	must(c.t, err)
	return seg
}

// superuserConnString reaches database db of the instance's postgres over
// its private socket (the test runs on the host, where the socket is).
func (c *cluster) superuserConnString(name, db string) string {
	return fmt.Sprintf("host=%s port=5432 user=postgres dbname=%s connect_timeout=2", filepath.Join(c.insts[name].dir, "run"), db)
}

func (c *cluster) waitArchived(s3 *s3Server, segment string) {
	c.t.Helper()
	start := time.Now()
	c.waitFor(3*time.Minute, "WAL "+segment+" in the repository", func() (bool, string) {
		return s3.hasWAL(repoPath, "db", segment), fmt.Sprint(s3.keys(strings.TrimPrefix(repoPath, "/") + "/archive/db/"))
	})
	c.t.Logf("%s archived %s after it was switched", segment, time.Since(start).Round(time.Millisecond))
}

// Archiving and backups follow the primary: the stanza is created, a full
// backup lands in S3, WAL is archived; the primary is killed while S3
// refuses writes, so its last segment is pending; S3 comes back; the new
// primary archives its timeline's history and segments; the old primary
// pushes its pending segment when it comes back and rejoins as a replica
// with nothing left pending.
func TestArchivingAndBackupsFollowThePrimary(t *testing.T) {
	s3 := startS3(t)
	c := newCluster(t, 3, backupConfig(s3), s3.credentials("repo1"))
	primary := c.waitHealthy(3 * time.Minute)
	c.waitStanza(primary)

	start := time.Now()
	res := c.backup(pgcontract.BackupFull)
	t.Logf("full backup %s: %s, %d bytes read, %d in the repository", res.Label, time.Since(start).Round(time.Millisecond), res.Size, res.RepoSize)
	if !strings.HasSuffix(res.Label, "F") {
		t.Errorf("full backup label %q, want one ending in F", res.Label)
	}
	if keys := s3.keys(strings.TrimPrefix(repoPath, "/") + "/backup/db/" + res.Label + "/"); len(keys) == 0 {
		t.Errorf("no object of backup %s in the bucket", res.Label)
	}
	st, err := c.status(primary)
	must(t, err)
	if len(st.Backups) != 1 || st.Backups[0].Label != res.Label {
		t.Errorf("primary reports backups %+v, want the one of label %s", st.Backups, res.Label)
	}

	c.exec(`CREATE TABLE marker (id int PRIMARY KEY, at timestamptz DEFAULT now())`)
	c.exec(`INSERT INTO marker (id) VALUES (1)`)
	c.waitArchived(s3, c.switchWAL(primary))
	c.waitFor(time.Minute, "the primary's archiving and backup metrics", func() (bool, string) {
		resp, err := http.Get(c.managerURL(primary) + pgcontract.PathMetrics)
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
	s3.down.Store(true)
	c.exec(`INSERT INTO marker (id) VALUES (2)`)
	pending := c.switchWAL(primary)
	c.waitFor(2*time.Minute, pending+" pending on the primary", func() (bool, string) {
		_, err := os.Stat(filepath.Join(c.insts[primary].dir, "data", "pg15", "pg_wal", "archive_status", pending+".ready"))
		return err == nil, fmt.Sprint(err)
	})
	if s3.hasWAL(repoPath, "db", pending) {
		t.Fatalf("%s is in the repository while S3 refuses writes", pending)
	}
	old := primary
	c.kill(old)
	s3.down.Store(false)
	c.waitNewPrimary(old, "a new primary", "")
	primary = c.holder()
	c.waitArchived(s3, "00000002.history")
	c.exec(`INSERT INTO marker (id) VALUES (3)`)
	seg := c.switchWAL(primary)
	if !strings.HasPrefix(seg, "00000002") {
		t.Errorf("new primary's segment %s, want one on timeline 2", seg)
	}
	c.waitArchived(s3, seg)

	// The former primary pushes what it could not before it rewinds.
	c.start(old)
	c.waitArchived(s3, pending)
	primary = c.waitHealthy(3 * time.Minute)
	c.waitFor(2*time.Minute, "no WAL pending on the former primary", func() (bool, string) {
		ready, _ := filepath.Glob(filepath.Join(c.insts[old].dir, "data", "pg15", "pg_wal", "archive_status", "*.ready"))
		return len(ready) == 0, fmt.Sprint(ready)
	})
	st, err = c.status(primary)
	must(t, err)
	if st.Archive == nil || !strings.HasPrefix(st.Archive.LastArchivedWAL, "00000002") {
		t.Errorf("the new primary's archive status %+v, want a segment of timeline 2 archived", st.Archive)
	}
	if _, err := os.Stat(filepath.Join(c.insts[old].dir, "data", "pg15")); err != nil {
		t.Fatal(err)
	}
}
