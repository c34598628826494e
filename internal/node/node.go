// Package node runs a real Kubernetes node on this machine for the local control plane
// (internal/controlplane): containerd and runc (Debian's packages), the kubelet built from
// the Kubernetes module, pods on a CNI bridge (containernetworking's plugins) in a
// testhost network, images imported from OCI layout tarballs, so nothing is pulled. It
// also binds pending pods to the node (there is no scheduler in the local control plane)
// and makes the kubernetes Service's address (10.0.0.1:443) reach the apiserver, which
// listens on loopback. Stop removes everything Start made.
package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// ServiceIP is the kubernetes Service's ClusterIP for the control plane's service range
// (10.0.0.0/24): what in-cluster clients (the reloader, Prometheus's discovery) dial.
const ServiceIP = "10.0.0.1"

// Host programs the node needs, from Debian's containerd, runc and
// containernetworking-plugins packages.
var (
	Containerd = "containerd"
	Ctr        = "ctr"
	Runc       = "runc"
	CNIBinDir  = "/usr/lib/cni"
)

// Options configure Start.
type Options struct {
	// Name is the node's name (default "lookout-node").
	Name string
	// Images are OCI layout tarballs imported into containerd before the kubelet starts.
	Images []string
	// PauseImage is the sandbox image, one of Images.
	PauseImage string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// ReadyTimeout bounds each wait (default 2 minutes: the kubelet's first start on a busy
	// 2-core machine takes a while).
	ReadyTimeout time.Duration
}

// Node is a running kubelet with its container runtime.
type Node struct {
	Name    string
	Dir     string
	Network *testhost.Network

	cp         *controlplane.ControlPlane
	log        io.Writer
	sock       string
	containerd *controlplane.Process
	kubelet    *controlplane.Process
	stopBinder context.CancelFunc
	binderDone chan struct{}
	proxy      net.Listener
	netnsPre   map[string]bool
	cgroups    bool
}

// Check reports what is missing on this machine for a node, naming the packages.
func Check() error {
	var missing []string
	for _, b := range []string{Containerd, Ctr, Runc} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if _, err := os.Stat(filepath.Join(CNIBinDir, "bridge")); err != nil {
		missing = append(missing, filepath.Join(CNIBinDir, "bridge"))
	}
	if len(missing) > 0 {
		return fmt.Errorf("a real node needs %s (apt-get install containerd runc containernetworking-plugins)", strings.Join(missing, ", "))
	}
	return nil
}

// Start runs containerd and the kubelet against cp and waits until the node is Ready.
func Start(ctx context.Context, cp *controlplane.ControlPlane, opts Options) (n *Node, err error) {
	if err := Check(); err != nil {
		return nil, err
	}
	// The kubelet's cgroups are removed by Stop; ones that exist already belong to another
	// kubelet (or to a run that was killed) and are not ours to touch.
	if existing, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods"); len(existing) > 0 {
		return nil, fmt.Errorf("a kubelet's cgroups exist already (%s): another kubelet runs on this machine, or an earlier node was killed before its clean-up; stop it or remove them (rmdir, children first)", existing[0])
	}
	if opts.Name == "" {
		opts.Name = "lookout-node"
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 2 * time.Minute
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	kubelet, err := controlplane.Kubelet.Ensure(ctx, logw)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lookout-node-")
	if err != nil {
		return nil, fmt.Errorf("create node directory: %w", err)
	}
	n = &Node{Name: opts.Name, Dir: dir, cp: cp, log: logw, sock: filepath.Join(dir, "containerd.sock"), netnsPre: listNetns()}
	defer func() {
		if err != nil {
			n.Stop()
		}
	}()
	start := time.Now()

	if n.Network, err = testhost.NewNetwork(); err != nil {
		return nil, fmt.Errorf("node network: %w", err)
	}
	if err := n.serveAPIOnServiceIP(); err != nil {
		return nil, err
	}
	if err := n.writeCNIConfig(); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx, opts.PauseImage, opts.ReadyTimeout); err != nil {
		return nil, err
	}
	for _, img := range opts.Images {
		if out, err := n.ctr(ctx, "images", "import", "--all-platforms", img); err != nil {
			return nil, fmt.Errorf("import image %s into containerd: %w\n%s", img, err, out)
		}
	}
	fmt.Fprintf(logw, "containerd ready with %d images in %s\n", len(opts.Images), time.Since(start).Round(10*time.Millisecond))

	n.cgroups = true
	if err := n.startKubelet(ctx, kubelet, opts.ReadyTimeout); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		return nil, err
	}
	if err := waitNodeReady(ctx, cs, n.Name, opts.ReadyTimeout); err != nil {
		return nil, fmt.Errorf("node %s: %w\n%s", n.Name, err, n.kubelet.Tail())
	}
	binderCtx, cancel := context.WithCancel(context.Background())
	n.stopBinder, n.binderDone = cancel, make(chan struct{})
	go func() {
		defer close(n.binderDone)
		runBinder(binderCtx, cs, n.Name, logw)
	}()
	fmt.Fprintf(logw, "node %s Ready in %s (pods on %s, bridge %s)\n", n.Name, time.Since(start).Round(10*time.Millisecond), n.Network.Subnet, n.Network.Bridge)
	return n, nil
}

