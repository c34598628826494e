// Package e2e runs the user story end to end: the local control plane, the
// operator binary, and a real Prometheus plus the real reloader started from
// the pod spec the operator generated, scraping a target in a network
// namespace of the test's own.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/localpod"
	"github.com/lookout-operator/lookout/internal/scheme"
	"github.com/lookout-operator/lookout/internal/testhost"
)

var (
	cp       *controlplane.ControlPlane
	k8s      client.Client
	bins     devenv.Binaries
	operator *devenv.Operator
	testCtx  = context.Background()
)

func TestMain(m *testing.M) {
	// Re-executed helpers: a container in its mount namespace, a target.
	localpod.MaybeMountExec()
	testhost.MaybeServe()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e: must run as root (network namespaces, bind mounts)")
		return 1
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	work, err := os.MkdirTemp("", "lookout-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)

	if bins, err = devenv.Build(testCtx, root, work, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cp, err = controlplane.Start(testCtx, controlplane.Options{Log: os.Stderr, CRDDir: filepath.Join(root, "config", "crd")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	defer cp.Stop()
	if k8s, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	operator, err = devenv.StartOperator(testCtx, bins.Lookout, cp.KubeconfigPath, filepath.Join(work, "operator.log"), "--log-level=debug")
	if err != nil {
		fmt.Fprintln(os.Stderr, "start operator:", err)
		return 1
	}
	defer operator.Stop()
	return devenv.RunShowingOperatorLog(m, operator)
}
