// Command tools builds (or finds cached) the binaries the tests and the demo
// need and prints their paths. Usage: go run ./hack/tools [controlplane] [prometheus] [alertmanager (and amtool)] [test-only] [controller-gen] [helm] [node] [thanos] [postgres17] [postgres-minors]
// (default: controlplane prometheus alertmanager test-only helm). postgres17 and
// postgres-minors are not built from Go modules: they install PostgreSQL 17
// (postgres17.go) and unpack the archive's 15.x releases. `make demo` asks only for
// what the demo runs; `make tools` (and so `make test`) for everything.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/lookout-operator/lookout/internal/controlplane"
)

// toolSets are the names the command takes and the binaries each stands for.
var toolSets = map[string][]controlplane.Tool{
	"controlplane": controlplane.ControlPlaneTools,
	"prometheus":   {controlplane.Prometheus},
	"alertmanager": {controlplane.Alertmanager, controlplane.Amtool},
	// What only the tests run: promtool (rule unit tests) and the older
	// Prometheus and Alertmanager the version-gating tests start.
	"test-only":      {controlplane.Promtool, controlplane.PrometheusLTS, controlplane.AlertmanagerOld},
	"controller-gen": {controlplane.ControllerGen},
	"helm":           {controlplane.Helm},
	"node":           {controlplane.Kubelet},
	"thanos":         {controlplane.Thanos},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sets := toolSets
	args := os.Args[1:]
	if len(args) == 0 {
		args = []string{"controlplane", "prometheus", "alertmanager", "test-only", "helm"}
	}
	var tools []controlplane.Tool
	postgres17 := false
	for _, a := range args {
		if a == "postgres-minors" {
			postgresMinors(ctx)
			continue
		}
		if a == "postgres17" {
			postgres17 = true
			continue
		}
		set, ok := sets[a]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown tool set %q (want controlplane, prometheus, alertmanager, test-only, controller-gen, helm, node, thanos, postgres17 or postgres-minors)\n", a)
			os.Exit(2)
		}
		tools = append(tools, set...)
	}
	if postgres17 {
		p, err := ensurePostgres17(ctx, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("postgresql-17\t%s\n", p)
	}
	if len(tools) > 0 {
		fmt.Fprintln(os.Stderr, coldEstimate(tools))
	}
	for _, t := range tools {
		p, err := t.Ensure(ctx, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s\t%s\n", t.Name, p)
	}
}

// postgresMinors fetches (or finds cached) every PostgreSQL 15 release the
// package archive lists and prints each one's bin directory.
func postgresMinors(ctx context.Context) {
	minors, err := controlplane.PostgresMinors(ctx, 15, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, m := range minors {
		fmt.Printf("postgres-%s\t%s\n", m.Minor, m.BinDir())
	}
}

// coldEstimate says, before anything is built, how long building these binaries takes
// on 2 cores from nothing, and how much of that is left with what is cached already:
// a first run is mostly this wait, and a newcomer should know it at the start.
func coldEstimate(tools []controlplane.Tool) string {
	var all, left time.Duration
	var missing []string
	for _, t := range tools {
		d := estimate(t)
		all += d
		if _, err := os.Stat(t.Path()); err != nil {
			left += d
			missing = append(missing, t.Name)
		}
	}
	if len(missing) == 0 {
		return fmt.Sprintf("tools: all %d binaries are cached in %s (a cold first run builds them from Go modules: about %s on 2 cores)",
			len(tools), controlplane.CacheDir(), minutes(all))
	}
	return fmt.Sprintf("tools: building %s from Go modules, about %s on 2 cores (once; cached afterwards in %s)",
		strings.Join(missing, ", "), minutes(left), controlplane.CacheDir())
}

// estimate parses a Tool's Estimate ("6 min", "20 s").
func estimate(t controlplane.Tool) time.Duration {
	s := strings.NewReplacer(" min", "m", " s", "s").Replace(t.Estimate)
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0
	}
	return d
}

func minutes(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
}
