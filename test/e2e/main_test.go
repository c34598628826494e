// Package e2e runs the user story end to end: the local control plane, the
// operator binary, and a real Prometheus plus the real reloader started from
// the pod spec the operator generated, scraping a target in a network
// namespace of the test's own.
package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/localpod"
	"github.com/lookout-operator/lookout/internal/scheme"
	"github.com/lookout-operator/lookout/internal/testhost"
)

var (
	cp          *controlplane.ControlPlane
	k8s         client.Client
	bins        binaries
	testCtx     = context.Background()
	operatorLog string
)

type binaries struct {
	lookout, reloader, prometheus string
}

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

	bins.prometheus, err = controlplane.Prometheus.Ensure(testCtx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for out, pkg := range map[*string]string{&bins.lookout: "./cmd/lookout", &bins.reloader: "./cmd/lookout-reloader"} {
		*out = filepath.Join(work, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", *out, pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, b)
			return 1
		}
	}

	cp, err = controlplane.Start(testCtx, controlplane.Options{Log: os.Stderr, CRDDir: filepath.Join(root, "config", "crd")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	defer cp.Stop()
	k8s, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	stop, err := startOperator(work)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start operator:", err)
		return 1
	}
	defer stop()
	code := m.Run()
	if code != 0 {
		b, _ := os.ReadFile(operatorLog)
		fmt.Fprintf(os.Stderr, "--- operator log (last 4 KiB) ---\n%s\n", lastBytes(b, 4096))
	}
	return code
}

// startOperator runs `lookout operator` as its own process against the
// control plane, the way a user runs it outside a cluster.
func startOperator(work string) (func(), error) {
	health, err := freePort()
	if err != nil {
		return nil, err
	}
	operatorLog = filepath.Join(work, "operator.log")
	f, err := os.Create(operatorLog)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bins.lookout, "operator",
		"--kubeconfig="+cp.KubeconfigPath,
		"--leader-elect=true",
		"--metrics-bind-address=0",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", health),
		"--reloader-image=lookout-reloader:e2e",
		"--log-level=debug",
	)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		f.Close()
	}
	if err := localpod.WaitHTTP(testCtx, fmt.Sprintf("http://127.0.0.1:%d/readyz", health), 60*time.Second); err != nil {
		stop()
		b, _ := os.ReadFile(operatorLog)
		return nil, fmt.Errorf("operator not ready: %w\n%s", err, lastBytes(b, 4096))
	}
	return stop, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

type ctxT = context.Context
