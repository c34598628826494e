package pg

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
)

// inPlace is a running 3-instance cluster with a full backup, marker rows
// 1–3 committed at or before target and 4–5 after it, every one archived.
type inPlace struct {
	t        *testing.T
	c        *pgharness.Cluster
	s3       *s3Server
	primary  string
	timeline int
	// beforeBackup is a time before the only backup.
	beforeBackup, target time.Time
}

func newInPlace(t *testing.T) *inPlace {
	s3 := startS3(t)
	c := newCluster(t, 3, backupConfig(s3), s3.Credentials("repo1"))
	ip := &inPlace{t: t, c: c, s3: s3, primary: c.WaitHealthy(3 * time.Minute)}
	waitStanza(c, ip.primary)
	ip.beforeBackup = serverTime(t, c, ip.primary)
	backup(t, c, pgcontract.BackupFull)
	execSQL(t, c, `CREATE TABLE marker (id int PRIMARY KEY, note text)`)
	ip.insert(1, 2, 3)
	ip.target = serverTime(t, c, ip.primary)
	ip.insert(4, 5)
	waitArchived(t, c, s3, switchWAL(t, c, ip.primary))
	st, err := c.Status(ip.primary)
	must(t, err)
	ip.timeline = st.Timeline
	return ip
}

func (ip *inPlace) insert(ids ...int) {
	for _, id := range ids {
		execSQL(ip.t, ip.c, `INSERT INTO marker VALUES ($1::int, 'row ' || $1::int)`, id)
	}
}

// restore asks for the in-place restore id, as the operator does from
// spec.backups.pgbackrest.restore.
func (ip *inPlace) restore(id, repo string, options ...string) {
	ip.c.Cfg.Generation++
	ip.c.Cfg.InPlaceRestore = &pgcontract.InPlaceRestore{ID: id, Repo: repo, Options: options}
	ip.c.WriteConfig()
}

// restoreToTarget asks for the restore id to the target time.
func (ip *inPlace) restoreToTarget(id string) {
	ip.restore(id, "repo1", "--type=time", "--target="+ip.target.UTC().Format("2006-01-02 15:04:05.999999-07"))
}

// step is instance name's part in the restore id, and what it says.
func (ip *inPlace) step(name, id string) (*pgcontract.InPlaceRestoreStatus, string) {
	st, err := ip.c.Status(name)
	if err != nil {
		return nil, err.Error()
	}
	if r := st.InPlaceRestore; r != nil && r.ID == id {
		return r, r.Step + ": " + r.Reason
	}
	return nil, st.State + " " + st.Reason
}

