package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/scheme"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// The pgminor scenario: the rolling minor upgrade of test/pge2e, through
// the operator binary, kube-controller-manager's StatefulSet controller and
// pods run by internal/localpod, -pgminor-runs times, each a new
// 3-instance cluster (PGO's quickstart with a PgBouncer) on the archive's
// older postgresql-15 moved to its newer one under pgbench and the id-tagged
// writer through the pooler. Printed as a markdown table for
// docs/benchmarks.md.

// pgMinorRun is one upgrade as the clients and the status saw it.
type pgMinorRun struct {
	took, pause          time.Duration
	processed, failed    int
	acked, notAcked      int
	lost                 int
	minReady             int
	load                 float64
	from, to, oldP, newP string
	err                  error
}

func runPGMinorScenario(ctx context.Context, f flags, root, bin string) error {
	ctrllog.SetLogger(logr.Discard()) // the clients' logs; the operator logs to its own file
	minors, err := controlplane.PostgresMinors(ctx, 15, os.Stderr)
	if err != nil {
		return err
	}
	if len(minors) < 2 {
		return fmt.Errorf("the package archive lists %d release(s) of postgresql-15; the minor upgrade needs two (apt-get update)", len(minors))
	}
	from, to := minors[0], minors[len(minors)-1]
	work, err := os.MkdirTemp("", "lookout-bench-pgminor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := os.Chmod(work, 0o755); err != nil {
		return err
	}
	// The instance pods run lookout as their own user: a copy they reach.
	lookout := filepath.Join(work, "lookout")
	if err := copyFile(bin, lookout); err != nil {
		return err
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{Log: os.Stderr, CRDDir: filepath.Join(root, controlplane.MonitoringCRDDir)})
	if err != nil {
		return err
	}
	defer cp.Stop()
	if _, err := controlplane.InstallCRDs(ctx, cp.RESTConfig, filepath.Join(root, controlplane.PostgresCRDDir)); err != nil {
		return err
	}
	c, err := client.New(cp.RESTConfig, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	network, err := testhost.NewNetwork()
	if err != nil {
		return err
	}
	defer network.Close()
	node, err := devenv.RegisterNode(ctx, cp, network.HostIP)
	if err != nil {
		return err
	}
	defer node.Stop()
	op, err := devenv.StartOperator(ctx, lookout, cp.KubeconfigPath, filepath.Join(work, "operator.log"))
	if err != nil {
		return err
	}
	defer op.Stop()
	manifest, err := os.ReadFile(filepath.Join(root, "examples-postgres", "hippo.yaml"))
	if err != nil {
		return err
	}

	var runs []pgMinorRun
	for i := range f.pg.minorRuns {
		r := pgMinorUpgrade(ctx, c, cp, network, lookout, manifest, work, i, from, to)
		logf("pgminor run %d: %s → %s in %s, pgbench %d processed %d failed, writes %d acked %d not acked %d lost, pause %s, load %.1f; err %v",
			i+1, r.from, r.to, r.took.Round(time.Second), r.processed, r.failed, r.acked, r.notAcked, r.lost, r.pause.Round(time.Millisecond), r.load, r.err)
		runs = append(runs, r)
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Print(pgMinorTable(runs))
	for _, r := range runs {
		if r.err != nil {
			return fmt.Errorf("a run failed: %w (operator log: %s)", r.err, op.LogPath)
		}
	}
	return nil
}

// pgMinorUpgrade runs upgrade i in a namespace of its own.
func pgMinorUpgrade(ctx context.Context, c client.Client, cp *controlplane.ControlPlane, network *testhost.Network, lookout string, manifest []byte,
	work string, i int, from, to controlplane.PostgresMinor) (r pgMinorRun) {
	r.from, r.to = from.Minor, to.Minor
	ns := fmt.Sprintf("pgminor-%d", i+1)
	if r.err = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); r.err != nil {
		return r
	}
	dir := filepath.Join(work, ns)
	pods, err := devenv.RunPostgresPods(ctx, c, cp, devenv.Binaries{Lookout: lookout}, network, ns, "hippo", dir)
	if err != nil {
		r.err = err
		return r
	}
	defer pods.Stop()
	for _, m := range []controlplane.PostgresMinor{from, to} {
		placed, err := m.Shared()
		if err != nil {
			r.err = err
			return r
		}
		pods.RunImageFrom("lookout-postgres:"+m.Minor, placed.BinDir())
	}
	var hippo postgresv1beta1.PostgresCluster
	if r.err = yaml.Unmarshal(manifest, &hippo); r.err != nil {
		return r
	}
	hippo.Namespace = ns
	hippo.Spec.Image = "lookout-postgres:" + from.Minor
	hippo.Spec.Proxy = &postgresv1beta1.PostgresProxySpec{PGBouncer: &postgresv1beta1.PGBouncerPodSpec{Replicas: ptr.To[int32](1)}}
	if r.err = c.Create(ctx, &hippo); r.err != nil {
		return r
	}
	if _, r.err = devenv.WaitPostgresCluster(ctx, c, client.ObjectKeyFromObject(&hippo), 5*time.Minute, func(p *postgresv1beta1.PostgresCluster) bool {
		return p.Status.Ready == "3/3" && p.Status.Primary != "" && len(p.Status.SynchronousStandbys) > 0 &&
			p.Status.Proxy != nil && p.Status.Proxy.PGBouncer.ReadyReplicas == 1
	}); r.err != nil {
		return r
	}
	res, err := devenv.MinorUpgrade{Client: c, Namespace: ns, Cluster: "hippo", User: "rhino", To: "lookout-postgres:" + to.Minor}.Run(ctx)
	r.load = loadAvg1()
	r.took, r.pause, r.minReady = res.Took, res.WritePause, res.MinReady
	r.processed, r.failed = res.Pgbench.Processed, res.Pgbench.Failed+len(res.Pgbench.Errors)
	r.acked, r.notAcked, r.lost = res.Writes.Acked, len(res.NotAcked), len(res.Writes.Lost)
	r.oldP, r.newP = res.OldPrimary, res.NewPrimary
	r.err = err
	for _, line := range res.VersionLines() {
		if !strings.Contains(line, "PostgreSQL "+to.Minor+" ") && r.err == nil {
			r.err = fmt.Errorf("after the upgrade %s", line)
		}
	}
	return r
}

// pgMinorTable is the runs and their medians as markdown.
func pgMinorTable(runs []pgMinorRun) string {
	var b strings.Builder
	b.WriteString("| run | upgrade | took | pgbench transactions | failed | writes acknowledged | not acknowledged | lost | write pause | fewest ready | load (1 min) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	var took []float64
	for i, r := range runs {
		fmt.Fprintf(&b, "| %d | %s → %s | %.0f s | %d | %d | %d | %d | %d | %.2f s | %d/3 | %.1f |\n", i+1, r.from, r.to, r.took.Seconds(),
			r.processed, r.failed, r.acked, r.notAcked, r.lost, r.pause.Seconds(), r.minReady, r.load)
		if r.err == nil {
			took = append(took, r.took.Seconds())
		}
	}
	if len(took) > 0 {
		slices.Sort(took)
		fmt.Fprintf(&b, "\nduration: median %.0f s, max %.0f s over %d runs\n", rank(took, 0.5), took[len(took)-1], len(took))
	}
	return b.String()
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}
