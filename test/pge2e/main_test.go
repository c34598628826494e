// Package pge2e runs a PostgresCluster end to end: the local control plane
// (kube-controller-manager included, whose StatefulSet controller makes the
// pods), the operator binary, and the instance pods the StatefulSets ask for
// run by internal/localpod as a kubelet would — each in a network namespace
// of its own, as the pod's user, with the instance manager as entrypoint, the
// host's PostgreSQL 15 and volumes that outlive the pod. The tests assert
// what a user checks: kubectl's columns, the pods' role labels, the
// -primary Service's endpoints, the user Secret's uri, and that a failover
// loses no acknowledged write.
package pge2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/localpod"
	"github.com/lookout-operator/lookout/internal/scheme"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// postgresBinDir is where Debian's postgresql-15 puts the programs the
// instance manager runs.
const postgresBinDir = "/usr/lib/postgresql/15/bin"

var (
	cp       *controlplane.ControlPlane
	k8s      client.Client
	bins     devenv.Binaries
	network  *testhost.Network
	kubectl  string
	work     string
	operator *devenv.Operator
	testCtx  = context.Background()
)

func TestMain(m *testing.M) {
	// Re-executed helper: a container in its mount namespace.
	localpod.MaybeMountExec()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard()) // the clients' logs; the operator logs to its own file
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "pge2e: must run as root (network namespaces, bind mounts, the pods' users)")
		return 1
	}
	if _, err := os.Stat(filepath.Join(postgresBinDir, "postgres")); err != nil {
		fmt.Fprintln(os.Stderr, "pge2e: PostgreSQL 15 is not installed (.ci/run installs postgresql-15):", err)
		return 1
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	var err error
	if work, err = os.MkdirTemp("", "lookout-pge2e-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)
	// The instance pods run lookout as their own (non-root) user.
	if err := os.Chmod(work, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if bins, err = devenv.Build(testCtx, root, work, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if kubectl, err = controlplane.Kubectl.Ensure(testCtx, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cp, err = controlplane.Start(testCtx, controlplane.Options{Log: os.Stderr, CRDDir: filepath.Join(root, controlplane.MonitoringCRDDir)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	defer cp.Stop()
	if _, err := controlplane.InstallCRDs(testCtx, cp.RESTConfig, filepath.Join(root, controlplane.PostgresCRDDir)); err != nil {
		fmt.Fprintln(os.Stderr, "install the PostgresCluster CRD:", err)
		return 1
	}
	if k8s, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if network, err = testhost.NewNetwork(); err != nil {
		fmt.Fprintln(os.Stderr, "pods' network:", err)
		return 1
	}
	defer network.Close()
	node, err := devenv.RegisterNode(testCtx, cp, network.HostIP)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer node.Stop()
	operator, err = devenv.StartOperator(testCtx, bins.Lookout, cp.KubeconfigPath, filepath.Join(work, "operator.log"), "--log-level=debug")
	if err != nil {
		fmt.Fprintln(os.Stderr, "start operator:", err)
		return 1
	}
	defer operator.Stop()
	return devenv.RunShowingOperatorLog(m, operator)
}
