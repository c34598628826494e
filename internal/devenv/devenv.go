// Package devenv assembles a whole local Lookout: the control plane, the
// operator binary as its own process, scrape targets in network namespaces,
// and Prometheus and Alertmanager pods run from the StatefulSets the
// operator generates. The
// end-to-end tests and `make demo` share it, so the demo shows what the tests
// prove.
package devenv

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/localpod"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// Images the generated pod spec names, mapped to local binaries.
const (
	PrometheusImage = "quay.io/prometheus/prometheus"
	ReloaderCommand = "/bin/lookout-reloader"
)

// Binaries are the local programs a Lookout environment runs.
type Binaries struct {
	Lookout, Reloader, Prometheus string
	Alertmanager, Amtool          string
}

// Build compiles lookout and lookout-reloader from the repository at root
// into dir and finds (or builds) the cached Prometheus, Alertmanager and
// amtool.
func Build(ctx context.Context, root, dir string, ldflags string) (Binaries, error) {
	var b Binaries
	var err error
	for out, tool := range map[*string]controlplane.Tool{
		&b.Prometheus:   controlplane.Prometheus,
		&b.Alertmanager: controlplane.Alertmanager,
		&b.Amtool:       controlplane.Amtool,
	} {
		if *out, err = tool.Ensure(ctx, os.Stderr); err != nil {
			return b, err
		}
	}
	for out, pkg := range map[*string]string{&b.Lookout: "./cmd/lookout", &b.Reloader: "./cmd/lookout-reloader"} {
		*out = filepath.Join(dir, filepath.Base(pkg))
		args := []string{"build", "-o", *out}
		if ldflags != "" {
			args = append(args, "-ldflags", ldflags)
		}
		cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("build %s: %v\n%s", pkg, err, out)
		}
	}
	return b, nil
}

// Operator is a running `lookout operator` process.
type Operator struct {
	LogPath string
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
}

// StartOperator runs `lookout operator` against kubeconfig, with leader
// election, and waits until it is ready.
func StartOperator(ctx context.Context, bin, kubeconfig, logPath string, extraArgs ...string) (*Operator, error) {
	health, err := FreePort()
	if err != nil {
		return nil, err
	}
	webhookPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"operator",
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=true",
		"--metrics-bind-address=0",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", health),
		"--reloader-image=lookout-reloader:local",
		// The local pods discover and reload with the RBAC the operator
		// generates.
		"--manage-rbac",
		// Outside a cluster the apiserver calls the webhook by URL.
		"--webhook=true",
		"--webhook-host=127.0.0.1",
		fmt.Sprintf("--webhook-port=%d", webhookPort),
		fmt.Sprintf("--webhook-url=https://127.0.0.1:%d", webhookPort),
		"--webhook-cert-dir=" + filepath.Join(filepath.Dir(logPath), "webhook-certs"),
	}, extraArgs...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// One extra environment variable for the operator alone (not for the
	// control plane, which inherits the caller's environment), e.g.
	// BENCH_OPERATOR_ENV=GOGC=50 to measure the operator under another
	// garbage-collector setting.
	if e := os.Getenv("BENCH_OPERATOR_ENV"); e != "" {
		cmd.Env = append(os.Environ(), e)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	o := &Operator{LogPath: logPath, cmd: cmd, logFile: f, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(o.done) }()
	if err := localpod.WaitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", health), 60*time.Second); err != nil {
		o.Stop()
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("operator not ready: %w\n%s", err, LastBytes(b, 4096))
	}
	return o, nil
}

// Kill sends SIGKILL, as a node failure or the OOM killer would: nothing is released,
// nothing is flushed. It waits until the process is gone.
func (o *Operator) Kill() {
	_ = o.cmd.Process.Kill()
	<-o.done
	o.logFile.Close()
}

// Exited is closed when the process has ended.
func (o *Operator) Exited() <-chan struct{} { return o.done }

// Stop sends SIGTERM (the operator releases its lease) and waits.
func (o *Operator) Stop() {
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.done:
	case <-time.After(15 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.done
	}
	o.logFile.Close()
}

// StartTarget runs a /metrics server in a network namespace of its own and
// publishes it as a selector-less Service (label app=<name>, port "metrics")
// with an EndpointSlice. It returns the host and the target's address.
func StartTarget(ctx context.Context, c client.Client, ns, name string, port int32) (*testhost.Host, string, error) {
	host, err := testhost.New()
	if err != nil {
		return nil, "", err
	}
	addr, err := PublishTarget(ctx, c, host, ns, name, port)
	if err != nil {
		host.Close()
		return nil, "", err
	}
	return host, addr, nil
}

