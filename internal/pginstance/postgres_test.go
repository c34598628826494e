package pginstance

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The steps the manager takes with a real PostgreSQL 15, without
// Kubernetes: initdb, a clone that streams through its slot, promotion of
// the clone, and the old primary rewound to follow it.
func TestPostgresInitCloneStreamPromoteRewind(t *testing.T) {
	bin := "/usr/lib/postgresql/15/bin"
	if _, err := os.Stat(bin + "/postgres"); err != nil {
		t.Fatalf("PostgreSQL 15 is not installed (.ci/run installs postgresql-15): %v", err)
	}
	dir, err := os.MkdirTemp("", "lookout-pginstance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rn, err := newRunner(bin, "postgres", []string{"LC_ALL=C"}, newReaper(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	newPG := func(name string, port int) *postgres {
		p := &postgres{pgdata: filepath.Join(dir, name, "pg15"), socketDir: filepath.Join(dir, name+"-run"), port: port, rn: rn}
		if err := p.prepare(filepath.Join(dir, "no-tls"), "secret"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.stop(syscall.SIGQUIT, 0) })
		return p
	}
	a, b := newPG("a", 25432), newPG("b", 25433)
	conf := func(p *postgres, name string, follow *postgres) confInput {
		in := confInput{Port: p.port, SocketDir: p.socketDir, Instance: name, Parameters: map[string]string{"shared_buffers": "16MB"}}
		if follow != nil {
			in.Follow = conninfo("127.0.0.1", follow.port, name, p.passfile, nil)
			in.SlotName = slotName(name)
		}
		return in
	}
	wait := func(p *postgres) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			c, err := p.connect(ctx)
			if err == nil {
				c.Close(ctx)
				return
			}
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := a.initdb(); err != nil {
		t.Fatal(err)
	}
	if err := a.writeConfig(conf(a, "a", nil), false); err != nil {
		t.Fatal(err)
	}
	if err := a.start(); err != nil {
		t.Fatal(err)
	}
	wait(a)
	ca, err := a.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if err := ensureReplicationUser(ctx, ca, "secret"); err != nil {
		t.Fatal(err)
	}
	if err := ensureSlots(ctx, ca, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Exec(ctx, "CREATE TABLE t (id int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := b.basebackup("127.0.0.1", a.port, "b"); err != nil {
		t.Fatal(err)
	}
	if err := b.writeConfig(conf(b, "b", a), true); err != nil {
		t.Fatal(err)
	}
	if err := b.start(); err != nil {
		t.Fatal(err)
	}
	wait(b)
	cb, err := b.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cb.Close(ctx) }()
	waitObs := func(what string, c interface{}, cond func(observation) bool) observation {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			conn := cb
			if c == "a" {
				conn = ca
			}
			o, err := observe(ctx, conn)
			if err == nil && cond(o) {
				return o
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v %v", what, o, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitObs("b streams", "b", func(o observation) bool { return o.InRecovery && o.Receiving })
	oa := waitObs("a sees b streaming", "a", func(o observation) bool { return len(o.Replicas) == 1 && o.Replicas[0].State == "streaming" })
	if oa.Replicas[0].Instance != "b" || oa.Timeline != 1 {
		t.Fatalf("primary observation %+v", oa)
	}

	// Promote b; a (still running as primary, its own timeline) is fenced,
	// writes one more row b never sees, and must be rewound to follow.
	if _, err := ca.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	waitObs("b caught up", "b", func(o observation) bool { return o.position() >= oa.position() })
	if err := b.writeConfig(conf(b, "b", nil), true); err != nil {
		t.Fatal(err)
	}
	b.reload()
	waitObs("b stops streaming", "b", func(o observation) bool { return !o.Receiving })
	var ok bool
	if err := cb.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&ok); err != nil || !ok {
		t.Fatalf("promote: %v %v", ok, err)
	}
	// As the manager does after a promotion: the checkpoint writes the new
	// timeline into b's control file, which pg_rewind reads; without it a
	// fast machine rewinds before the end-of-recovery checkpoint is done and
	// finds both on the same timeline.
	if _, err := cb.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Exec(ctx, "INSERT INTO t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	ca.Close(ctx)
	a.stop(syscall.SIGQUIT, 0)
	if err := ensureReplicationUser(ctx, cb, "secret"); err != nil {
		t.Fatal(err)
	}
	if err := ensureSlots(ctx, cb, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	state, err := a.clusterState()
	if err != nil || !wasPrimary(state) {
		t.Fatalf("a's cluster state %q (%v), want a primary's", state, err)
	}
	out, err := a.rewind("127.0.0.1", b.port, "a")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pg_rewind: %s", lastLines(out, 3))
	if err := a.writeConfig(conf(a, "a", b), true); err != nil {
		t.Fatal(err)
	}
	if err := a.start(); err != nil {
		t.Fatal(err)
	}
	wait(a)
	ca, err = a.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := waitObs("a follows b on timeline 2", "a", func(o observation) bool { return o.InRecovery && o.Receiving && o.Timeline == 2 })
	var n int
	if err := ca.QueryRow(ctx, "SELECT count(*) FROM t WHERE id = 3").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the row written on a's old timeline after the promotion survived the rewind: %d %v", n, err)
	}
	t.Logf("a follows b: %+v", o)
}
