// Package install proves the three install paths (the kustomize base and its
// overlays, the bundle, the Helm chart) against a real kube-apiserver and
// etcd: the README's commands run as written against an apiserver without
// CRDs and uninstall again, each variant is applied with a server-side
// dry-run, the chart passes helm lint, the operator's pod passes Pod Security "restricted", and the
// operator, run with a token of its ServiceAccount and exactly the RBAC the
// install grants, goes through a real flow without a single 403.
package install

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/install"
	"github.com/lookout-operator/lookout/internal/scheme"
)

var (
	cp       *controlplane.ControlPlane
	k8s      client.Client
	testCtx  = context.Background()
	repoRoot string
	kubectl  string
	helm     string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Join(filepath.Dir(file), "..", "..")
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	var err error
	for _, t := range []struct {
		tool controlplane.Tool
		path *string
	}{{controlplane.Kubectl, &kubectl}, {controlplane.Helm, &helm}} {
		if *t.path, err = t.tool.Ensure(testCtx, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	cp, err = controlplane.Start(testCtx, controlplane.Options{
		Log:                      os.Stderr,
		CRDDir:                   filepath.Join(repoRoot, install.CRDDir),
		WithoutControllerManager: true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	defer cp.Stop()
	k8s, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		return 1
	}
	// A dry-run creates nothing, so namespaced objects need their
	// namespaces for real: the operator's (from the install itself, with
	// its Pod Security label) and the namespaced overlay's.
	if err := k8s.Create(testCtx, install.Namespace(install.Options{})); err != nil {
		fmt.Fprintln(os.Stderr, "create namespace:", err)
		return 1
	}
	for _, ns := range install.ExampleWatchNamespaces {
		if err := k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			fmt.Fprintln(os.Stderr, "create namespace:", err)
			return 1
		}
	}
	return m.Run()
}

// run runs a binary and returns its standard output; stderr is in the error.
func runTool(t *testing.T, stdin []byte, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(testCtx, bin, args...)
	cmd.Dir = repoRoot
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.Bytes()
}

// dryRun applies manifests with a server-side dry-run and returns kubectl's
// output, one line per object.
func dryRun(t *testing.T, manifests []byte) string {
	t.Helper()
	out := runTool(t, manifests, kubectl, "--kubeconfig", cp.KubeconfigPath, "apply", "--server-side",
		"--field-manager=lookout-install-test", "--dry-run=server", "-f", "-")
	return string(out)
}
