package devenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/localpod"
	thanosrender "github.com/lookout-operator/lookout/internal/render/thanos"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// ThanosRulerPod is replica 0 of one ThanosRuler, run from the generated StatefulSet in a
// network namespace of its own.
type ThanosRulerPod struct {
	Pod  *localpod.Pod
	Host *testhost.Host
}

// RunThanosRulerPod waits for the operator's StatefulSet thanos-ruler-<name>, finds (or
// builds) the cached Thanos binary, and runs replica 0 in a new host of network: Thanos
// Ruler and the config reloader, with the rule ConfigMaps and the Secrets its environment
// names read from the API. It waits until Thanos Ruler answers /-/ready.
func RunThanosRulerPod(ctx context.Context, c client.Reader, cp *controlplane.ControlPlane, bins Binaries, network *testhost.Network, ns, name, dir string) (*ThanosRulerPod, error) {
	sts, err := waitStatefulSet(ctx, c, ns, thanosrender.StatefulSetName(name))
	if err != nil {
		return nil, err
	}
	tok, err := serviceAccountToken(ctx, cp, ns, sts.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return nil, err
	}
	images := map[string]string{ReloaderCommand: bins.Reloader}
	if err := addThanosImage(ctx, sts.Spec.Template.Spec, images); err != nil {
		return nil, err
	}
	h, err := network.NewHost()
	if err != nil {
		return nil, err
	}
	podName := sts.Name + "-0"
	pod, err := localpod.Start(ctx, podOptions(c, cp, sts.Spec.Template.Spec, ns, podName,
		images, tok, h, filepath.Join(dir, podName)))
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("pod %s: %w", podName, err)
	}
	tp := &ThanosRulerPod{Pod: pod, Host: h}
	if err := localpod.WaitHTTP(ctx, tp.URL("/-/ready"), 60*time.Second); err != nil {
		logs := tp.Logs(4096)
		tp.Stop()
		return nil, errors.Join(err, errors.New(logs))
	}
	return tp, nil
}

// URL is Thanos Ruler's web address with path.
func (p *ThanosRulerPod) URL(path string) string {
	return fmt.Sprintf("http://%s:%d%s", p.Host.IP, thanosrender.WebPort, path)
}

// Logs is the end (at most n bytes per container) of every container's log.
func (p *ThanosRulerPod) Logs(n int) string { return PodLogs(p.Pod, n) }

// PodLogs is the end (at most n bytes per container) of every container's log of pod.
func PodLogs(pod *localpod.Pod, n int) string {
	var out string
	for _, c := range pod.Containers {
		b, _ := os.ReadFile(c.LogPath)
		out += fmt.Sprintf("--- %s ---\n%s\n", c.Name, LastBytes(b, n))
	}
	return out
}

// Stop stops the pod and removes its network namespace.
func (p *ThanosRulerPod) Stop() {
	p.Pod.Stop()
	p.Host.Close()
}

// addThanosImage maps the Thanos image to the cached Thanos binary (built on first use)
// when a container of spec runs it: the ThanosRuler's, or a Prometheus's sidecar.
func addThanosImage(ctx context.Context, spec corev1.PodSpec, images map[string]string) error {
	for _, c := range spec.Containers {
		if strings.HasPrefix(c.Image, thanosrender.DefaultBaseImage+":") {
			bin, err := controlplane.Thanos.Ensure(ctx, os.Stderr)
			if err != nil {
				return err
			}
			images[thanosrender.DefaultBaseImage] = bin
			return nil
		}
	}
	return nil
}
