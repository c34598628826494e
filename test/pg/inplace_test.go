package pg

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
)

// An in-place restore of a running 3-instance cluster. Marker rows are
// committed before and after a time T. Targets that cannot be reached — a
// time before the first backup, a repository the cluster has not got, S3
// answering 503 — are refused with a reason by the primary, and the
// cluster keeps serving on its timeline with every row. The restore to T
// then stops the replicas, restores the primary with --delta, promotes it
// on a new timeline with exactly the rows committed at or before T, and
// the replicas clone it again and stream from it.
func TestInPlaceRestoreToAPointInTime(t *testing.T) {
	s3 := startS3(t)
	c := newCluster(t, 3, backupConfig(s3), s3.Credentials("repo1"))
	primary := c.WaitHealthy(3 * time.Minute)
	waitStanza(c, primary)
	beforeBackup := serverTime(t, c, primary)
	backup(t, c, pgcontract.BackupFull)
	execSQL(t, c, `CREATE TABLE marker (id int PRIMARY KEY, note text)`)
	insert := func(ids ...int) {
		for _, id := range ids {
			execSQL(t, c, `INSERT INTO marker VALUES ($1::int, 'row ' || $1::int)`, id)
		}
	}
	insert(1, 2, 3)
	target := serverTime(t, c, primary)
	insert(4, 5)
	waitArchived(t, c, s3, switchWAL(t, c, primary))
	st, err := c.Status(primary)
	must(t, err)
	timeline := st.Timeline

	restore := func(id string, repo string, options ...string) {
		c.Cfg.Generation++
		c.Cfg.InPlaceRestore = &pgcontract.InPlaceRestore{ID: id, Repo: repo, Options: options}
		c.WriteConfig()
	}
	step := func(name, id string) (*pgcontract.InPlaceRestoreStatus, string) {
		st, err := c.Status(name)
		if err != nil {
			return nil, err.Error()
		}
		if r := st.InPlaceRestore; r != nil && r.ID == id {
			return r, r.Step + ": " + r.Reason
		}
		return nil, st.State + " " + st.Reason
	}

	for _, tc := range []struct {
		name, id, repo string
		options        []string
		down           bool
		reason         string
	}{
		{"a target before the first backup", "early", "repo1",
			[]string{"--type=time", "--target=" + beforeBackup.Add(-time.Minute).UTC().Format("2006-01-02 15:04:05-07")}, false, "is before the first backup"},
		{"a repository the cluster has not got", "norepo", "repo2", nil, false, "repo2 is not one of the cluster's repositories"},
		{"an S3 answering 503", "s3down", "repo1", nil, true, "repo1"},
	} {
		func() {
			t.Logf("refused, the cluster serving: %s", tc.name)
			s3.Down.Store(tc.down)
			defer s3.Down.Store(false)
			restore(tc.id, tc.repo, tc.options...)
			c.WaitFor(3*time.Minute, "the primary refusing the restore", func() (bool, string) {
				r, why := step(primary, tc.id)
				return r != nil && r.Step == pgcontract.RestoreRefused, why
			})
			r, _ := step(primary, tc.id)
			t.Logf("refused: %s", r.Reason)
			if !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("reason %q, want one containing %q", r.Reason, tc.reason)
			}
			s3.Down.Store(false)
			if p := c.WaitHealthy(time.Minute); p != primary {
				t.Errorf("primary %s after the refusal, was %s", p, primary)
			}
			for _, n := range c.Names {
				if st, err := c.Status(n); err != nil || st.Timeline != timeline || st.InPlaceRestore != nil && st.InPlaceRestore.Step != pgcontract.RestoreRefused {
					t.Errorf("%s after the refusal: timeline %d (was %d), restore %+v, %v", n, st.Timeline, timeline, st.InPlaceRestore, err)
				}
			}
			if got := markers(t, c, primary); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
				t.Errorf("rows %v after the refusal, want every row", got)
			}
		}()
	}

	start := time.Now()
	restore("to-t", "repo1", "--type=time", "--target="+target.UTC().Format("2006-01-02 15:04:05.999999-07"))
	c.WaitFor(5*time.Minute, "the restore done", func() (bool, string) {
		st, err := c.Status(primary)
		if err != nil {
			return false, err.Error()
		}
		_, why := step(primary, "to-t")
		return st.LastRestore == "to-t", why
	})
	restored := time.Since(start)
	if p := c.WaitHealthy(5 * time.Minute); p != primary {
		t.Errorf("primary %s after the restore, was %s", p, primary)
	}
	t.Logf("restored in place in %s, every instance streaming after %s", restored.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	st, err = c.Status(primary)
	must(t, err)
	if st.Timeline <= timeline {
		t.Errorf("timeline %d after the restore, want a new one after %d", st.Timeline, timeline)
	}
	for _, n := range c.Names {
		if got := markersReplayed(t, c, n, 3); !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("%s restored to %s: rows %v, want the rows committed at or before it, [1 2 3]", n, target.UTC().Format(time.RFC3339Nano), got)
		}
	}
	insert(6)
	for _, n := range c.Names {
		if got := markersReplayed(t, c, n, 4); !slices.Equal(got, []int{1, 2, 3, 6}) {
			t.Errorf("%s: rows %v after a write on the restored cluster, want [1 2 3 6]", n, got)
		}
	}

	// The Lease records the restore: a manager that restarts does not run
	// it again.
	c.Kill(primary)
	c.Start(primary)
	p := c.WaitHealthy(3 * time.Minute)
	if got := markers(t, c, p); !slices.Equal(got, []int{1, 2, 3, 6}) {
		t.Errorf("rows %v after the primary restarted, want [1 2 3 6]", got)
	}
}

// markersReplayed is markers on instance name, once it holds want rows (a
// replica that cloned replays what followed).
func markersReplayed(t *testing.T, c *pgharness.Cluster, name string, want int) []int {
	t.Helper()
	var got []int
	c.WaitFor(time.Minute, name+" holding the restored rows", func() (bool, string) {
		got = markers(t, c, name)
		return len(got) >= want, ""
	})
	return got
}