// serveAPIOnServiceIP gives the host the kubernetes Service's address on the node's
// bridge and forwards connections to it to the apiserver on loopback: pods find the
// apiserver at KUBERNETES_SERVICE_HOST without a kube-proxy.
func (n *Node) serveAPIOnServiceIP() error {
	if out, err := exec.Command("ip", "addr", "add", ServiceIP+"/32", "dev", n.Network.Bridge).CombinedOutput(); err != nil {
		return fmt.Errorf("add %s to bridge %s: %v: %s", ServiceIP, n.Network.Bridge, err, out)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ServiceIP, "443"))
	if err != nil {
		return fmt.Errorf("listen on the kubernetes Service address: %w", err)
	}
	n.proxy = l
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(n.cp.Port))
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go forward(c, target)
		}
	}()
	return nil
}

func forward(c net.Conn, target string) {
	defer c.Close()
	u, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
}

// writeCNIConfig puts pods on the testhost bridge, with addresses from .100 up (testhost
// hands out the low ones).
func (n *Node) writeCNIConfig() error {
	conf := filepath.Join(n.Dir, "cni", "net.d")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return err
	}
	ip := n.Network.Subnet.IP.To4()
	at := func(last int) string { return fmt.Sprintf("%d.%d.%d.%d", ip[0], ip[1], ip[2], last) }
	cfg := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "lookout-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q, "rangeStart": %q, "rangeEnd": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0", "gw": %q}]
      }
    },
    {"type": "loopback"}
  ]
}
`, n.Network.Bridge, filepath.Join(n.Dir, "cni", "ipam"), n.Network.Subnet.String(), at(100), at(250), n.Network.HostIP, n.Network.HostIP)
	return os.WriteFile(filepath.Join(conf, "10-lookout-node.conflist"), []byte(cfg), 0o644)
}

func (n *Node) startContainerd(ctx context.Context, pause string, timeout time.Duration) error {
	cfg := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # The kubelet asks for a negative oom_score_adj for sandboxes and Guaranteed pods; a
  # root without CAP_SYS_RESOURCE (a container, a VM sandbox) may not lower it, and runc
  # then fails with "can't get final child's PID from pipe". Keep it at containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, filepath.Join(n.Dir, "containerd", "root"), filepath.Join(n.Dir, "containerd", "state"), n.sock, n.sock+".ttrpc",
		pause, CNIBinDir, filepath.Join(n.Dir, "cni", "net.d"))
	path := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := controlplane.Spawn(n.Dir, "containerd", Containerd, "--config", path)
	if err != nil {
		return err
	}
	n.containerd = p
	return waitFor(ctx, timeout, p, func() bool {
		_, err := n.ctr(ctx, "version")
		return err == nil
	}, "containerd answering on "+n.sock)
}

// Ctr runs ctr against the node's containerd in the kubelet's namespace (k8s.io), e.g.
// `tasks kill -s SIGKILL <container id>`, and returns its output.
func (n *Node) Ctr(ctx context.Context, args ...string) ([]byte, error) { return n.ctr(ctx, args...) }

func (n *Node) ctr(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, Ctr, append([]string{"--address", n.sock, "--namespace", "k8s.io"}, args...)...)
	return cmd.CombinedOutput()
}

func (n *Node) startKubelet(ctx context.Context, bin string, timeout time.Duration) error {
	ports, err := controlplane.FreePorts(2)
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine mounts cgroup v1; the kubelet refuses it unless told otherwise.
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
maxPods: 30
# A shared test machine: never evict or collect images because its disk is fuller
# than a node's would be.
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Secret and ConfigMap changes reach mounted volumes soon (the reloader reads the
# config through the API anyway).
syncFrequency: 10s
nodeStatusUpdateFrequency: 2s
# The containers' logs stay in the node's directory (not /var/log/pods), so Stop
# removes them with the rest.
podLogsDir: %q
`, n.sock, n.Network.HostIP, ports[0], ports[1], filepath.Join(n.cp.Dir, "pki", "ca.crt"), n.PodLogsDir())
	path := filepath.Join(n.Dir, "kubelet.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := controlplane.Spawn(n.Dir, "kubelet", bin,
		"--config="+path,
		"--kubeconfig="+n.cp.KubeconfigPath,
		"--root-dir="+filepath.Join(n.Dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.Dir, "kubelet-pki"),
		"--hostname-override="+n.Name,
		"--node-ip="+n.Network.HostIP,
		"--v=1",
	)
	if err != nil {
		return err
	}
	n.kubelet = p
	return nil
}

