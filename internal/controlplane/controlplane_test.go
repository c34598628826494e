package controlplane

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestStartServesTheAPIAndStopLeavesNoProcess(t *testing.T) {
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	started := time.Now()
	cp, err := Start(ctx, Options{KubeconfigPath: kubeconfig, WithoutControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd + kube-apiserver ready in %s", time.Since(started))
	defer cp.Stop()

	// The kubeconfig written to the requested path works on its own.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != KubernetesVersion {
		t.Errorf("server version = %s, want %s", v.GitVersion, KubernetesVersion)
	}

	var pids []int
	for _, p := range cp.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	dir := cp.Dir
	cp.Stop()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("process %d still alive after Stop", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary directory %s not removed", dir)
	}
}

func TestStartRefusesAStaleDataDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etcd", "member"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "stale data directory") {
		t.Fatalf("err = %v, want a stale data directory error", err)
	}
}

func TestStartNamesAPortThatIsInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = Start(context.Background(), Options{APIServerPort: port, WithoutControllerManager: true})
	if err == nil || !strings.Contains(err.Error(), "already in use") {
		t.Fatalf("err = %v, want a port-in-use error", err)
	}
}

func TestEnsureReportsABuildThatFails(t *testing.T) {
	t.Setenv("LOOKOUT_CACHE", t.TempDir())
	broken := Tool{Name: "nothing", Module: "etcd", Version: "v0.0.0-test", Package: "go.etcd.io/etcd/server/v3/does-not-exist"}
	_, err := broken.Ensure(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "build nothing v0.0.0-test") {
		t.Fatalf("err = %v, want an error naming the failed build", err)
	}
	if _, statErr := os.Stat(broken.Path()); !os.IsNotExist(statErr) {
		t.Errorf("a failed build left %s behind", broken.Path())
	}
}