// PublishTarget serves /metrics on host's IP and port and publishes it as the Service
// ns/name (label app=<name>, port metrics) with an EndpointSlice, as StartTarget does.
func PublishTarget(ctx context.Context, c client.Client, host *testhost.Host, ns, name string, port int32) (string, error) {
	if err := host.ServeMetrics(int(port)); err != nil {
		return "", err
	}
	objs := []client.Object{
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics", Port: port}}},
		},
		&discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{
				discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "lookout-devenv"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host.IP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
		},
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return "", fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return fmt.Sprintf("%s:%d", host.IP, port), nil
}

// RunPrometheusPod waits for the operator's StatefulSet prometheus-<name>
// and its Secrets, then runs the pod template locally with a real token of
// the ServiceAccount the pod runs as (TokenRequest), so the RBAC the operator
// granted is exactly what Prometheus and the reloader get.
func RunPrometheusPod(ctx context.Context, c client.Reader, cp *controlplane.ControlPlane, bins Binaries, ns, name, dir string) (*localpod.Pod, error) {
	return RunStatefulSetPod(ctx, c, cp, bins, ns, promrender.StatefulSetName(name, 0), dir)
}

// RunPrometheusPodOn is RunPrometheusPod in host h's network namespace (with its address
// as the pod IP), or on the host's network when h is nil.
func RunPrometheusPodOn(ctx context.Context, c client.Reader, cp *controlplane.ControlPlane, bins Binaries, h *testhost.Host, ns, name, dir string) (*localpod.Pod, error) {
	return RunStatefulSetPodOn(ctx, c, cp, bins, h, nil, ns, promrender.StatefulSetName(name, 0), dir)
}

// RunStatefulSetPod is RunPrometheusPod for the first pod of any StatefulSet the operator
// generates with a Prometheus container (a PrometheusAgent's prom-agent-<name>).
func RunStatefulSetPod(ctx context.Context, c client.Reader, cp *controlplane.ControlPlane, bins Binaries, ns, stsName, dir string) (*localpod.Pod, error) {
	return RunStatefulSetPodOn(ctx, c, cp, bins, nil, nil, ns, stsName, dir)
}

// RunStatefulSetPodOn is RunStatefulSetPod in the network namespace of host (nil: the
// host's own), with hosts as extra /etc/hosts entries (name → IP), so that two pods
// listening on the same ports can run side by side. A Thanos sidecar in the pod runs
// the cached Thanos binary.
func RunStatefulSetPodOn(ctx context.Context, c client.Reader, cp *controlplane.ControlPlane, bins Binaries, host *testhost.Host, hosts map[string]string, ns, stsName, dir string) (*localpod.Pod, error) {
	sts, err := waitStatefulSet(ctx, c, ns, stsName)
	if err != nil {
		return nil, err
	}
	tok, err := serviceAccountToken(ctx, cp, ns, sts.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return nil, err
	}
	images := map[string]string{PrometheusImage: bins.Prometheus, ReloaderCommand: bins.Reloader}
	if err := addThanosImage(ctx, sts.Spec.Template.Spec, images); err != nil {
		return nil, err
	}
	opts := podOptions(c, cp, sts.Spec.Template.Spec, ns, sts.Name+"-0", images, tok, host, dir)
	opts.Hosts = hosts
	pod, err := localpod.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	readyIP := "127.0.0.1"
	if host != nil {
		readyIP = host.IP
	}
	if err := localpod.WaitHTTP(ctx, "http://"+readyIP+":9090/-/ready", 60*time.Second); err != nil {
		pod.Stop()
		return nil, err
	}
	return pod, nil
}

// waitStatefulSet waits until the operator has created StatefulSet ns/name
// and every non-optional Secret its pod template mounts.
func waitStatefulSet(ctx context.Context, c client.Reader, ns, name string) (*appsv1.StatefulSet, error) {
	var sts appsv1.StatefulSet
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sts); err != nil {
			return false, nil
		}
		for _, v := range sts.Spec.Template.Spec.Volumes {
			if v.Secret == nil || (v.Secret.Optional != nil && *v.Secret.Optional) {
				continue
			}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.Secret.SecretName}, &corev1.Secret{}); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the operator did not create StatefulSet %s/%s and its Secrets: %w", ns, name, err)
	}
	return &sts, nil
}

