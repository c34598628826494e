// Command bench is Lookout's scale harness (`make bench`). It starts a local
// control plane (etcd + kube-apiserver, no kube-controller-manager: no pods
// are needed), fills it with monitors and unrelated noise, then starts the
// operator binary as its own process and measures its cold start, the
// latency of one ServiceMonitor change, its memory, CPU and API traffic, and
// whether it stays silent while nothing changes.
//
//	go run ./bench -scenario all -out docs/bench-results.json
//
// The results are printed as a markdown table, written as JSON (-out,
// merged by scenario with the results already there) and rendered into the
// "Scale harness (make bench)" section of docs/benchmarks.md (-doc). The
// operator's CPU and heap profiles of each phase go to -profiles, with the
// top 15 of each printed and written next to them (top.txt).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/localpod"
)

type flags struct {
	scenario string
	out      string
	doc      string
	profiles string
	idle     time.Duration
	changes  int
	workers  int
	keep     bool
	report   bool
	hold     bool
	pg       pgFlags
	upgrade  struct {
		runs, scale int
		out         string
	}
	pgBackup pgBackupFlags
}

func main() {
	// Re-executed helper: a container of the pgminor scenario's pods in its
	// mount namespace.
	localpod.MaybeMountExec()
	var f flags
	flag.StringVar(&f.scenario, "scenario", "all", "s1, s2, all (s1 and s2), pg (PostgreSQL faults, as root), pgminor (rolling minor upgrades under load through the operator, as root), pgupgrade (major upgrade 15 → 17, as root) or pg-backup (backup and restore throughput, archive lag, as root)")
	flag.StringVar(&f.out, "out", "docs/bench-results.json", "JSON results (merged by scenario); empty: do not write")
	flag.StringVar(&f.doc, "doc", "docs/benchmarks.md", "markdown file whose \"Scale harness (make bench)\" section is rewritten; empty: do not write")
	flag.StringVar(&f.profiles, "profiles", "bench/out/profiles", "directory for the operator's CPU and heap profiles, one subdirectory per scenario (the operator serves pprof on a loopback port); empty: do not profile")
	flag.DurationVar(&f.idle, "idle", 10*time.Minute, "idle window after the changes, in which the operator should write nothing")
	flag.IntVar(&f.changes, "changes", 200, "sequential ServiceMonitor creations timed in S1")
	flag.IntVar(&f.workers, "workers", 32, "goroutines creating the setup objects")
	flag.BoolVar(&f.keep, "keep-logs", true, "keep the operator logs under _output/bench")
	flag.BoolVar(&f.report, "report-only", false, "run nothing: print the table from -out and rewrite the -doc section")
	flag.BoolVar(&f.hold, "hold", false, "create the scenario's objects, print the kubeconfig, and keep the control plane until interrupted, without starting the operator (to run it by hand)")
	flag.IntVar(&f.pg.kills, "pg-kills", 20, "pg: SIGKILL runs")
	flag.IntVar(&f.pg.runs, "pg-runs", 8, "pg: runs of each other fault (SIGSTOP, pod deleted, network cut, primary + replica killed)")
	flag.IntVar(&f.pg.switchovers, "pg-switchovers", 5, "pg: planned switchovers")
	flag.DurationVar(&f.pg.stop, "pg-stop", 30*time.Second, "pg: how long a SIGSTOP holds the primary at least")
	flag.DurationVar(&f.pg.lease, "pg-lease", 5*time.Second, "pg: the primary's lease (leaderLeaseDurationSeconds)")
	flag.StringVar(&f.pg.out, "pg-out", "docs/bench-pg-results.json", "pg: JSON results; empty: do not write")
	flag.IntVar(&f.pg.minorRuns, "pgminor-runs", 3, "pgminor: rolling minor upgrades, each of a new cluster")
	flag.BoolVar(&f.pg.pooler, "pg-pooler", false, "pg: the writer goes through a PgBouncer that each switchover pauses and resumes")
	flag.IntVar(&f.upgrade.runs, "pgupgrade-runs", 3, "pgupgrade: upgrades, each of a new cluster")
	flag.IntVar(&f.upgrade.scale, "pgupgrade-scale", 70, "pgupgrade: pgbench -i scale of the data (70: about 1 GB)")
	flag.StringVar(&f.upgrade.out, "pgupgrade-out", "docs/bench-pgupgrade-results.json", "pgupgrade: JSON results; empty: do not write")
	flag.IntVar(&f.pgBackup.scale, "pg-backup-scale", 66, "pg-backup: pgbench -i scale of the database backed up and restored (66: about 1 GB)")
	flag.IntVar(&f.pgBackup.runs, "pg-backup-runs", 3, "pg-backup: runs")
	flag.DurationVar(&f.pgBackup.lag, "pg-lag", time.Minute, "pg-backup: how long each run measures the archive lag under a trickle of writes")
	flag.Parse()
	if err := run(f); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(f flags) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var scenarios []scenario
	switch f.scenario {
	case "s1":
		scenarios = []scenario{scenarioS1()}
	case "s2":
		scenarios = []scenario{scenarioS2()}
	case "all":
		scenarios = []scenario{scenarioS2(), scenarioS1()}
	case "pg", "pgminor", "pgupgrade", "pg-backup":
	default:
		return fmt.Errorf("-scenario: want s1, s2, all, pg, pgminor, pgupgrade or pg-backup, got %q", f.scenario)
	}

	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	outDir := filepath.Join(root, "_output", "bench")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	commit := gitOutput(root, "rev-parse", "HEAD")
	if gitOutput(root, "status", "--porcelain", "--untracked-files=no") != "" {
		commit += "-dirty"
	}

	bin := filepath.Join(outDir, "bin", "lookout")
	if !f.report {
		logf("building lookout")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lookout")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/lookout: %v\n%s", err, out)
		}
	}

	if f.scenario == "pg" {
		return runPGScenario(ctx, f, root, bin, commit)
	}
	if f.scenario == "pgminor" {
		return runPGMinorScenario(ctx, f, root, bin)
	}
	if f.scenario == "pgupgrade" {
		out := ""
		if f.upgrade.out != "" {
			out = absPath(root, f.upgrade.out)
		}
		return runUpgradeScenario(ctx, f.upgrade.runs, f.upgrade.scale, out, bin, commit)
	}
	if f.scenario == "pg-backup" {
		return runPGBackup(ctx, f.pgBackup, bin)
	}

	var results []Result
	if f.report {
		scenarios = nil
	}
	for _, sc := range scenarios {
		dir := filepath.Join(outDir, sc.Name)
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		r, err := runScenario(ctx, sc, f, root, bin, dir)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		r.Commit, r.Date = commit, time.Now().UTC().Format(time.RFC3339)
		results = append(results, r)
		if !f.keep {
			_ = os.RemoveAll(dir)
		}
	}

	all := results
	if f.out != "" {
		path := absPath(root, f.out)
		all, err = mergeJSON(path, results)
		if err != nil {
			return err
		}
		logf("wrote %s", path)
	}
	table := markdownTable(all)
	fmt.Println()
	fmt.Println(table)
	if f.doc != "" {
		path := absPath(root, f.doc)
		if err := writeDocSection(path, all); err != nil {
			return err
		}
		logf("updated %s", path)
	}
	return nil
}

