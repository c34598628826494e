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
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/scheme"
)

// Env is the local control plane, a real node and the operator binary, as test/node
// and `make demo-node` use them.
type Env struct {
	CP       *controlplane.ControlPlane
	Node     *Node
	Operator *devenv.Operator
	Images   Images
	Client   client.Client
}

// StartEnv builds the binaries and the images (into work), starts the control plane
// with the CRDs of the repository at root, the node, and the operator with the reloader
// image the node has.
func StartEnv(ctx context.Context, root, work string, log io.Writer) (e *Env, err error) {
	bins, err := devenv.Build(ctx, root, work, "")
	if err != nil {
		return nil, err
	}
	e = &Env{}
	if e.Images, err = BuildImages(ctx, root, work, bins.Prometheus, controlplane.PrometheusVersion); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if e.CP, err = controlplane.Start(ctx, controlplane.Options{Log: log, CRDDir: filepath.Join(root, "config", "crd")}); err != nil {
		return nil, err
	}
	if e.Node, err = Start(ctx, e.CP, Options{Images: e.Images.Files, PauseImage: e.Images.Pause, Log: log}); err != nil {
		return nil, err
	}
	if e.Client, err = client.New(e.CP.RESTConfig, client.Options{Scheme: scheme.Scheme}); err != nil {
		return nil, err
	}
	if e.Operator, err = devenv.StartOperator(ctx, bins.Lookout, e.CP.KubeconfigPath, filepath.Join(work, "operator.log"), "--reloader-image="+e.Images.Reloader); err != nil {
		return nil, err
	}
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

// Stop stops the operator, the node and the control plane.
func (e *Env) Stop() {
	if e.Operator != nil {
		e.Operator.Stop()
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