// PodLogsDir is where the kubelet writes the containers' logs:
// <namespace>_<pod>_<uid>/<container>/<restart>.log.
func (n *Node) PodLogsDir() string { return filepath.Join(n.Dir, "pod-logs") }

// Stop stops the kubelet, every container it started, containerd, and removes the
// bridge, the service address, network namespaces, mounts, cgroups and the directory.
func (n *Node) Stop() {
	if n.stopBinder != nil {
		n.stopBinder()
		<-n.binderDone
	}
	if n.kubelet != nil {
		n.kubelet.Stop(30 * time.Second)
	}
	if n.containerd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		n.removeContainers(ctx)
		cancel()
		n.containerd.Stop(30 * time.Second)
	}
	n.killShims()
	n.removeNetns()
	unmountUnder(n.Dir)
	if n.cgroups {
		removeCgroups("kubepods")
	}
	if n.proxy != nil {
		_ = n.proxy.Close()
	}
	if n.Network != nil {
		n.Network.Close()
	}
	_ = os.RemoveAll(n.Dir)
}

// KubeletLog is the end of the kubelet's log, for test failures.
func (n *Node) KubeletLog() string {
	if n.kubelet == nil {
		return ""
	}
	return n.kubelet.Tail()
}

// removeContainers kills every task containerd runs and deletes it (which unmounts its
// root filesystem), in case pods were left running.
func (n *Node) removeContainers(ctx context.Context) {
	out, err := n.ctr(ctx, "tasks", "ls", "-q")
	if err != nil {
		return
	}
	ids := strings.Fields(string(out))
	for _, id := range ids {
		_, _ = n.ctr(ctx, "tasks", "kill", "--all", "--signal", "SIGKILL", id)
	}
	for _, id := range ids {
		for ctx.Err() == nil {
			if _, err := n.ctr(ctx, "tasks", "delete", id); err == nil {
				break
			}
			if out, _ := n.ctr(ctx, "tasks", "ls", "-q"); !strings.Contains(string(out), id) {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// killShims ends the runtime shims our containerd started (they outlive it by design),
// found by the socket address on their command line.
func (n *Node) killShims() {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") && bytes.Contains(cmdline, []byte(n.sock)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeNetns removes the pod network namespaces containerd made (named cni-<uuid>)
// that did not exist before Start.
func (n *Node) removeNetns() {
	for name := range listNetns() {
		if n.netnsPre[name] || !strings.HasPrefix(name, "cni-") {
			continue
		}
		p := filepath.Join("/var/run/netns", name)
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
		_ = os.Remove(p)
	}
}

func listNetns() map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mounts []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			mounts = append(mounts, f[4])
		}
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		_ = syscall.Unmount(mounts[i], syscall.MNT_DETACH)
	}
}

// removeCgroups removes the kubelet's cgroup tree (name under each v1 hierarchy),
// children first; a cgroup with a process left in it stays, and says so by failing.
func removeCgroups(name string) {
	hierarchies, _ := os.ReadDir("/sys/fs/cgroup")
	for _, h := range hierarchies {
		root := filepath.Join("/sys/fs/cgroup", h.Name(), name)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(dirs[i])
		}
	}
}

func waitFor(ctx context.Context, timeout time.Duration, p *controlplane.Process, ok func() bool, what string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !ok() {
		select {
		case <-p.Exited():
			return fmt.Errorf("%s exited while waiting for %s:\n%s", p.Name(), what, p.Tail())
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s:\n%s", what, p.Tail())
		case <-t.C:
		}
	}
	return nil
}

var errNotReady = errors.New("not Ready")

func nodeReady(node *corev1.Node) error {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("%w: %s: %s", errNotReady, c.Reason, c.Message)
		}
	}
	return fmt.Errorf("%w: no Ready condition yet", errNotReady)
}