// runPGScenario runs the pg scenario (or, with -report-only, reads its
// JSON), writes its JSON and rewrites its section of -doc.
func runPGScenario(ctx context.Context, f flags, root, bin, commit string) error {
	var res PGResult
	var err error
	if f.report {
		if res, err = readPGJSON(absPath(root, f.pg.out)); err != nil {
			return err
		}
	} else {
		res, err = runPG(ctx, f.pg, bin)
		if err != nil {
			return fmt.Errorf("scenario pg: %w", err)
		}
		res.Commit, res.Date = commit, time.Now().UTC().Format(time.RFC3339)
		if f.pg.out != "" {
			path := absPath(root, f.pg.out)
			if err := writePGJSON(path, res); err != nil {
				return err
			}
			logf("wrote %s", path)
		}
	}
	fmt.Println()
	fmt.Println(pgTable(res))
	if f.doc != "" {
		path := absPath(root, f.doc)
		if err := replaceDocSection(path, pgDocHeading, pgDocEnd, pgDocSection(res)); err != nil {
			return err
		}
		logf("updated %s", path)
	}
	if res.Error != "" {
		return fmt.Errorf("scenario pg stopped early: %s", res.Error)
	}
	return nil
}

func absPath(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

func gitOutput(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

var benchStart = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", time.Since(benchStart).Seconds(), fmt.Sprintf(format, args...))
}
