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

func TestTheGeneratedPrometheusRunsOnARealKubeletAndScrapes(t *testing.T) {
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
	t.Logf("control plane, node and operator up in %s", time.Since(began).Round(time.Millisecond))

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
	query := fmt.Sprintf(`up{namespace=%q, service="prometheus-operated", endpoint="web"} == 1`, ns)
	if err := node.WaitQuery(ctx, "http://"+pod.Status.PodIP+":9090", query, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("Prometheus on the real node scrapes itself; %s in all", time.Since(began).Round(time.Millisecond))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
