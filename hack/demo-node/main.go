// Command demo-node (make demo-node) starts the local control plane and a real node
// (containerd, runc, a kubelet, a CNI bridge; see docs/real-node.md), installs the
// operator on it as a Deployment from its image through the kustomize base, creates a
// Prometheus that scrapes itself, waits until its pod is Ready on the kubelet, the
// Prometheus Available and the target up, prints the Deployment, the pods and the
// Prometheus and how to look around, and waits for Ctrl-C.
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
	if err := env.WaitPrometheusAvailable(ctx, ns, "main", 2*time.Minute); err != nil {
		return err
	}
	base := "http://" + pod.Status.PodIP + ":9090"
	if err := node.WaitQuery(ctx, base, `up{service="prometheus-operated"} == 1`, 2*time.Minute); err != nil {
		return err
	}
	got, err := env.Get(ctx, "deploy,pods,prometheus")
	if err != nil {
		return err
	}
	kubectl := env.KubectlPath
	fmt.Printf(`
The operator runs on node %[6]s as the Deployment %[1]s/%[2]s from the image %[3]s,
applied from the kustomize overlay %[4]s.
Prometheus %[5]s/main runs on the kubelet too (pod %[7]s at %[8]s), %[9]s after the start.

$ kubectl get deploy,pods,prometheus -A -o wide
%[10]s
    export KUBECONFIG=%[11]s
    %[12]s get nodes,pods -A -o wide
    %[12]s -n %[5]s get events
    %[12]s -n %[1]s get lease %[13]s -o jsonpath='{.spec.holderIdentity}'
    curl -s '%[14]s/api/v1/targets' | head -c 600

Images on the node: %[15]s, %[3]s, %[16]s, %[17]s.
`, node.OperatorNamespace, node.OperatorDeployment, env.Images.Lookout, filepath.Join(work, "overlay"),
		ns, env.Node.Name, pod.Name, pod.Status.PodIP, time.Since(began).Round(time.Second), got,
		env.CP.KubeconfigPath, kubectl, node.LeaderLease, base,
		env.Images.Pause, env.Images.Reloader, env.Images.Prometheus)
	if *exitAfter {
		return nil
	}
	fmt.Println("\n    Press Ctrl-C to stop everything.")
	<-ctx.Done()
	return nil
}
