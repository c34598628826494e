package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/scheme"
)

// Env is the local control plane, a real node and the operator installed on it from
// its image through the kustomize base, as test/node and `make demo-node` use them.
type Env struct {
	CP          *controlplane.ControlPlane
	Node        *Node
	Images      Images
	Client      client.Client
	KubectlPath string
	// OperatorPods are the operator's pods once StartEnv has returned.
	OperatorPods []corev1.Pod

	installed bool
}

// StartEnv builds the images (into work), starts the control plane with the CRDs of the
// repository at root, the node with the images imported, and installs the operator
// from its image through a kustomize overlay of config/default (in work/overlay); it
// returns once the operator's Deployment is Ready and one of its pods leads.
func StartEnv(ctx context.Context, root, work string, log io.Writer) (e *Env, err error) {
	promBin, err := controlplane.Prometheus.Ensure(ctx, log)
	if err != nil {
		return nil, err
	}
	e = &Env{}
	if e.KubectlPath, err = controlplane.Kubectl.Ensure(ctx, log); err != nil {
		return nil, err
	}
	began := time.Now()
	if e.Images, err = BuildImages(ctx, root, work, promBin, controlplane.PrometheusVersion); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "images built in %s\n", time.Since(began).Round(10*time.Millisecond))
	// A failed step returns a nil *Env: stop what this one started.
	started := e
	defer func() {
		if err != nil {
			started.Stop()
		}
	}()
	// The CRDs are in the base too; installing them with the control plane lets
	// kube-controller-manager's garbage collector know the kinds from its start.
	// Without kube-proxy the webhook's Service has no ClusterIP that leads anywhere:
	// with aggregator routing the apiserver calls webhooks at an endpoint of their
	// Service (the pod's IP, which the host reaches over the node's bridge), so the
	// base's Service-based configuration works unchanged.
	if e.CP, err = controlplane.Start(ctx, controlplane.Options{Log: log, CRDDir: filepath.Join(root, "config", "crd"),
		ExtraAPIServerArgs: []string{"--enable-aggregator-routing=true"}}); err != nil {
		return nil, err
	}
	if e.Node, err = Start(ctx, e.CP, Options{Images: e.Images.Files, PauseImage: e.Images.Pause, Log: log}); err != nil {
		return nil, err
	}
	if e.Client, err = client.New(e.CP.RESTConfig, client.Options{Scheme: scheme.Scheme}); err != nil {
		return nil, err
	}
	overlay := filepath.Join(work, "overlay")
	if err := WriteOverlay(overlay, root, e.Images); err != nil {
		return nil, err
	}
	installing := time.Now()
	if err := e.InstallOperator(ctx, overlay); err != nil {
		return nil, err
	}
	if e.OperatorPods, err = e.WaitOperatorReady(ctx, 5*time.Minute); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "operator Deployment Ready with %d pods and a leader, %s after it was applied\n", len(e.OperatorPods), time.Since(installing).Round(10*time.Millisecond))
	return e, nil
}

// SelfScrapingPrometheus creates namespace ns with a Prometheus "main" on the node's
// Prometheus image and a ServiceMonitor that has it scrape itself through the governing
// Service the operator generates.
func (e *Env) SelfScrapingPrometheus(ctx context.Context, ns string) (*monitoringv1.Prometheus, error) {
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	prom := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			Image:                  ptr.To(e.Images.Prometheus),
			Version:                controlplane.PrometheusVersion,
			ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "node"}},
			ScrapeInterval:         "1s",
		}},
	}
	if err := e.Client.Create(ctx, prom); err != nil {
		return nil, fmt.Errorf("create Prometheus %s/main: %w", ns, err)
	}
	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "self", Labels: map[string]string{"team": "node"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"operated-prometheus": "true"}},
			Endpoints: []monitoringv1.Endpoint{{Port: "web", Interval: "1s"}},
		},
	}
	if err := e.Client.Create(ctx, sm); err != nil {
		return nil, fmt.Errorf("create ServiceMonitor %s/self: %w", ns, err)
	}
	return prom, nil
}

// Stop removes the operator's Deployment (the kubelet tears its pods down), then stops
// the node and the control plane.
func (e *Env) Stop() {
	if e.installed {
		_ = e.uninstallOperator(context.Background(), 2*time.Minute)
	}
	if e.Node != nil {
		e.Node.Stop()
	}
	if e.CP != nil {
		e.CP.Stop()
	}
}

// WaitPodReady waits until the pod's Ready condition is True.
func (e *Env) WaitPodReady(ctx context.Context, ns, name string, timeout time.Duration) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := poll(ctx, timeout, func() (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)
		if err != nil {
			return false, err
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("phase %s, conditions %+v, containers %+v", pod.Status.Phase, pod.Status.Conditions, pod.Status.ContainerStatuses)
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s not Ready: %w\n%s", ns, name, err, e.Node.KubeletLog())
	}
	return pod, nil
}

// WaitGone waits until the pod no longer exists (the kubelet has torn it down).
func (e *Env) WaitGone(ctx context.Context, ns, name string, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, error) {
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("pod %s/%s still exists (%v)", ns, name, err)
	})
}

// WaitQuery waits until the Prometheus at base returns at least one series for query.
func WaitQuery(ctx context.Context, base, query string, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(query), nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return false, fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
		}
		if len(r.Data.Result) == 0 {
			return false, fmt.Errorf("no series for %s", query)
		}
		return true, nil
	})
}

// poll calls check every 250 ms until it returns true, and on timeout returns the
// last reason it gave.
func poll(ctx context.Context, timeout time.Duration, check func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := check()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s: %v", timeout, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// WaitPrometheusAvailable waits until the Prometheus's Available condition is True (what
// `kubectl get prometheus` shows in its AVAILABLE column).
func (e *Env) WaitPrometheusAvailable(ctx context.Context, ns, name string, timeout time.Duration) error {
	err := poll(ctx, timeout, func() (bool, error) {
		p := &monitoringv1.Prometheus{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == monitoringv1.Available && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == p.Generation {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
	if err != nil {
		return fmt.Errorf("prometheus %s/%s not Available: %w\n%s", ns, name, err, e.OperatorLog())
	}
	return nil
}
