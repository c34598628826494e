package devenv

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/localpod"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// PostgresPods runs the pods of one PostgresCluster as a kubelet would: every pod the
// cluster's StatefulSets make (kube-controller-manager's StatefulSet controller) is
// started in a network namespace of its own on the shared bridge, with its address as
// the pod IP, the instance manager (`lookout instance`) as its entrypoint and the host's
// PostgreSQL binaries. Its claims are directories that outlive the pod. A pod whose
// processes end is over (Failed): the StatefulSet controller replaces it, and the
// replacement runs here with a new address and the same data, as a pod rescheduled
// onto its volume would. Needs a Node (RegisterNode).
type PostgresPods struct {
	Namespace, Cluster string

	c       client.Client
	cp      *controlplane.ControlPlane
	bins    Binaries
	network *testhost.Network
	dir     string

	mu      sync.Mutex
	binDirs map[string]string // image → PostgreSQL bin directory (RunImageFrom)
	running map[types.UID]*PostgresPod
	runs    int
	errs    []error
	stop    context.CancelFunc
	done    chan struct{}
}

// PostgresPod is one running instance pod.
type PostgresPod struct {
	Name string
	UID  types.UID
	Host *testhost.Host
	Pod  *localpod.Pod
}

// ManagerLog is the path of the instance manager's log.
func (p *PostgresPod) ManagerLog() string {
	if c := p.Pod.Containers[pgrender.ContainerName]; c != nil {
		return c.LogPath
	}
	return ""
}

// RunPostgresPods starts running the pods of PostgresCluster ns/cluster until Stop.
// dir holds the pods' files and, under claims/, their volumes' data.
func RunPostgresPods(ctx context.Context, c client.Client, cp *controlplane.ControlPlane, bins Binaries, network *testhost.Network, ns, cluster, dir string) (*PostgresPods, error) {
	if nodeOf(cp) == nil {
		return nil, fmt.Errorf("devenv: the pods of PostgresCluster %s/%s are made by their StatefulSets and need a Node (RegisterNode)", ns, cluster)
	}
	// The instance manager runs as the pod's (non-root) user.
	if err := reachableByAll(bins.Lookout); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "claims"), 0o755); err != nil {
		return nil, err
	}
	loop, stop := context.WithCancel(context.Background())
	pp := &PostgresPods{Namespace: ns, Cluster: cluster, c: c, cp: cp, bins: bins, network: network, dir: dir,
		running: map[types.UID]*PostgresPod{}, stop: stop, done: make(chan struct{})}
	go pp.loop(loop)
	return pp, nil
}

// reachableByAll checks that any user may run the program at path.
func reachableByAll(path string) error {
	for p := path; p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("devenv: %s is not executable by others, and the instance pods run %s as their own user", p, path)
		}
	}
	return nil
}

