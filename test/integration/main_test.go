// Package integration tests Lookout against a real kube-apiserver, etcd and
// kube-controller-manager started once for the package.
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/scheme"
)

var (
	cp         *controlplane.ControlPlane
	k8s        client.Client
	crdNames   []string
	repoRoot   string
	testCtx    = context.Background()
	crdDir     string
	exampleDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Join(filepath.Dir(file), "..", "..")
	crdDir = filepath.Join(repoRoot, "config", "crd")
	exampleDir = filepath.Join(repoRoot, "examples")

	var err error
	cp, err = controlplane.Start(testCtx, controlplane.Options{Log: os.Stderr, CRDDir: crdDir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	// Stop runs even when a test panics: the panic unwinds through here only
	// when it happens on this goroutine, so the children also carry
	// Pdeathsig (see controlplane.spawn).
	defer cp.Stop()

	k8s, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		return 1
	}
	stopOperator, err := startOperator()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start operator:", err)
		return 1
	}
	defer stopOperator()
	return m.Run()
}
