package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
)

// The pgupgrade scenario: the major upgrade 15 → 17 of a 3-instance
// synchronous cluster holding pgbench's tables at a scale (-s 70 is about
// 1 GB), with the writer of the pg scenario throughout; each run is a new
// cluster. Downtime is the primary's (shutdown → 17 accepting writes), as
// it reports it; the writer's longest stretch without an acknowledged write
// is what a client saw.

// UpgradeRun is one major upgrade. Durations are seconds.
type UpgradeRun struct {
	At            string  `json:"at"`
	LoadAvg1      float64 `json:"loadAvg1"`
	DatabaseBytes int64   `json:"databaseBytes"`
	Downtime      float64 `json:"downtimeSeconds"`
	ClientGap     float64 `json:"clientGapSeconds"`
	Total         float64 `json:"totalSeconds"`
	Acked         int     `json:"acked"`
	Lost          int     `json:"lost"`
	Step          string  `json:"step"`
	Error         string  `json:"error,omitempty"`
}

// UpgradeResult is what the pgupgrade scenario measured.
type UpgradeResult struct {
	Scenario    string       `json:"scenario"`
	Description string       `json:"description"`
	Commit      string       `json:"commit"`
	Date        string       `json:"date"`
	CPUs        int          `json:"cpus"`
	Runs        []UpgradeRun `json:"runs"`
	// Medians and maxima over the runs.
	DowntimeMedian  float64 `json:"downtimeMedianSeconds"`
	DowntimeMax     float64 `json:"downtimeMaxSeconds"`
	ClientGapMedian float64 `json:"clientGapMedianSeconds"`
	TotalMedian     float64 `json:"totalMedianSeconds"`
	Error           string  `json:"error,omitempty"`
}

func runUpgradeScenario(ctx context.Context, runs, scale int, out, bin, commit string) error {
	res := UpgradeResult{Scenario: "pgupgrade", Commit: commit, Date: time.Now().UTC().Format(time.RFC3339), CPUs: numCPU(),
		Description: fmt.Sprintf("3 instances, synchronous_mode, pgbench -i -s %d, a writer every 20 ms; major upgrade 15 → 17 (pg_upgrade --check, then --link, replicas cloned afresh)", scale)}
	env, err := pgharness.Start(ctx, os.Stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	for i := range runs {
		if ctx.Err() != nil {
			break
		}
		r := &pgharness.Runner{Log: logf}
		var run UpgradeRun
		err := r.Try(func() { run = upgradeRun(ctx, r, env, bin, scale) })
		r.Close()
		if err != nil {
			res.Error = fmt.Sprintf("run %d: %v", i+1, err)
			logf("pgupgrade: %s", res.Error)
			break
		}
		res.Runs = append(res.Runs, run)
		logf("pgupgrade: %d/%d %s: downtime %.2fs, client gap %.2fs, total %.1fs, %d MB, load %.1f, %d acked, %d lost",
			i+1, runs, run.Step, run.Downtime, run.ClientGap, run.Total, run.DatabaseBytes>>20, run.LoadAvg1, run.Acked, run.Lost)
	}
	var down, gap, total []float64
	for _, r := range res.Runs {
		down, gap, total = append(down, r.Downtime), append(gap, r.ClientGap), append(total, r.Total)
	}
	if len(down) > 0 {
		res.DowntimeMedian, res.DowntimeMax = rank(down, 0.5), slices.Max(down)
		res.ClientGapMedian, res.TotalMedian = rank(gap, 0.5), rank(total, 0.5)
	}
	logf("pgupgrade: %d runs: downtime median %.2fs max %.2fs; client gap median %.2fs; total median %.1fs",
		len(res.Runs), res.DowntimeMedian, res.DowntimeMax, res.ClientGapMedian, res.TotalMedian)
	if out == "" {
		return nil
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

func upgradeRun(ctx context.Context, r *pgharness.Runner, env *pgharness.Env, bin string, scale int) UpgradeRun {
	c := pgharness.NewCluster(r, env, pgharness.Command{Path: bin}, 3, pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432,
		SynchronousMode: true, SynchronousNodeCount: 1, LeaseDuration: pgcontract.Duration{Duration: 5 * time.Second}})
	primary := c.WaitHealthy(3 * time.Minute)
	logf("pgupgrade: pgbench -i -s %d on %s", scale, primary)
	init := exec.CommandContext(ctx, filepath.Join(env.BinDir, "pgbench"), "-i", "-s", strconv.Itoa(scale), "-q", c.SuperuserConnString(primary, "app"))
	if out, err := init.CombinedOutput(); err != nil {
		r.Fatalf("pgbench -i: %v: %s", err, out)
	}
	conn := c.Connect(c.SuperuserConnString(primary, "app"))
	var size int64
	if err := conn.QueryRow(ctx, `SELECT pg_database_size('app')`).Scan(&size); err != nil {
		r.Fatalf("database size: %v", err)
	}
	conn.Close(ctx)
	c.WaitHealthy(5 * time.Minute) // the replicas caught up with the load
	c.StartWriter()
	run := UpgradeRun{At: time.Now().UTC().Format(time.RFC3339), LoadAvg1: loadAvg1(), DatabaseBytes: size}
	res := c.MajorUpgrade(17, 15*time.Minute)
	c.StopWriters()
	run.Step, run.Error = res.Step, res.Error
	run.Downtime, run.Total = res.Downtime.Seconds(), res.Total.Seconds()
	run.Acked, run.Lost = res.Report.Acked, len(res.Report.Lost)
	run.ClientGap = longestGap(c)
	if res.Step != pgcontract.UpgradeUpgraded {
		r.Fatalf("the upgrade ended %s: %s", res.Step, res.Error)
	}
	if !strings.HasPrefix(c.Insts[primary].PGData(), filepath.Join(c.Insts[primary].Dir, "data", "pg17")) {
		r.Fatalf("the primary's data is at %s after the upgrade", c.Insts[primary].PGData())
	}
	return run
}

// longestGap is the longest time between two acknowledged writes of the
// main writer.
func longestGap(c *pgharness.Cluster) float64 {
	var last time.Time
	var gap time.Duration
	for _, rec := range c.Records() {
		if rec.Outcome != pgwriter.Acked {
			continue
		}
		if !last.IsZero() && rec.End.Sub(last) > gap {
			gap = rec.End.Sub(last)
		}
		last = rec.End
	}
	return gap.Seconds()
}