// loop starts each new pod of the cluster and cleans up after each that is over.
func (pp *PostgresPods) loop(ctx context.Context) {
	defer close(pp.done)
	for {
		pp.sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (pp *PostgresPods) sync(ctx context.Context) {
	var pods corev1.PodList
	if err := pp.c.List(ctx, &pods, client.InNamespace(pp.Namespace), client.MatchingLabels{pgcontract.LabelCluster: pp.Cluster}); err != nil {
		return
	}
	live := map[types.UID]bool{}
	// reported: the pod's end is in the API. A pod that is over is stopped
	// (and deleted) only then: a Job counts a pod deleted before it
	// reported Succeeded as failed.
	reported := map[types.UID]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		live[p.UID] = p.DeletionTimestamp == nil
		reported[p.UID] = p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		pp.mu.Lock()
		_, known := pp.running[p.UID]
		pp.mu.Unlock()
		if known || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
			continue
		}
		if err := pp.start(ctx, p); err != nil {
			pp.mu.Lock()
			pp.errs = append(pp.errs, err)
			pp.mu.Unlock()
		}
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for uid, r := range pp.running {
		if live[uid] && (!r.over() || !reported[uid]) {
			continue
		}
		delete(pp.running, uid)
		go r.stop()
	}
}

// over says whether every container of the pod has ended.
func (r *PostgresPod) over() bool {
	for _, c := range r.Pod.Containers {
		select {
		case <-c.Exited():
		default:
			return false
		}
	}
	return true
}

func (r *PostgresPod) stop() {
	r.Pod.Stop()
	r.Host.Close()
}

// start runs pod p in a new network namespace with a real token of its
// ServiceAccount.
func (pp *PostgresPods) start(ctx context.Context, p *corev1.Pod) error {
	tok, err := serviceAccountToken(ctx, pp.cp, pp.Namespace, p.Spec.ServiceAccountName)
	if err != nil {
		return err
	}
	h, err := pp.network.NewHost()
	if err != nil {
		return err
	}
	pp.mu.Lock()
	pp.runs++
	dir := filepath.Join(pp.dir, p.Name+"-"+strconv.Itoa(pp.runs))
	pp.mu.Unlock()
	images := map[string]string{pgrender.InstanceCommand[0]: pp.bins.Lookout}
	opts := podOptions(pp.c, pp.cp, pp.withPostgresBinDir(p.Spec), pp.Namespace, p.Name, images, tok, h, dir)
	opts.ClaimsDir = filepath.Join(pp.dir, "claims")
	pod, err := localpod.Start(ctx, opts)
	if err != nil {
		h.Close()
		return fmt.Errorf("run pod %s/%s: %w", pp.Namespace, p.Name, err)
	}
	pp.mu.Lock()
	pp.running[p.UID] = &PostgresPod{Name: p.Name, UID: p.UID, Host: h, Pod: pod}
	pp.mu.Unlock()
	return nil
}

// Pod is the running pod of that name, nil when none runs.
func (pp *PostgresPods) Pod(name string) *PostgresPod {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for _, r := range pp.running {
		if r.Name == name && !r.over() {
			return r
		}
	}
	return nil
}

// Errors are the pods that could not be started.
func (pp *PostgresPods) Errors() []error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return append([]error(nil), pp.errs...)
}

// Stop stops running new pods and stops every running one.
func (pp *PostgresPods) Stop() {
	pp.stop()
	<-pp.done
	pp.mu.Lock()
	running := pp.running
	pp.running = map[types.UID]*PostgresPod{}
	pp.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range running {
		wg.Add(1)
		go func() { defer wg.Done(); r.stop() }()
	}
	wg.Wait()
	// What the claims' postgres left in the host's IPC namespace.
	claims, _ := filepath.Glob(filepath.Join(pp.dir, "claims", "*", "pg*"))
	for _, pgdata := range claims {
		removeSharedMemory(pgdata)
	}
}

// Kill SIGKILLs every process of the pod (the instance manager, postgres and each
// backend: postgres makes each its own session, so no process group holds them all) and
// waits until none is left, as a node's OOM killer or a crashed container would leave
// it. The pod is then over: its StatefulSet replaces it.
func (r *PostgresPod) Kill(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		pids := r.pids()
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(pids) == 0, nil
	})
}

// Freeze SIGSTOPs every process of the pod, as a hung node or a frozen
// container leaves it: the processes are there and nothing answers, neither
// postgres nor the instance manager. Thaw resumes them.
func (r *PostgresPod) Freeze() error { return r.signal(syscall.SIGSTOP) }

// Thaw resumes the processes Freeze stopped.
func (r *PostgresPod) Thaw() error { return r.signal(syscall.SIGCONT) }

