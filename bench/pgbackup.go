package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
	"github.com/lookout-operator/lookout/internal/pginstance"
)

// The pg-backup scenario: backup and restore throughput and archive lag of
// a one-instance cluster archiving to the harness's S3 server (gofakes3 in
// memory behind TLS on the bridge address). Each run fills a database with
// pgbench -i at -pg-backup-scale, takes a full backup through the
// primary's manager (as a backup Job does), restores it into a new
// one-instance cluster (pgbackrest restore, WAL replay, promotion) and
// measures the archive lag under a trickle for -pg-lag. It prints the
// figures; docs/benchmarks.md quotes them.

type pgBackupFlags struct {
	scale, runs int
	lag         time.Duration
}

// pgBackupRun is one run's figures.
type pgBackupRun struct {
	dbBytes                 int64
	backup, restore         time.Duration
	repoBytes               int64
	lagP50, lagP99, lagMax  time.Duration
	lagCommits, lagSegments int
	loadBackup, loadRestore float64
}

func runPGBackup(ctx context.Context, f pgBackupFlags, bin string) error {
	env, err := pgharness.Start(ctx, os.Stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	pgbench, err := exec.LookPath(filepath.Join(env.BinDir, "pgbench"))
	if err != nil {
		return err
	}
	var runs []pgBackupRun
	for i := 0; i < f.runs && ctx.Err() == nil; i++ {
		r := &pgharness.Runner{Log: logf}
		var run pgBackupRun
		err := r.Try(func() { run = pgBackupOnce(ctx, r, env, bin, pgbench, f) })
		r.Close()
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		runs = append(runs, run)
		mb := float64(run.dbBytes) / 1e6
		logf("pg-backup: run %d: database %.0f MB; full backup %.1fs (%.1f MB/s, %.0f MB in S3, load %.1f); restore to a ready primary %.1fs (%.1f MB/s, load %.1f); archive lag over %d commits (%d segments): p50 %.1fs p99 %.1fs max %.1fs",
			i+1, mb, run.backup.Seconds(), mb/run.backup.Seconds(), float64(run.repoBytes)/1e6, run.loadBackup,
			run.restore.Seconds(), mb/run.restore.Seconds(), run.loadRestore, run.lagCommits, run.lagSegments,
			run.lagP50.Seconds(), run.lagP99.Seconds(), run.lagMax.Seconds())
	}
	return nil
}

func pgBackupOnce(ctx context.Context, r *pgharness.Runner, env *pgharness.Env, bin, pgbench string, f pgBackupFlags) pgBackupRun {
	var run pgBackupRun
	s3 := pgharness.StartS3(r, env.Network.HostIP)
	repo := s3.Repo("repo1", "/pgbackrest/bench-"+pgharness.RandomString(6))
	cfg := pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432, LeaseDuration: pgcontract.Duration{Duration: 5 * time.Second},
		Backups: &pgcontract.Backups{Stanza: "db", Repos: []pgcontract.Repo{repo}}}
	cmd := pgharness.Command{Path: bin}
	c := pgharness.NewCluster(r, env, cmd, 1, cfg, s3.Credentials("repo1"))
	primary := c.WaitHealthy(3 * time.Minute)
	c.WaitFor(2*time.Minute, "the stanza", func() (bool, string) {
		st, err := c.Status(primary)
		if err != nil || st.Archive == nil {
			return false, fmt.Sprint(err)
		}
		return st.Archive.StanzaReady, st.Archive.StanzaError
	})
	// The application database exists once a connection to it succeeds
	// (the primary creates it shortly after it starts).
	conn := c.Connect(c.SuperuserConnString(primary, "app"))
	logf("pg-backup: pgbench -i -s %d", f.scale)
	if out, err := exec.CommandContext(ctx, pgbench, "-i", "-q", "-s", fmt.Sprint(f.scale), c.SuperuserConnString(primary, "app")).CombinedOutput(); err != nil {
		r.Fatalf("pgbench -i: %v: %s", err, out)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_database_size('app')`).Scan(&run.dbBytes); err != nil {
		r.Fatalf("database size: %v", err)
	}
	// pgbench -i wrote about as much WAL as data: the backup starts once it
	// is archived (the backup waits 60 s for its last segment, not for a
	// backlog of hundreds).
	var seg string
	if err := conn.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&seg); err != nil {
		r.Fatalf("current WAL segment: %v", err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_switch_wal()`); err != nil {
		r.Fatalf("switch WAL: %v", err)
	}
	caughtUp := time.Now()
	c.WaitFor(30*time.Minute, "the bulk load's WAL archived", func() (bool, string) {
		var last *string
		if err := conn.QueryRow(ctx, `SELECT last_archived_wal FROM pg_stat_archiver`).Scan(&last); err != nil || last == nil {
			return false, fmt.Sprint(err)
		}
		return *last >= seg, *last + " < " + seg
	})
	logf("pg-backup: the bulk load's WAL (up to %s) archived %.1fs after it ended", seg, time.Since(caughtUp).Seconds())
	conn.Close(ctx)

	run.loadBackup = loadAvg1()
	res, err := pginstance.RequestBackup(ctx, c.ManagerURL(primary), pgcontract.BackupRequest{Repo: "repo1", Type: pgcontract.BackupFull})
	if err != nil || res.Error != "" {
		r.Fatalf("backup: %v %s", err, res.Error)
	}
	run.backup, run.repoBytes = res.Duration.Duration, res.RepoSize

	rcfg := cfg
	rcfg.Backups = &pgcontract.Backups{Stanza: "db", Repos: []pgcontract.Repo{s3.Repo("repo1", "/pgbackrest/bench-restored-"+pgharness.RandomString(6))}}
	rcfg.Restore = &pgcontract.Restore{Stanza: "db", Repo: repo}
	run.loadRestore = loadAvg1()
	start := time.Now()
	restored := pgharness.NewCluster(r, env, cmd, 1, rcfg, s3.Credentials("repo1"))
	restored.WaitHealthy(30 * time.Minute)
	run.restore = time.Since(start)

	lags, segs := c.ArchiveLag(primary, f.lag)
	run.lagCommits, run.lagSegments = len(lags), segs
	run.lagP50, run.lagP99, run.lagMax = pgharness.Quantile(lags, 0.5), pgharness.Quantile(lags, 0.99), pgharness.Quantile(lags, 1)
	return run
}
