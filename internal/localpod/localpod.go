// Package localpod runs the containers of a generated pod spec as local
// processes: the tests and the demo use it to run Prometheus and the
// reloader exactly as the StatefulSet describes them, without a kubelet or a
// container runtime.
//
// Each container becomes one process in a private mount namespace, where the
// pod's volumes (Secrets written out as files, emptyDirs as directories, the
// service-account token) are bind-mounted at the paths the spec names. The
// processes share the host network, or, with Options.NetNS, all run in one
// network namespace (the pod's network) with an /etc/hosts of their own and
// a proxy inside the namespace to the host's apiserver. With
// shareProcessNamespace the containers run in one PID namespace of the pod's
// own, with its /proc (see pidns.go). Needs root (mounts).
package localpod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/testhost"
)

// mountExecEnv carries the mount plan to the re-executed helper.
const mountExecEnv = "LOOKOUT_LOCALPOD_MOUNTEXEC"

// ServiceAccountDir is where Kubernetes mounts the service-account token.
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

type mountPlan struct {
	Binds [][2]string // source, target
	Argv  []string
	Dir   string
	NetNS string // network namespace to exec in (name under /run/netns)
	// PIDNS is the pod's PID namespace (a /proc/<pid>/ns/pid path) with
	// shareProcessNamespace; see pidns.go.
	PIDNS string
	// Cred is the user the program runs as (nil: the helper's, root); see
	// security.go.
	Cred *credential
	// Program is the file the helper execs, Argv[0] opened before the mounts
	// (empty: Argv[0]).
	Program string `json:"-"`
}

// MaybeMountExec must run first in main() (or TestMain) of any program that
// uses localpod: in the re-executed helper it bind-mounts the plan's volumes
// in its fresh mount namespace and execs the container's program. It returns
// only in the normal process.
func MaybeMountExec() {
	maybeInfraOrProcExec()
	raw := os.Getenv(mountExecEnv)
	if raw == "" {
		return
	}
	// setns(2) changes the calling thread only, and exec keeps the calling
	// thread's namespaces: enter and exec on one locked thread.
	runtime.LockOSThread()
	var plan mountPlan
	if err := json.Unmarshal([]byte(raw), &plan); err != nil {
		fmt.Fprintln(os.Stderr, "localpod: bad mount plan:", err)
		os.Exit(127)
	}
	if plan.NetNS != "" {
		if err := testhost.EnterNamespace(plan.NetNS); err != nil {
			fmt.Fprintln(os.Stderr, "localpod:", err)
			os.Exit(127)
		}
	}
	// Every source, and the program, is opened before the first mount: a
	// volume mounted at /tmp would otherwise hide the sources of the later
	// ones, and a program under /tmp, when they live there. The mount and the
	// exec then take the open file.
	if fd, err := syscall.Open(plan.Argv[0], syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err == nil {
		plan.Program = fmt.Sprintf("/proc/self/fd/%d", fd)
	}
	sources := make([]int, len(plan.Binds))
	for i, b := range plan.Binds {
		fd, err := syscall.Open(b[0], unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "localpod: open %s: %v\n", b[0], err)
			os.Exit(127)
		}
		sources[i] = fd
	}
	for i, b := range plan.Binds {
		src := fmt.Sprintf("/proc/self/fd/%d", sources[i])
		if err := syscall.Mount(src, b[1], "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			fmt.Fprintf(os.Stderr, "localpod: bind %s at %s: %v\n", b[0], b[1], err)
			os.Exit(127)
		}
		syscall.Close(sources[i])
	}
	if plan.PIDNS != "" {
		runInPIDNamespace(plan.PIDNS, plan.Argv, plan.Dir)
	}
	if plan.Cred != nil {
		if err := become(plan.Cred); err != nil {
			fmt.Fprintln(os.Stderr, "localpod:", err)
			os.Exit(127)
		}
	}
	execProgramFile(plan.Program, plan.Argv, plan.Dir, mountExecEnv)
}

