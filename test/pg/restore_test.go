package pg

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
)

// Restores from a source cluster's repository into new one-instance
// clusters. The source has a full backup, marker rows around two times:
// T1 on timeline 1, then a failover, T2 on timeline 2. A restore to the
// end of the WAL dumps exactly as the source; a restore to T1 or T2 holds
// exactly the rows committed at or before it. Bad restores (a target
// before the first backup, an unknown stanza, an unreachable S3) fail with
// a reason and leave the source as it was.
func TestRestoreRoundTripAndPointInTime(t *testing.T) {
	s3 := startS3(t)
	src := newCluster(t, 3, backupConfig(s3), s3.Credentials("repo1"))
	primary := src.WaitHealthy(3 * time.Minute)
	waitStanza(src, primary)
	beforeBackup := serverTime(t, src, primary)
	full := backup(t, src, pgcontract.BackupFull)
	t.Logf("full backup %s in %s", full.Label, full.Duration)
	execSQL(t, src, `CREATE TABLE marker (id int PRIMARY KEY, note text)`)
	insert := func(ids ...int) {
		for _, id := range ids {
			execSQL(t, src, `INSERT INTO marker VALUES ($1::int, 'row ' || $1::int)`, id)
		}
	}
	insert(1, 2, 3)
	t1 := serverTime(t, src, primary)
	insert(4, 5)
	waitArchived(t, src, s3, switchWAL(t, src, primary))

	old := primary
	src.Kill(old)
	src.WaitNewPrimary(old, "a new primary", "")
	primary = src.Holder()
	insert(6, 7)
	t2 := serverTime(t, src, primary)
	insert(8)
	waitArchived(t, src, s3, switchWAL(t, src, primary))
	src.Start(old)
	primary = src.WaitHealthy(3 * time.Minute)
	sourceDump := dump(t, src, primary)
	infoBefore := s3.Keys(strings.TrimPrefix(repoPath, "/") + "/backup/db/")

	restore := func(t *testing.T, options ...string) *pgharness.Cluster {
		cfg := backupConfig(s3)
		cfg.Backups.Repos = []pgcontract.Repo{s3.Repo("repo1", "/pgbackrest/restored-"+pgharness.RandomString(6))}
		cfg.Restore = &pgcontract.Restore{Stanza: "db", Repo: s3.Repo("repo1", repoPath), Options: options}
		c := newCluster(t, 1, cfg, s3.Credentials("repo1"))
		return c
	}

	t.Run("to the end of the WAL, the dump is the source's", func(t *testing.T) {
		c := restore(t)
		p := c.WaitHealthy(5 * time.Minute)
		if got := dump(t, c, p); !bytes.Equal(got, sourceDump) {
			t.Errorf("the restored dump differs from the source's (%d and %d bytes)", len(got), len(sourceDump))
		}
		waitStanza(c, p) // in the restored cluster's own repository
	})
	for _, tc := range []struct {
		name   string
		target time.Time
		want   []int
	}{
		{"to T1 on timeline 1, exactly the rows committed before it", t1, []int{1, 2, 3}},
		{"to T2 on timeline 2, after the failover, exactly the rows committed before it", t2, []int{1, 2, 3, 4, 5, 6, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := restore(t, "--type=time", "--target="+tc.target.UTC().Format("2006-01-02 15:04:05.999999-07"))
			p := c.WaitHealthy(5 * time.Minute)
			if got := markers(t, c, p); !slices.Equal(got, tc.want) {
				t.Errorf("restored to %s: rows %v, want %v", tc.target.UTC().Format(time.RFC3339Nano), got, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		name    string
		prepare func(*pgcontract.Restore)
		reason  string
	}{
		{"a target before the first backup", func(r *pgcontract.Restore) {
			r.Options = []string{"--type=time", "--target=" + beforeBackup.Add(-time.Minute).UTC().Format("2006-01-02 15:04:05-07")}
		}, "is before the first backup"},
		{"an unknown stanza", func(r *pgcontract.Restore) { r.Stanza = "nosuch" }, `stanza "nosuch"`},
		{"an unreachable S3", func(r *pgcontract.Restore) { r.Repo.S3.Port = closedPort(t) }, "unable to connect"},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			cfg := backupConfig(s3)
			cfg.Restore = &pgcontract.Restore{Stanza: "db", Repo: s3.Repo("repo1", repoPath)}
			tc.prepare(cfg.Restore)
			c := newCluster(t, 1, cfg, s3.Credentials("repo1"))
			c.WaitFor(3*time.Minute, "the instance failing with a reason", func() (bool, string) {
				st, err := c.Status(c.Names[0])
				if err != nil {
					return false, err.Error()
				}
				return st.State == "Failed" && strings.Contains(st.Reason, tc.reason), st.State + ": " + st.Reason
			})
			st, _ := c.Status(c.Names[0])
			t.Logf("reason: %s", st.Reason)
			if h := c.Holder(); h != "" {
				t.Errorf("the failed restore left the Lease held by %q", h)
			}
		})
	}

	if after := s3.Keys(strings.TrimPrefix(repoPath, "/") + "/backup/db/"); !slices.Equal(after, infoBefore) {
		t.Errorf("the source repository's backups changed: %v, then %v", infoBefore, after)
	}
	if st, err := src.Status(primary); err != nil || !st.Ready {
		t.Errorf("the source primary after the restores: %+v %v", st, err)
	}
}

// waitStanza waits until the primary reports its stanza created.
func waitStanza(c *pgharness.Cluster, primary string) {
	c.T.Helper()
	c.WaitFor(2*time.Minute, "the stanza", func() (bool, string) {
		st, err := c.Status(primary)
		if err != nil || st.Archive == nil {
			return false, fmt.Sprint(err)
		}
		return st.Archive.StanzaReady, st.Archive.StanzaError
	})
}

// serverTime is the primary's clock, after every commit before it.
func serverTime(t *testing.T, c *pgharness.Cluster, primary string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := c.Connect(c.SuperuserConnString(primary, "postgres"))
	defer conn.Close(ctx)
	var now time.Time
	must(t, conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now))
	return now
}

func markers(t *testing.T, c *pgharness.Cluster, name string) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := c.Connect(c.SuperuserConnString(name, "app"))
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id FROM marker ORDER BY id`)
	must(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	must(t, err)
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// dump is pg_dump of database app on the instance (with a fixed \restrict
// key: pg_dump picks a random one otherwise).
func dump(t *testing.T, c *pgharness.Cluster, name string) []byte {
	t.Helper()
	out, err := exec.Command(env.BinDir+"/pg_dump", "--no-sync", "--restrict-key=lookout", c.SuperuserConnString(name, "app")).Output()
	if err != nil {
		t.Fatalf("pg_dump of %s: %v", name, err)
	}
	return out
}

func closedPort(t *testing.T) int {
	t.Helper()
	s := startS3(t)
	s.Close()
	return s.Port
}
