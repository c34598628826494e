// Package node runs the operator's generated Prometheus StatefulSet on a real kubelet
// (internal/node: containerd, runc, a CNI bridge) against the local control plane, with
// images built by the images builder and imported, never pulled.
package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/node"
	"github.com/lookout-operator/lookout/internal/scheme"
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
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute) // cold: the kubelet is built first
	defer cancel()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	work := t.TempDir()
	began := time.Now()

	bins, err := devenv.Build(ctx, root, work, "")
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := node.BuildImages(ctx, root, work, bins.Prometheus, controlplane.PrometheusVersion)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("images built in %s", time.Since(began).Round(time.Millisecond))
	cp, err := controlplane.Start(ctx, controlplane.Options{Log: testWriter{t}, CRDDir: filepath.Join(root, "config", "crd")})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	nodeStart := time.Now()
	n, err := node.Start(ctx, cp, node.Options{Images: imgs.Files, PauseImage: imgs.Pause, Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	t.Logf("node Ready in %s", time.Since(nodeStart).Round(time.Millisecond))
	k8s, err := client.New(cp.RESTConfig, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	operator, err := devenv.StartOperator(ctx, bins.Lookout, cp.KubeconfigPath, filepath.Join(work, "operator.log"), "--reloader-image="+imgs.Reloader)
	if err != nil {
		t.Fatal(err)
	}
	defer operator.Stop()

	ns := "node-e2e"
	must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	prom := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			Image:                  ptr.To(imgs.Prometheus),
			Version:                controlplane.PrometheusVersion,
			ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "node"}},
			ScrapeInterval:         "1s",
		}},
	}
	must(t, k8s.Create(ctx, prom))
	// Prometheus scrapes itself through the governing Service the operator generates.
	must(t, k8s.Create(ctx, &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "self", Labels: map[string]string{"team": "node"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"operated-prometheus": "true"}},
			Endpoints: []monitoringv1.Endpoint{{Port: "web", Interval: "1s"}},
		},
	}))
	defer func() {
		// The kubelet tears the pod down (network, mounts, cgroups) before the node stops.
		_ = k8s.Delete(context.Background(), prom)
		waitGone(t, k8s, ns, "prometheus-main-0")
	}()

	pod := waitPodReady(t, ctx, k8s, n, ns, "prometheus-main-0")
	t.Logf("pod %s Ready on %s at %s, %s after the node", pod.Name, pod.Spec.NodeName, pod.Status.PodIP, time.Since(nodeStart).Round(time.Millisecond))
	for _, c := range pod.Status.ContainerStatuses {
		t.Logf("container %s image %s ready=%v", c.Name, c.Image, c.Ready)
	}
	query := fmt.Sprintf(`up{namespace=%q, service="prometheus-operated", endpoint="web"} == 1`, ns)
	waitQuery(t, ctx, "http://"+pod.Status.PodIP+":9090", query)
	t.Logf("Prometheus on the real node scrapes itself; %s in all", time.Since(began).Round(time.Millisecond))
}

func waitPodReady(t *testing.T, ctx context.Context, c client.Client, n *node.Node, ns, name string) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	pod := &corev1.Pod{}
	for {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)
		if err == nil {
			for _, cond := range pod.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return pod
				}
			}
		}
		select {
		case <-ctx.Done():
			b, _ := json.MarshalIndent(pod.Status, "", "  ")
			t.Fatalf("pod %s/%s not Ready: %v\n%s\n%s", ns, name, err, b, n.KubeletLog())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func waitQuery(t *testing.T, ctx context.Context, base, query string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	last := ""
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(query), nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var r struct {
				Data struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if err == nil && len(r.Data.Result) > 0 {
				return
			}
			last = fmt.Sprintf("%d results, err %v", len(r.Data.Result), err)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("query %s never returned a series (last: %s)", query, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func waitGone(t *testing.T, c client.Client, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("pod %s/%s still there after its Prometheus was deleted: %v", ns, name, err)
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