// Options describe how to run one pod.
type Options struct {
	// Pod is the pod spec (e.g. a StatefulSet's template).
	Pod corev1.PodSpec
	// PodName becomes $(POD_NAME) and the metadata.name field reference.
	PodName      string
	PodNamespace string
	// Images maps an image (without tag) or a container command's first
	// element to a local binary. A container whose image has no command
	// runs Images[image] with the container's args.
	Images map[string]string
	// Client reads the Secrets and ConfigMaps the volumes reference, in
	// PodNamespace; like a kubelet, the pod keeps them in sync every
	// SyncInterval (default 1s; the kubelet's is about a minute).
	Client       client.Reader
	SyncInterval time.Duration
	// Token, CACert and APIServerHost/Port make the in-cluster configuration:
	// files at ServiceAccountDir and KUBERNETES_SERVICE_HOST/PORT. With
	// NetNS, APIServerHost/Port is where the apiserver listens on the host
	// (e.g. its loopback, which the namespace cannot reach): the pod gets a
	// proxy to it on the namespace's own 127.0.0.1 instead.
	Token         []byte
	CACert        []byte
	APIServerHost string
	APIServerPort int
	// NetNS, when set, is a network namespace (a name under /run/netns, as
	// made by `ip netns add` or testhost) that every container of the pod
	// runs in, like the containers of a real pod share its network.
	NetNS string
	// PodIP becomes the status.podIP (and status.podIPs) field reference,
	// thus $(POD_IP) in the generated pods.
	PodIP string
	// Hosts maps host names to addresses for an /etc/hosts of the pod's own
	// (bind-mounted over the host's in the containers' mount namespaces),
	// like a kubelet's plus cluster DNS: e.g. the peers' names under a
	// governing Service. With NetNS or Hosts set the pod gets the file, with
	// localhost and PodName → PodIP as well.
	Hosts map[string]string
	// Dir is where volumes and logs go.
	Dir string
	// ClaimsDir holds the data of the pod's PersistentVolumeClaim volumes, a
	// directory per claim name, which outlives the pod: a StatefulSet's
	// replacement pod finds what the one before it wrote, as on a real
	// volume. Keep it between runs of the pods of one claim.
	ClaimsDir string
	// Self is the executable that calls MaybeMountExec (default: this one).
	Self string
	// Node, when set, reports the pod to the API as a kubelet does (see report.go): the
	// Pod PodNamespace/PodName, made by its controller, is bound to the node before the
	// pod starts, its status follows what runs, and Stop deletes it.
	Node *Node
}

// Pod is a running local pod.
type Pod struct {
	Dir        string
	Containers map[string]*Container
	// APIProxy is the address, inside NetNS, of the proxy to the host's
	// apiserver (empty without NetNS).
	APIProxy string
	created  []heldMountPoint // mount-point directories this pod holds (see ensureMountPoint)
	stopSync context.CancelFunc
	syncDone chan struct{}
	proxy    *apiProxy
	hosts    string // the pod's /etc/hosts, when it has one
	// passwd and group are the pod's /etc/passwd and /etc/group, when it
	// runs as a user the host does not know (see security.go).
	passwd, group string
	// infra holds the pod's PID namespace with shareProcessNamespace, whose
	// path is pidNS.
	infra *exec.Cmd
	pidNS string
	// reporter writes the Pod's status, with Options.Node.
	reporter *reporter
}

// Container is one running container process.
type Container struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string
	exited  chan struct{}
	err     error
	// started and finished are when the process started and ended (once exited is closed).
	started, finished time.Time
}

// Exited is closed when the process ends.
func (c *Container) Exited() <-chan struct{} { return c.exited }

// Pid is the process ID of the container's program (the helper execs it),
// or, with shareProcessNamespace, of the helper whose child it is.
func (c *Container) Pid() int { return c.Cmd.Process.Pid }

