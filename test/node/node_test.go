// Package node runs the operator's generated Prometheus StatefulSet on a real kubelet
// (internal/node: containerd, runc, a CNI bridge) against the local control plane, with
// images built by the images builder and imported, never pulled.
package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lookout-operator/lookout/internal/node"
)

func TestMain(m *testing.M) {
	// The clients here log nothing worth reading; without a logger controller-runtime
	// prints a stack trace saying so.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

func TestTheOperatorDeploymentFromItsImageRunsAPrometheusThatScrapesOnARealKubelet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the node test must run as root (containerd, network namespaces, cgroups)")
	}
	if err := node.Check(); err != nil {
		t.Fatal(err)
	}
	// Cold, the kubelet is built first.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	began := time.Now()

	env, err := node.StartEnv(ctx, root, t.TempDir(), testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	t.Logf("control plane, node and operator Deployment up in %s", time.Since(began).Round(time.Millisecond))
	if len(env.OperatorPods) != 2 {
		t.Errorf("%d operator pods, want the base's 2", len(env.OperatorPods))
	}
	for _, p := range env.OperatorPods {
		if p.Spec.NodeName != env.Node.Name || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Image != env.Images.Lookout {
			t.Errorf("operator pod %s on node %q runs %+v, want the image %s on %s", p.Name, p.Spec.NodeName, p.Status.ContainerStatuses, env.Images.Lookout, env.Node.Name)
		}
	}

	const ns = "node-e2e"
	prom, err := env.SelfScrapingPrometheus(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The kubelet tears the pod down (network, mounts, cgroups) before the node stops.
		if err := env.Client.Delete(context.Background(), prom); err != nil {
			t.Error(err)
		}
		if err := env.WaitGone(context.Background(), ns, "prometheus-main-0", 2*time.Minute); err != nil {
			t.Error(err)
		}
	}()

	created := time.Now()
	refusal, err := env.WaitWebhookRefuses(ctx, ns, 2*time.Minute)
	if err != nil {
		t.Fatalf("the webhook on the node: %v\n%s", err, env.OperatorLog())
	}
	t.Logf("the webhook in the operator's pods refuses a rule that does not parse: %s", refusal)
	pod, err := env.WaitPodReady(ctx, ns, "prometheus-main-0", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod %s Ready on node %s at %s, %s after the Prometheus was created", pod.Name, pod.Spec.NodeName, pod.Status.PodIP, time.Since(created).Round(time.Millisecond))
	if pod.Spec.NodeName != env.Node.Name {
		t.Errorf("pod on node %q, want %q", pod.Spec.NodeName, env.Node.Name)
	}
	images := map[string]string{}
	for _, c := range pod.Status.ContainerStatuses {
		images[c.Name] = c.Image
	}
	if images["config-reloader"] != env.Images.Reloader || images["prometheus"] != env.Images.Prometheus {
		t.Errorf("containers run %v, want the reloader %s and Prometheus %s", images, env.Images.Reloader, env.Images.Prometheus)
	}
	if err := env.WaitPrometheusAvailable(ctx, ns, "main", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	query := fmt.Sprintf(`up{namespace=%q, service="prometheus-operated", endpoint="web"} == 1`, ns)
	if err := node.WaitQuery(ctx, "http://"+pod.Status.PodIP+":9090", query, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("Prometheus on the real node is Available and scrapes itself; %s in all", time.Since(began).Round(time.Millisecond))
	out, err := env.Get(ctx, "deploy,pods,prometheus")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