// waitRestored waits until the primary restored id, and every instance
// streams from it again.
func (ip *inPlace) waitRestored(id string, start time.Time) {
	ip.c.WaitFor(5*time.Minute, "the restore done", func() (bool, string) {
		st, err := ip.c.Status(ip.primary)
		if err != nil {
			return false, err.Error()
		}
		_, why := ip.step(ip.primary, id)
		return st.LastRestore == id, why
	})
	restored := time.Since(start)
	if p := ip.c.WaitHealthy(5 * time.Minute); p != ip.primary {
		ip.t.Errorf("primary %s after the restore, was %s", p, ip.primary)
	}
	ip.t.Logf("restored in place in %s, every instance streaming after %s", restored.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// checkRestored checks that the primary runs on a new timeline and that
// every instance holds exactly the rows committed at or before the target,
// then the row written after the restore.
func (ip *inPlace) checkRestored() {
	t, c := ip.t, ip.c
	st, err := c.Status(ip.primary)
	must(t, err)
	if st.Timeline <= ip.timeline {
		t.Errorf("timeline %d after the restore, want a new one after %d", st.Timeline, ip.timeline)
	}
	for _, n := range c.Names {
		if got := markersReplayed(t, c, n, 3); !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("%s restored to %s: rows %v, want the rows committed at or before it, [1 2 3]", n, ip.target.UTC().Format(time.RFC3339Nano), got)
		}
	}
	ip.insert(6)
	for _, n := range c.Names {
		if got := markersReplayed(t, c, n, 4); !slices.Equal(got, []int{1, 2, 3, 6}) {
			t.Errorf("%s: rows %v after a write on the restored cluster, want [1 2 3 6]", n, got)
		}
	}
}

// An in-place restore of a running 3-instance cluster. Marker rows are
// committed before and after a time T. Targets that cannot be reached — a
// time before the first backup, a repository the cluster has not got, S3
// answering 503 — are refused with a reason by the primary, and the
// cluster keeps serving on its timeline with every row. The restore to T
// then stops the replicas, restores the primary with --delta, promotes it
// on a new timeline with exactly the rows committed at or before T, and
// the replicas clone it again and stream from it.
func TestInPlaceRestoreToAPointInTime(t *testing.T) {
	ip := newInPlace(t)
	c, s3, primary := ip.c, ip.s3, ip.primary

	for _, tc := range []struct {
		name, id, repo string
		options        []string
		down           bool
		reason         string
	}{
		{"a target before the first backup", "early", "repo1",
			[]string{"--type=time", "--target=" + ip.beforeBackup.Add(-time.Minute).UTC().Format("2006-01-02 15:04:05-07")}, false, "is before the first backup"},
		{"a repository the cluster has not got", "norepo", "repo2", nil, false, "repo2 is not one of the cluster's repositories"},
		{"an S3 answering 503", "s3down", "repo1", nil, true, "repo1"},
	} {
		func() {
			t.Logf("refused, the cluster serving: %s", tc.name)
			s3.Down.Store(tc.down)
			defer s3.Down.Store(false)
			ip.restore(tc.id, tc.repo, tc.options...)
			c.WaitFor(3*time.Minute, "the primary refusing the restore", func() (bool, string) {
				r, why := ip.step(primary, tc.id)
				return r != nil && r.Step == pgcontract.RestoreRefused, why
			})
			r, _ := ip.step(primary, tc.id)
			t.Logf("refused: %s", r.Reason)
			if !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("reason %q, want one containing %q", r.Reason, tc.reason)
			}
			s3.Down.Store(false)
			if p := c.WaitHealthy(time.Minute); p != primary {
				t.Errorf("primary %s after the refusal, was %s", p, primary)
			}
			for _, n := range c.Names {
				if st, err := c.Status(n); err != nil || st.Timeline != ip.timeline || st.InPlaceRestore != nil && st.InPlaceRestore.Step != pgcontract.RestoreRefused {
					t.Errorf("%s after the refusal: timeline %d (was %d), restore %+v, %v", n, st.Timeline, ip.timeline, st.InPlaceRestore, err)
				}
			}
			if got := markers(t, c, primary); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
				t.Errorf("rows %v after the refusal, want every row", got)
			}
		}()
	}

	start := time.Now()
	ip.restoreToTarget("to-t")
	ip.waitRestored("to-t", start)
	ip.checkRestored()

	// The Lease records the restore: a manager that restarts does not run
	// it again.
	c.Kill(primary)
	c.Start(primary)
	p := c.WaitHealthy(3 * time.Minute)
	if got := markers(t, c, p); !slices.Equal(got, []int{1, 2, 3, 6}) {
		t.Errorf("rows %v after the primary restarted, want [1 2 3 6]", got)
	}
}

// The apiserver stops answering the primary while it restores in place,
// for twice as long as the Lease lasts. Its postgres takes no writes the Lease
// guards, so it does not fence itself; the stopped replicas see its
// manager answer that it is restoring and hold no election (one would
// bring back the data the restore replaces, on a timeline of the same
// number); once the apiserver answers again the restore completes as if
// nothing had happened.
func TestInPlaceRestoreOutlastsAnApiserverThatStopsAnswering(t *testing.T) {
	ip := newInPlace(t)
	c := ip.c
	start := time.Now()
	ip.restoreToTarget("to-t")
	c.WaitFor(3*time.Minute, "the primary restoring", func() (bool, string) {
		r, why := ip.step(ip.primary, "to-t")
		return r != nil && (r.Step == pgcontract.RestoreRestoring || r.Step == pgcontract.RestoreReplaying), why
	})
	c.CutAPIServer(ip.primary)
	cut := time.Now()
	healed := false
	heal := func() {
		if !healed {
			c.HealAPIServer(ip.primary)
			healed = true
		}
	}
	defer heal()
	// The Lease falls silent for twice as long as it lasts, and no one
	// takes it.
	leases := clientset.CoordinationV1().Leases(c.NS)
	var holder string
	c.WaitFor(time.Minute, "the Lease silent for twice as long as it lasts", func() (bool, string) {
		l, err := leases.Get(context.Background(), pgcontract.LeaseName(c.Name), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		holder = ptr.Deref(l.Spec.HolderIdentity, "")
		silent := time.Since(l.Spec.RenewTime.Time)
		return holder != ip.primary || silent > 2*c.Cfg.LeaseDuration.Duration, "renewed " + silent.Round(time.Millisecond).String() + " ago"
	})
	if holder != ip.primary {
		t.Fatalf("%q took the Lease from %s while it restored", holder, ip.primary)
	}
	for _, n := range c.Names {
		if n == ip.primary {
			continue
		}
		if r, why := ip.step(n, "to-t"); r == nil || r.Step != pgcontract.RestoreStopped {
			t.Errorf("%s with the primary's Lease silent: %s, want it stopped for the restore", n, why)
		}
	}
	heal()
	t.Logf("the apiserver did not answer %s for %s", ip.primary, time.Since(cut).Round(time.Millisecond))
	ip.waitRestored("to-t", start)
	ip.checkRestored()
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