// Start runs the init containers to completion, then starts the containers.
func Start(ctx context.Context, o Options) (*Pod, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("localpod needs root: it bind-mounts the pod's volumes in private mount namespaces")
	}
	if o.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Self = self
	}
	if o.Client == nil {
		return nil, errors.New("localpod needs a client to read the Secrets and ConfigMaps of the pod's volumes")
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = time.Second
	}
	var uid types.UID
	if o.Node != nil {
		var err error
		if uid, err = o.Node.bind(ctx, o.PodNamespace, o.PodName); err != nil {
			return nil, err
		}
	}
	p := &Pod{Dir: o.Dir, Containers: map[string]*Container{}}
	if o.NetNS != "" && o.APIServerPort != 0 {
		proxy, err := startAPIProxy(o.NetNS, o.APIServerHost, o.APIServerPort)
		if err != nil {
			return nil, err
		}
		p.proxy = proxy
		p.APIProxy = proxy.addr
		// The namespace's own loopback: the apiserver's serving
		// certificate names 127.0.0.1.
		o.APIServerHost, o.APIServerPort = proxy.host, proxy.port
	}
	if o.NetNS != "" || len(o.Hosts) > 0 {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			p.Stop()
			return nil, err
		}
		p.hosts = filepath.Join(o.Dir, "hosts")
		if err := os.WriteFile(p.hosts, hostsFile(o), 0o644); err != nil {
			p.Stop()
			return nil, err
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		p.Stop()
		return nil, err
	}
	var err error
	if p.passwd, p.group, err = userFiles(o); err != nil {
		p.Stop()
		return nil, err
	}
	if o.Pod.ShareProcessNamespace != nil && *o.Pod.ShareProcessNamespace {
		if p.passwd != "" || p.group != "" || anyCredential(o.Pod) {
			p.Stop()
			return nil, errors.New("localpod: shareProcessNamespace with runAsUser is not supported")
		}
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			p.Stop()
			return nil, err
		}
		infra, ns, err := startInfra(o.Self, filepath.Join(o.Dir, "infra.log"))
		if err != nil {
			p.Stop()
			return nil, err
		}
		p.infra, p.pidNS = infra, ns
	}
	volumes, synced, err := p.materialize(ctx, o)
	if err != nil {
		p.Stop()
		return nil, err
	}
	syncCtx, cancel := context.WithCancel(context.Background())
	p.stopSync, p.syncDone = cancel, make(chan struct{})
	go p.syncLoop(syncCtx, o, synced)
	for _, c := range o.Pod.InitContainers {
		ctr, err := p.run(o, c, volumes)
		if err != nil {
			p.Stop()
			return nil, err
		}
		select {
		case <-ctr.exited:
			if ctr.err != nil {
				p.Stop()
				return nil, fmt.Errorf("init container %s failed: %v; log:\n%s", c.Name, ctr.err, tailFile(ctr.LogPath))
			}
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(2 * time.Minute):
			p.Stop()
			return nil, fmt.Errorf("init container %s did not finish in 2m; log:\n%s", c.Name, tailFile(ctr.LogPath))
		}
	}
	for _, c := range o.Pod.Containers {
		ctr, err := p.run(o, c, volumes)
		if err != nil {
			p.Stop()
			return nil, err
		}
		p.Containers[c.Name] = ctr
	}
	if o.Node != nil {
		p.report(o, uid)
	}
	return p, nil
}

