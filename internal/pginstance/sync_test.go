package pginstance

import (
	"strings"
	"testing"
)

func TestElectable(t *testing.T) {
	sync2 := syncSet{Standbys: []string{"pg-1", "pg-2"}, Count: 1}
	cases := []struct {
		name      string
		candidate string
		known     []peer
		old       string
		recorded  syncSet
		maxLag    int64
		primary   uint64
		want      bool
		reason    string
	}{
		{"promotes the most advanced replica of an asynchronous cluster", "pg-1",
			[]peer{{"pg-1", 200}, {"pg-2", 100}}, "pg-0", syncSet{}, 0, 0, true, ""},
		{"refuses a replica another is ahead of", "pg-2",
			[]peer{{"pg-1", 200}, {"pg-2", 100}}, "pg-0", syncSet{}, 0, 0, false, "pg-1 is further ahead"},
		{"breaks a tie by name", "pg-2",
			[]peer{{"pg-1", 200}, {"pg-2", 200}}, "pg-0", syncSet{}, 0, 0, false, "pg-1"},
		{"refuses a replica further behind the primary than maximumLagOnFailover", "pg-1",
			[]peer{{"pg-1", 100}}, "pg-0", syncSet{}, 50, 200, false, "maximumLagOnFailover"},
		{"promotes a member of the synchronous set that heard from the whole quorum", "pg-1",
			[]peer{{"pg-1", 200}, {"pg-2", 150}}, "pg-0", sync2, 0, 0, true, ""},
		{"refuses the only survivor of ANY 1 of two: the other may hold a commit it lacks", "pg-2",
			[]peer{{"pg-2", 200}}, "pg-0", sync2, 0, 0, false, "heard from 1 of the synchronous set"},
		{"refuses an instance outside the synchronous set", "pg-3",
			[]peer{{"pg-3", 500}, {"pg-1", 100}, {"pg-2", 100}}, "pg-0", sync2, 0, 0, false, "not in the synchronous set"},
		{"promotes anyone at least as far as the old primary, which is back", "pg-2",
			[]peer{{"pg-2", 300}, {"pg-0", 300}}, "pg-0", sync2, 0, 0, true, ""},
		{"promotes the old primary itself when it is the most advanced", "pg-0",
			[]peer{{"pg-2", 200}, {"pg-0", 300}}, "pg-0", sync2, 0, 0, true, ""},
		{"under a synchronous set, promotes a replica that proves the quorum over an old primary further ahead", "pg-1",
			[]peer{{"pg-1", 200}, {"pg-2", 150}, {"pg-0", 300}}, "pg-0", sync2, 0, 0, true, ""},
		{"the old primary further ahead defers to a replica that proves the quorum", "pg-0",
			[]peer{{"pg-1", 200}, {"pg-2", 150}, {"pg-0", 300}}, "pg-0", sync2, 0, 0, false, "pg-1 proves it holds every acknowledged commit"},
		{"refuses a replica the old primary is ahead of when it cannot prove the quorum", "pg-2",
			[]peer{{"pg-2", 200}, {"pg-0", 300}}, "pg-0", sync2, 0, 0, false, "pg-0, the old primary, is further ahead"},
		{"asynchronously, refuses a replica the old primary is ahead of", "pg-1",
			[]peer{{"pg-1", 200}, {"pg-0", 300}}, "pg-0", syncSet{}, 0, 0, false, "pg-0 is further ahead"},
		{"ANY 2 of three: hearing from two proves it", "pg-1",
			[]peer{{"pg-1", 300}, {"pg-3", 200}}, "pg-0", syncSet{Standbys: []string{"pg-1", "pg-2", "pg-3"}, Count: 2}, 0, 0, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, reason := electable(c.candidate, c.known, c.old, c.recorded, c.maxLag, c.primary)
			if got != c.want || !strings.Contains(reason, c.reason) {
				t.Fatalf("electable = %v, %q; want %v, containing %q", got, reason, c.want, c.reason)
			}
		})
	}
}

func TestSyncStepKeepsTheRecordCoveringPostgres(t *testing.T) {
	a := syncSet{Standbys: []string{"pg-1"}, Count: 1}
	ab := syncSet{Standbys: []string{"pg-1", "pg-2"}, Count: 1}
	b := syncSet{Standbys: []string{"pg-2"}, Count: 1}
	cases := []struct {
		name                       string
		recorded, applied, desired syncSet
	}{
		{"grows from asynchronous", syncSet{}, syncSet{}, a},
		{"adds a standby", a, a, ab},
		{"swaps a standby", a, a, b},
		{"drops to asynchronous", ab, ab, syncSet{}},
		{"narrows", ab, ab, b},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, app := c.recorded, c.applied
			for i := 0; i < 5; i++ {
				r, p := syncStep(rec, app, c.desired)
				if r == nil && p == nil {
					if !rec.equal(c.desired) || !app.equal(c.desired) {
						t.Fatalf("stopped at record %v, applied %v; want %v", rec, app, c.desired)
					}
					return
				}
				if r != nil {
					rec = *r
				}
				if p != nil {
					app = *p
				}
				if !rec.covers(app) {
					t.Fatalf("step %d: record %v does not cover postgres's %v", i, rec, app)
				}
			}
			t.Fatalf("no fixed point after 5 steps: record %v, applied %v", rec, app)
		})
	}
}

func TestStandbyNamesAndStrictMode(t *testing.T) {
	if got := desiredSyncSet(true, false, 1, nil, []string{"pg-1"}); !got.async() {
		t.Errorf("non-strict with no streaming replica = %v, want asynchronous", got)
	}
	got := desiredSyncSet(true, true, 1, nil, []string{"pg-2", "pg-1"})
	if want := `ANY 1 ("pg-1", "pg-2")`; got.standbyNames() != want {
		t.Errorf("strict with no streaming replica = %q, want %q", got.standbyNames(), want)
	}
	if got := desiredSyncSet(true, true, 1, nil, nil); got.standbyNames() != "ANY 1 (*)" {
		t.Errorf("strict alone = %q, want ANY 1 (*)", got.standbyNames())
	}
	if v, err := parseLSN("16/B374D848"); err != nil || formatLSN(v) != "16/B374D848" {
		t.Errorf("LSN round trip: %v %v", formatLSN(v), err)
	}
}

func TestRenderConfKeepsTheManagersSettings(t *testing.T) {
	got := renderConf(confInput{
		Parameters: map[string]string{"port": "1", "work_mem": "8MB", "log_line_prefix": "it's"},
		Port:       5432, SocketDir: "/run/pg", Instance: "pg-1",
		Follow:  conninfo("10.0.0.2", 5432, "pg-1", "/run/pg/pgpass", nil),
		SyncSet: syncSet{Standbys: []string{"pg-0"}, Count: 1},
	})
	for _, want := range []string{
		"work_mem = '8MB'\n", "log_line_prefix = 'it''s'\n", "port = '5432'\n", "wal_log_hints = 'on'\n",
		`synchronous_standby_names = 'ANY 1 ("pg-0")'`,
		`primary_conninfo = 'host=''10.0.0.2'' port=5432 user=''_crunchyrepl'' application_name=''pg-1''`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lookout.conf lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "port = '1'") {
		t.Errorf("a Parameters entry overrode the manager's port:\n%s", got)
	}
	if slotName("pg-1.x") != "pg_1_x" {
		t.Errorf("slotName(pg-1.x) = %q", slotName("pg-1.x"))
	}
}
