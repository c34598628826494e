package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
)

// upgradeMinor gives the demo's cluster a PgBouncer, then changes its image to
// the newest PostgreSQL 15 release the package archive offers (unpacked
// beside the host's) under pgbench and the id-tagged writer through the
// pooler, and prints what the clients saw: failed transactions, lost writes,
// the switchover's pause, and the release every instance reports.
func upgradeMinor(ctx context.Context, c client.Client, pods *devenv.PostgresPods, kc func(args ...string)) error {
	minors, err := controlplane.PostgresMinors(ctx, 15, os.Stdout)
	if err != nil {
		return err
	}
	to := minors[len(minors)-1]
	toImage := "lookout-postgres:" + to.Minor
	placed, err := to.Shared()
	if err != nil {
		return err
	}
	pods.RunImageFrom(toImage, placed.BinDir())

	step("Adding a PgBouncer to default/hippo (spec.proxy.pgBouncer): every planned change of primary pauses it")
	var pgc postgresv1beta1.PostgresCluster
	key := client.ObjectKey{Namespace: pgNamespace, Name: pgCluster}
	if err := c.Get(ctx, key, &pgc); err != nil {
		return err
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"proxy":{"pgBouncer":{"replicas":1}}}}`))
	if err := c.Patch(ctx, &pgc, patch); err != nil {
		return err
	}
	if _, err := waitPostgres(ctx, c, 3*time.Minute, func(p *postgresv1beta1.PostgresCluster) bool {
		return p.Status.Ready == "3/3" && p.Status.Primary != "" && p.Status.Proxy != nil && p.Status.Proxy.PGBouncer.ReadyReplicas == 1
	}); err != nil {
		return fmt.Errorf("%w (pods: %v)", err, pods.Errors())
	}
	running := "?"
	if err := c.Get(ctx, key, &pgc); err == nil && len(pgc.Status.InstanceVersions) > 0 {
		running = pgc.Status.InstanceVersions[0].Version
	}

	step("Rolling minor upgrade: spec.image → %s (PostgreSQL %s, Debian's %s unpacked beside this host's %s) under pgbench and the writer through the pooler",
		toImage, to.Minor, to.Package, running)
	fmt.Println("    replicas one at a time, then a switchover through the pooler (PAUSE … RESUME), then the old primary; the status says where it stands:")
	res, err := devenv.MinorUpgrade{Client: c, Namespace: pgNamespace, Cluster: pgCluster, User: pgUser, To: toImage, Log: indent{}}.Run(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("    %s → %s in %s: primary %s → %s\n", running, to.Minor, res.Took.Round(time.Second), res.OldPrimary, res.NewPrimary)
	fmt.Printf("    pgbench through the pooler: %s\n", res.Pgbench)
	fmt.Printf("    failed transactions: %d\n", res.Pgbench.Failed+len(res.Pgbench.Errors))
	fmt.Printf("    the writer through the pooler: %s; %d not acknowledged; write pause at the switchover %s\n",
		res.Writes, len(res.NotAcked), res.WritePause.Round(time.Millisecond))
	for _, line := range res.VersionLines() {
		fmt.Printf("    SELECT version() on %s\n", line)
	}
	kc("get", "postgresclusters", "-n", pgNamespace)
	return nil
}

// indent writes the upgrade's progress lines under the step.
type indent struct{}

func (indent) Write(p []byte) (int, error) {
	fmt.Print("    " + string(p))
	return len(p), nil
}