// signal sends sig to every process of the pod, twice over the list: a
// process forked while the first pass ran is in the second.
func (r *PostgresPod) signal(sig syscall.Signal) error {
	pids := r.pids()
	if len(pids) == 0 {
		return fmt.Errorf("pod %s has no process", r.Name)
	}
	for range 2 {
		for _, pid := range r.pids() {
			if err := syscall.Kill(pid, sig); err != nil && err != syscall.ESRCH {
				return fmt.Errorf("signal %v to process %d of pod %s: %w", sig, pid, r.Name, err)
			}
		}
	}
	return nil
}

// pids are the processes in the pod's network namespace.
func (r *PostgresPod) pids() []int {
	out, _ := exec.Command("ip", "netns", "pids", r.Host.Namespace).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ServiceLookup resolves <service>.<namespace>.svc (and .svc.cluster.local) to the
// ready addresses of the Service's EndpointSlices, as cluster DNS and a Service's
// virtual IP lead a client to them; other names resolve as usual. For a pgx client's
// LookupFunc: a client of the <cluster>-primary Service reaches the primary, and after
// a failover, at its next connect, the new one.
func ServiceLookup(c client.Reader) LookupFunc {
	return func(ctx context.Context, host string) ([]string, error) {
		name, rest, _ := strings.Cut(host, ".")
		ns, suffix, _ := strings.Cut(rest, ".")
		if suffix != "svc" && suffix != "svc.cluster.local" {
			return net.DefaultResolver.LookupHost(ctx, host)
		}
		var slices discoveryv1.EndpointSliceList
		if err := c.List(ctx, &slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
			return nil, err
		}
		var addrs []string
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					addrs = append(addrs, e.Addresses...)
				}
			}
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("Service %s/%s has no ready endpoint", ns, name)
		}
		return addrs, nil
	}
}

// removeSharedMemory removes the small System V segment a postgres killed with SIGKILL
// leaves behind (the pods share the host's IPC namespace): its key is the data
// directory's inode.
func removeSharedMemory(pgdata string) {
	var st syscall.Stat_t
	if err := syscall.Stat(pgdata, &st); err == nil {
		_ = exec.Command("ipcrm", "-M", fmt.Sprintf("0x%08x", uint32(st.Ino))).Run()
	}
}

// LookupFunc resolves a host name, as pgx's LookupFunc.
type LookupFunc = func(ctx context.Context, host string) ([]string, error)

// ResolvedURI is uri with its host resolved by lookup, for the clients that take a
// connection string only (pgwriter.Prepare and Check).
func ResolvedURI(ctx context.Context, uri string, lookup LookupFunc) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", err
	}
	addrs, err := lookup(ctx, u.Hostname())
	if err != nil {
		return "", err
	}
	u.Host = net.JoinHostPort(addrs[0], u.Port())
	return u.String(), nil
}

// CheckWrites compares a writer's log with its table, read through uri (resolved by
// lookup: the primary), retrying for a minute until the primary answers.
func CheckWrites(ctx context.Context, uri string, lookup LookupFunc, records []pgwriter.Record) (pgwriter.Report, error) {
	var rep pgwriter.Report
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		addr, err := ResolvedURI(ctx, uri, lookup)
		if err != nil {
			last = err
			return false, nil
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		rep, last = pgwriter.Check(cctx, addr, records)
		return last == nil, nil
	})
	if err != nil {
		return rep, fmt.Errorf("read the written rows back: %w (last: %v)", err, last)
	}
	return rep, nil
}

// WaitPostgresCluster polls PostgresCluster key until ok says it is there, and says
// what its status was when the timeout passes.
func WaitPostgresCluster(ctx context.Context, c client.Reader, key client.ObjectKey, timeout time.Duration, ok func(*postgresv1beta1.PostgresCluster) bool) (*postgresv1beta1.PostgresCluster, error) {
	var p postgresv1beta1.PostgresCluster
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, &p); err != nil {
			return false, nil
		}
		return ok(&p), nil
	})
	if err != nil {
		return nil, fmt.Errorf("PostgresCluster %s: not there within %s; status: %+v", key, timeout, p.Status)
	}
	return &p, nil
}