// materialize writes every volume into Dir and returns volume name → host dir.
func (p *Pod) materialize(ctx context.Context, o Options) (map[string]string, []*syncedVolume, error) {
	out := map[string]string{}
	var synced []*syncedVolume
	fsGroup := fsGroupOf(o.Pod)
	sa := filepath.Join(o.Dir, "volumes", "serviceaccount")
	for _, v := range o.Pod.Volumes {
		if serviceAccountVolume(v) {
			// The token volume the ServiceAccount admission adds to a Pod: the
			// service-account directory written below.
			out[v.Name] = sa
			continue
		}
		dir := filepath.Join(o.Dir, "volumes", v.Name)
		if v.PersistentVolumeClaim != nil {
			if o.ClaimsDir == "" {
				return nil, nil, fmt.Errorf("volume %s: a PersistentVolumeClaim volume needs Options.ClaimsDir", v.Name)
			}
			dir = filepath.Join(o.ClaimsDir, v.PersistentVolumeClaim.ClaimName)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
		switch {
		case v.Secret != nil:
			synced = append(synced, &syncedVolume{dir: dir, kind: "Secret", name: v.Secret.SecretName, optional: v.Secret.Optional != nil && *v.Secret.Optional,
				mode: fileMode(v.Secret.DefaultMode), gid: fsGroup})
		case v.ConfigMap != nil:
			synced = append(synced, &syncedVolume{dir: dir, kind: "ConfigMap", name: v.ConfigMap.Name, optional: v.ConfigMap.Optional != nil && *v.ConfigMap.Optional,
				mode: fileMode(v.ConfigMap.DefaultMode), gid: fsGroup})
		case v.Projected != nil:
			synced = append(synced, &syncedVolume{dir: dir, kind: "Projected", sources: v.Projected.Sources,
				mode: fileMode(v.Projected.DefaultMode), gid: fsGroup})
		case v.EmptyDir != nil, v.PersistentVolumeClaim != nil:
			if err := ownWritable(dir, fsGroup, v.EmptyDir != nil); err != nil {
				return nil, nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		default:
			return nil, nil, fmt.Errorf("volume %s: only Secret, ConfigMap, projected (of Secrets and ConfigMaps), emptyDir and PersistentVolumeClaim volumes can run locally", v.Name)
		}
		out[v.Name] = dir
	}
	for _, sv := range synced {
		if err := sv.sync(ctx, o.Client, o.PodNamespace); err != nil {
			return nil, nil, err
		}
	}
	if err := os.MkdirAll(sa, 0o755); err != nil {
		return nil, nil, err
	}
	for name, b := range map[string][]byte{"token": o.Token, "ca.crt": o.CACert, "namespace": []byte(o.PodNamespace)} {
		if err := os.WriteFile(filepath.Join(sa, name), b, 0o644); err != nil {
			return nil, nil, err
		}
	}
	out["\x00serviceaccount"] = sa
	return out, synced, nil
}

// serviceAccountVolume says whether v is the projected token volume
// (kube-api-access-*) the ServiceAccount admission adds to a Pod.
func serviceAccountVolume(v corev1.Volume) bool {
	if v.Projected == nil {
		return false
	}
	for _, s := range v.Projected.Sources {
		if s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

func (p *Pod) run(o Options, c corev1.Container, volumes map[string]string) (*Container, error) {
	argv, err := commandLine(o, c)
	if err != nil {
		return nil, err
	}
	cred, err := credentialOf(o.Pod, c)
	if err != nil {
		return nil, err
	}
	plan := mountPlan{Argv: argv, NetNS: o.NetNS, PIDNS: p.pidNS, Cred: cred}
	mounts := append([]corev1.VolumeMount(nil), c.VolumeMounts...)
	sort.Slice(mounts, func(i, j int) bool { return mounts[i].MountPath < mounts[j].MountPath })
	for _, m := range mounts {
		src, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("container %s mounts unknown volume %s", c.Name, m.Name)
		}
		if m.SubPath != "" {
			src = filepath.Join(src, m.SubPath)
			if err := os.MkdirAll(src, 0o755); err != nil {
				return nil, err
			}
		}
		if err := p.ensureMountPoint(m.MountPath); err != nil {
			return nil, err
		}
		plan.Binds = append(plan.Binds, [2]string{src, m.MountPath})
	}
	if err := p.ensureMountPoint(ServiceAccountDir); err != nil {
		return nil, err
	}
	plan.Binds = append(plan.Binds, [2]string{volumes["\x00serviceaccount"], ServiceAccountDir})
	if p.hosts != "" {
		plan.Binds = append(plan.Binds, [2]string{p.hosts, "/etc/hosts"})
	}
	if p.passwd != "" {
		plan.Binds = append(plan.Binds, [2]string{p.passwd, "/etc/passwd"}, [2]string{p.group, "/etc/group"})
	}
	raw, err := json.Marshal(plan)
	if err != nil {
		return nil, err
	}

	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + o.Dir,
		fmt.Sprintf("KUBERNETES_SERVICE_HOST=%s", o.APIServerHost),
		fmt.Sprintf("KUBERNETES_SERVICE_PORT=%d", o.APIServerPort),
		mountExecEnv + "=" + string(raw),
	}
	for _, e := range containerEnv(o, c) {
		env = append(env, e[0]+"="+e[1])
	}
	logPath := filepath.Join(o.Dir, c.Name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Self)
	cmd.Env = env
	cmd.Dir = o.Dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Go makes the new mount namespace private (MS_REC|MS_PRIVATE on /)
		// before exec, so the binds never leak to the host.
		Unshareflags: syscall.CLONE_NEWNS,
		Setpgid:      true,
		Pdeathsig:    syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start container %s: %w", c.Name, err)
	}
	ctr := &Container{Name: c.Name, Cmd: cmd, LogPath: logPath, exited: make(chan struct{}), started: time.Now()}
	go func() {
		ctr.err = cmd.Wait()
		ctr.finished = time.Now()
		f.Close()
		close(ctr.exited)
	}()
	return ctr, nil
}

// commandLine maps the container's image or command to a local binary and
// expands $(VAR) references to the container's environment in the command
// and the args, as the kubelet does.
func commandLine(o Options, c corev1.Container) ([]string, error) {
	argv, err := rawCommandLine(o, c)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, e := range containerEnv(o, c) {
		vars[e[0]] = e[1]
	}
	for i := 1; i < len(argv); i++ {
		argv[i] = expandVars(argv[i], vars)
	}
	return argv, nil
}

func rawCommandLine(o Options, c corev1.Container) ([]string, error) {
	var argv []string
	if len(c.Command) > 0 {
		bin, ok := o.Images[c.Command[0]]
		if !ok {
			bin, ok = o.Images[imageName(c.Image)]
		}
		if !ok {
			return nil, fmt.Errorf("container %s: no local binary for command %s (image %s)", c.Name, c.Command[0], c.Image)
		}
		argv = append([]string{bin}, c.Command[1:]...)
	} else {
		bin, ok := o.Images[imageName(c.Image)]
		if !ok {
			return nil, fmt.Errorf("container %s: no local binary for image %s", c.Name, c.Image)
		}
		argv = []string{bin}
	}
	return append(argv, c.Args...), nil
}

func imageName(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// containerEnv is the container's environment in order: field references
// resolved, and $(VAR) in values expanded with the variables before them.
func containerEnv(o Options, c corev1.Container) [][2]string {
	vars := map[string]string{}
	out := make([][2]string, 0, len(c.Env))
	for _, e := range c.Env {
		v := envValue(o, e, vars)
		vars[e.Name] = v
		out = append(out, [2]string{e.Name, v})
	}
	return out
}

func envValue(o Options, e corev1.EnvVar, vars map[string]string) string {
	if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
		switch e.ValueFrom.FieldRef.FieldPath {
		case "metadata.name":
			return o.PodName
		case "metadata.namespace":
			return o.PodNamespace
		case "status.podIP", "status.podIPs":
			return o.PodIP
		case "spec.serviceAccountName":
			return o.Pod.ServiceAccountName
		}
	}
	if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && o.Client != nil {
		// As the kubelet does: the key's value, read when the container starts.
		ref := e.ValueFrom.SecretKeyRef
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var s corev1.Secret
		if err := o.Client.Get(ctx, client.ObjectKey{Namespace: o.PodNamespace, Name: ref.Name}, &s); err == nil {
			return string(s.Data[ref.Key])
		}
		return ""
	}
	return expandVars(e.Value, vars)
}

// expandVars replaces $(NAME) with vars[NAME] the way Kubernetes does: $$
// is a literal $, and a reference to an unknown variable stays as written.
func expandVars(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// Stop kills the containers and removes the mount points it created. With
// Options.Node, the Pod is then deleted from the API.
func (p *Pod) Stop() {
	if r := p.reporter; r != nil {
		r.stop()
		<-r.done
	}
	if p.stopSync != nil {
		p.stopSync()
		<-p.syncDone
		p.stopSync = nil
	}
	p.kill()
	if p.reporter != nil {
		p.reporter.confirmDeletion()
		p.reporter = nil
	}
	if p.infra != nil {
		// Ends whatever is left in the namespace, as the end of a pod's pause
		// container does.
		_ = p.infra.Process.Kill()
		_ = p.infra.Wait()
		p.infra = nil
	}
	if p.proxy != nil {
		p.proxy.close()
		p.proxy = nil
	}
	p.releaseMountPoints()
}

// kill ends the containers' processes: SIGTERM, then SIGKILL after 10s.
func (p *Pod) kill() {
	for _, c := range p.Containers {
		select {
		case <-c.exited:
			continue
		default:
		}
		_ = syscall.Kill(-c.Cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-c.Cmd.Process.Pid, syscall.SIGKILL)
			<-c.exited
		}
	}
}

// WaitHTTP polls url until it answers 200 or the timeout passes.
func WaitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url) //nolint:noctx // short poll
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (last error: %v)", url, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tailFile(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}