// serviceAccountToken is a real token of the ServiceAccount (TokenRequest),
// so the RBAC the operator granted is exactly what the pod gets.
func serviceAccountToken(ctx context.Context, cp *controlplane.ControlPlane, ns, saName string) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		return nil, err
	}
	if saName == "" {
		saName = "default"
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, saName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("TokenRequest for ServiceAccount %s/%s: %w", ns, saName, err)
	}
	return []byte(tok.Status.Token), nil
}

// CheckPortsFree fails when a port the generated pod listens on is taken.
func CheckPortsFree(ports ...int) error {
	for _, port := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			return fmt.Errorf("port %d is in use; the generated Prometheus pod listens there: %w", port, err)
		}
		l.Close()
	}
	return nil
}

// FreePort returns a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// LastBytes returns at most the last n bytes of b as a string.
func LastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// GeneratedConfig reads the prometheus.yaml the operator wrote for
// Prometheus ns/name (Secret prometheus-<name>, gzipped).
func GeneratedConfig(ctx context.Context, c client.Reader, ns, name string) (string, error) {
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: promrender.ConfigSecretName(name)}, &s); err != nil {
		return "", err
	}
	zr, err := gzip.NewReader(bytes.NewReader(s.Data[promrender.ConfigSecretKey]))
	if err != nil {
		return "", fmt.Errorf("Secret %s/%s: %w", ns, s.Name, err)
	}
	b, err := io.ReadAll(zr)
	return string(b), err
}

// podOptions run a generated pod's spec locally as pod ns/podName with images mapped to
// local binaries, a real ServiceAccount token and the control plane's API; in host h's
// network namespace with its address as the pod IP, or on the host's network when h is
// nil.
func podOptions(c client.Reader, cp *controlplane.ControlPlane, spec corev1.PodSpec, ns, podName string, images map[string]string, tok []byte, h *testhost.Host, dir string) localpod.Options {
	o := localpod.Options{
		Pod:           spec,
		PodName:       podName,
		PodNamespace:  ns,
		Images:        images,
		Client:        c,
		Token:         tok,
		CACert:        cp.CACert,
		APIServerHost: "127.0.0.1",
		APIServerPort: cp.Port,
		Dir:           dir,
	}
	if h != nil {
		o.NetNS, o.PodIP = h.Namespace, h.IP
	}
	o.Node = nodeOf(cp)
	return o
}

// nodes are the Nodes registered with RegisterNode, by control plane.
var (
	nodesMu sync.Mutex
	nodes   = map[*controlplane.ControlPlane]*localpod.Node{}
)

// NodeName is the Node RegisterNode registers.
const NodeName = "lookout-local"

// RegisterNode registers this host as Node lookout-local of cp at ip (the host's address
// on the pods' network), so that every pod devenv runs afterwards for a StatefulSet of cp
// is reported to the API as a kubelet would: its Pod, which kube-controller-manager's
// StatefulSet controller makes, is bound to the node, Running and Ready with the pod's
// address, and the Endpoints controllers publish it; the StatefulSet counts it ready.
// Without a Node, pods run unseen by the API (the end-to-end tests publish their own
// EndpointSlices). Stop the Node after the pods.
func RegisterNode(ctx context.Context, cp *controlplane.ControlPlane, ip string) (*localpod.Node, error) {
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		return nil, err
	}
	n, err := localpod.RegisterNode(ctx, cs, NodeName, ip)
	if err != nil {
		return nil, err
	}
	nodesMu.Lock()
	defer nodesMu.Unlock()
	nodes[cp] = n
	return n, nil
}

func nodeOf(cp *controlplane.ControlPlane) *localpod.Node {
	nodesMu.Lock()
	defer nodesMu.Unlock()
	return nodes[cp]
}

// RunShowingOperatorLog runs a test binary's tests against op and, when they
// fail, prints the tail of op's log: what a reader of a failed run needs first.
func RunShowingOperatorLog(m interface{ Run() int }, op *Operator) int {
	code := m.Run()
	if code != 0 {
		b, _ := os.ReadFile(op.LogPath)
		fmt.Fprintf(os.Stderr, "--- operator log (last 4 KiB) ---\n%s\n", LastBytes(b, 4096))
	}
	return code
}
