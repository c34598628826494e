// Command demo-node (make demo-node) starts the local control plane, a real node
// (containerd, runc, a kubelet, a CNI bridge; see docs/real-node.md) and the operator,
// creates a Prometheus that scrapes itself, waits until its pod is Ready on the kubelet
// and Prometheus reports the target up, prints how to look around, and waits for Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/node"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo-node:", err)
		os.Exit(1)
	}
}

func run() error {
	exitAfter := flag.Bool("exit", false, "stop after printing the results instead of waiting for Ctrl-C")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if os.Geteuid() != 0 {
		return fmt.Errorf("run as root (containerd, network namespaces, cgroups)")
	}
	if err := node.Check(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	work, err := filepath.Abs(filepath.Join(root, "_output", "demo-node"))
	if err != nil {
		return err
	}
	if err := os.RemoveAll(work); err != nil {
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	began := time.Now()
	env, err := node.StartEnv(ctx, root, work, os.Stderr)
	if err != nil {
		return err
	}
	defer env.Stop()
	const ns = "demo-node"
	prom, err := env.SelfScrapingPrometheus(ctx, ns)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "deleting the Prometheus; the kubelet tears its pod down")
		_ = env.Client.Delete(context.Background(), prom)
		_ = env.WaitGone(context.Background(), ns, "prometheus-main-0", 2*time.Minute)
	}()
	pod, err := env.WaitPodReady(ctx, ns, "prometheus-main-0", 5*time.Minute)
	if err != nil {
		return err
	}
	base := "http://" + pod.Status.PodIP + ":9090"
	if err := node.WaitQuery(ctx, base, `up{service="prometheus-operated"} == 1`, 2*time.Minute); err != nil {
		return err
	}
	kubectl, err := controlplane.Kubectl.Ensure(ctx, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Printf(`
Prometheus %s/main runs on the kubelet of node %s (pod %s at %s), %s after the start.

    export KUBECONFIG=%s
    %s get nodes,pods -A -o wide
    %s -n %s get events
    curl -s '%s/api/v1/targets' | head -c 600

Images on the node: %s, %s, %s.
`, ns, env.Node.Name, pod.Name, pod.Status.PodIP, time.Since(began).Round(time.Second),
		env.CP.KubeconfigPath, kubectl, kubectl, ns, base, env.Images.Pause, env.Images.Reloader, env.Images.Prometheus)
	if *exitAfter {
		return nil
	}
	fmt.Println("\n    Press Ctrl-C to stop everything.")
	<-ctx.Done()
	return nil
}
