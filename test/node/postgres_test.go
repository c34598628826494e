package node

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/image"
	"github.com/lookout-operator/lookout/internal/node"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// Generous on a busy 2-core machine: three instances start from one image (initdb, two
// pg_basebackup), and a killed container is restarted by the kubelet and rewinds.
const (
	pgStartDeadline    = 8 * time.Minute
	pgFailoverDeadline = 3 * time.Minute
	pgRejoinDeadline   = 5 * time.Minute
)

// TestPGOQuickstartOnARealKubeletFailsOverWhenCtrKillsThePrimarysContainer runs PGO's
// quickstart PostgresCluster (examples-postgres/hippo.yaml, unchanged: 3 instances,
// synchronous replication) on the kubelet, through the operator installed there as
// the PostgreSQL-only install's Deployment: its pods run lookout-postgres (built here,
// imported into containerd) with claims bound to hostPath volumes the test made. A
// client writes through the -primary Service while the primary's container is killed
// with ctr, as a crash would kill it; a replica takes over, the kubelet restarts the
// old primary's container, which rejoins as a replica, and no acknowledged write is lost.
func TestPGOQuickstartOnARealKubeletFailsOverWhenCtrKillsThePrimarysContainer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the node test must run as root (containerd, network namespaces, cgroups)")
	}
	if err := node.Check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	// Not t.TempDir: the volumes are removed after the node has stopped (below).
	work, err := os.MkdirTemp("", "lookout-pgnode-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	began := time.Now()
	env, err := node.StartPostgresEnv(ctx, root, work, 15, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	logImage(t, env.PostgresImages)
	t.Logf("control plane, node and operator up in %s", time.Since(began).Round(time.Millisecond))
	// The operator runs from its image, which has no PostgreSQL, as the PostgreSQL-only
	// install's Deployment on the kubelet.
	for _, p := range env.OperatorPods {
		if p.Spec.NodeName != env.Node.Name || p.Spec.Containers[0].Image != env.PostgresImages.Operator {
			t.Errorf("operator pod %s on node %q runs %q, want %s on %s", p.Name, p.Spec.NodeName, p.Spec.Containers[0].Image, env.PostgresImages.Operator, env.Node.Name)
		}
	}

	const ns, cluster, user, db = "pg-node", "hippo", "rhino", "zoo"
	must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	hostPathVolumes(t, env, filepath.Join(work, "volumes"), 3)
	applied := time.Now()
	if out, err := env.Kubectl(ctx, "apply", "-n", ns, "-f", filepath.Join(root, "examples-postgres", "hippo.yaml")); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("%s", out)
	}
	defer deleteCluster(t, env, ns, cluster)
	diagnose := func() string { return diagnostics(env, ns) }

	pgc := waitCluster(t, env, ns, cluster, pgStartDeadline, "3/3 instances ready with a primary and a synchronous standby", diagnose, func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "3/3" && c.Status.Primary != "" && len(c.Status.Replicas) == 2 && len(c.Status.SynchronousStandbys) > 0
	})
	primary := pgc.Status.Primary
	t.Logf("3 instances ready on the kubelet with primary %s, %s after kubectl apply (load %s)", primary, time.Since(applied).Round(time.Second), loadavg())
	pods := podsOf(t, env, ns, cluster)
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != env.Node.Name || containerOf(p).Image != env.PostgresImages.Postgres {
			t.Errorf("pod %s on node %q runs %q, want %s on %s", p.Name, p.Spec.NodeName, containerOf(p).Image, env.PostgresImages.Postgres, env.Node.Name)
		}
	}

	// The user Secret's uri names the -primary Service; the host resolves it to the
	// Service's ready endpoint, as cluster DNS and kube-proxy would lead a client.
	var secret corev1.Secret
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: pgrender.UserSecretName(cluster, user)}, &secret))
	uri := string(secret.Data["uri"])
	lookup := devenv.ServiceLookup(env.Client)
	addr, err := devenv.ResolvedURI(ctx, uri, lookup)
	must(t, err)
	if u, err := url.Parse(addr); err != nil || u.Hostname() != primaryIP(t, env, ns, primary) || u.Path != "/"+db {
		t.Fatalf("the Secret's uri %q leads to %q, not to database %s on the primary %s", uri, addr, db, primary)
	}
	must(t, pgwriter.Prepare(ctx, addr))
	w := &pgwriter.Writer{ConnString: uri, Lookup: lookup, Interval: 20 * time.Millisecond}
	stop := w.Start(ctx)
	defer stop()
	waitAcked(t, w, 20, "first acknowledged writes")

	// The crash: SIGKILL to the primary's container, through containerd.
	before := podNamed(pods, primary)
	id := strings.TrimPrefix(containerOf(before).ContainerID, "containerd://")
	if id == "" || id == containerOf(before).ContainerID {
		t.Fatalf("primary %s has no containerd container id: %q", primary, containerOf(before).ContainerID)
	}
	killed := time.Now()
	if out, err := env.Node.Ctr(ctx, "tasks", "kill", "-s", "SIGKILL", id); err != nil {
		t.Fatalf("ctr -n k8s.io tasks kill -s SIGKILL %s: %v\n%s", id, err, out)
	}
	t.Logf("ctr -n k8s.io tasks kill -s SIGKILL %s (the database container of primary %s)", id, primary)

	pgc = waitCluster(t, env, ns, cluster, pgFailoverDeadline, "a new primary and the last failover with its new timeline", diagnose, func(c *postgresv1beta1.PostgresCluster) bool {
		f := c.Status.LastFailover
		return c.Status.Primary != "" && c.Status.Primary != primary && f != nil && f.To == c.Status.Primary && f.Duration != "" && f.Timeline > 1
	})
	newPrimary := pgc.Status.Primary
	t.Logf("status: primary %s, last failover %+v, %s after the kill", newPrimary, *pgc.Status.LastFailover, time.Since(killed).Round(time.Millisecond))

	pgc = waitCluster(t, env, ns, cluster, pgRejoinDeadline, "the old primary back as a streaming replica, 3/3 ready", diagnose, func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "3/3" && c.Status.Primary == newPrimary && slices.ContainsFunc(c.Status.Replicas, func(r postgresv1beta1.ReplicaStatus) bool {
			return r.Name == primary && r.State == "streaming"
		})
	})
	t.Logf("back to full strength %s after the kill", time.Since(killed).Round(time.Second))
	// The kubelet restarted the container in the same pod: what kubectl shows as RESTARTS.
	after := podNamed(podsOf(t, env, ns, cluster), primary)
	if after.UID != before.UID || containerOf(after).RestartCount != containerOf(before).RestartCount+1 || containerOf(after).ContainerID == containerOf(before).ContainerID {
		t.Errorf("pod %s: uid %s → %s, restarts %d → %d, container %s → %s; want the same pod with its container restarted once",
			primary, before.UID, after.UID, containerOf(before).RestartCount, containerOf(after).RestartCount, containerOf(before).ContainerID, containerOf(after).ContainerID)
	}
	for _, p := range podsOf(t, env, ns, cluster) {
		want := pgcontract.RoleReplica
		if p.Name == newPrimary {
			want = pgcontract.RolePrimary
		}
		if got := p.Labels[pgcontract.LabelRole]; got != want {
			t.Errorf("pod %s is labelled %s=%q, want %q", p.Name, pgcontract.LabelRole, got, want)
		}
	}

	// Writes go on through the Service, now to the new primary.
	waitAcked(t, w, pgwriter.CountAcked(w.Records())+20, "acknowledged writes after the old primary rejoined")
	stop()
	records := w.Records()
	rep, err := devenv.CheckWrites(ctx, uri, lookup, records)
	must(t, err)
	fos := pgwriter.Failovers(records)
	t.Logf("writes: %s; %d change(s) of timeline", rep, len(fos))
	for _, problem := range pgharness.Problems(rep, fos) {
		t.Error(problem)
	}
	if len(fos) != 1 {
		t.Fatalf("the writes show %d changes of timeline, want 1: %+v", len(fos), fos)
	}
	// Where the time went: the kill to the promotion (the replicas see the loss, then
	// promote: the status's duration), the promotion to the client's first write on the
	// new timeline (labels, the -primary endpoints, the kubelet's readiness probe).
	promoted := pgc.Status.LastFailover.Time.Time
	t.Logf("failover on the node as the client saw it: %s from the last acknowledged write on timeline %d to the first on %d; kill → promotion %s (promotion %s after the loss was seen), promotion → first write %s (load %s)",
		fos[0].Duration().Round(time.Millisecond), fos[0].OldTimeline, fos[0].NewTimeline, promoted.Sub(killed).Round(time.Millisecond),
		pgc.Status.LastFailover.Duration, fos[0].FirstNew.Sub(promoted).Round(time.Millisecond), loadavg())
	restarted := containerOf(after).State.Running
	if restarted != nil {
		t.Logf("the kubelet restarted %s's container %s after the kill (its start time, to the second)", primary, restarted.StartedAt.Sub(killed).Round(time.Second))
	}
	t.Logf("the instance managers' logs from the kill (+0) to the first write on the new timeline:\n%s",
		timeline(managerLines(env, ns, killed.Add(-time.Second), fos[0].FirstNew.Add(time.Second)), killed, 200))

	// PgBouncer from the same image, and a switchover through it.
	switchoverThroughThePooler(t, env, ns, cluster, user, diagnose)
	out, err := env.Kubectl(ctx, "get", "pods,postgresclusters", "-n", ns, "-o", "wide")
	must(t, err)
	t.Log("\n" + string(out))
}

// hostPathVolumes creates n PersistentVolumes of 1Gi on directories under dir, owned by
// the image's postgres user (the kubelet applies no fsGroup to a hostPath volume),
// without a storage class: the claims of hippo.yaml, which name none, bind to them.
func hostPathVolumes(t *testing.T, env *node.PostgresEnv, dir string, n int) {
	t.Helper()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprint(i))
		must(t, os.MkdirAll(p, 0o700))
		must(t, os.Chown(p, image.PostgresAccount.ID, image.PostgresAccount.ID))
		must(t, env.Client.Create(context.Background(), &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pg-node-%d", i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: p, Type: ptr.To(corev1.HostPathDirectory)}},
			},
		}))
	}
}

// deleteCluster deletes the PostgresCluster and waits until the kubelet has torn its
// pods down, before the node stops.
func deleteCluster(t *testing.T, env *node.PostgresEnv, ns, name string) {
	ctx := context.Background()
	c := &postgresv1beta1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Delete(ctx, c); err != nil {
		t.Error(err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{pgcontract.LabelCluster: name}); err != nil {
			return false, nil
		}
		return len(list.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("the cluster's pods are not gone 3 minutes after it was deleted: %v", err)
	}
}

func waitCluster(t *testing.T, env *node.PostgresEnv, ns, name string, deadline time.Duration, what string, diagnose func() string, ok func(*postgresv1beta1.PostgresCluster) bool) *postgresv1beta1.PostgresCluster {
	t.Helper()
	c, err := devenv.WaitPostgresCluster(context.Background(), env.Client, client.ObjectKey{Namespace: ns, Name: name}, deadline, ok)
	if err != nil {
		t.Fatalf("no %s: %v\n%s", what, err, diagnose())
	}
	return c
}

// diagnostics are what a failed wait shows: the objects, the end of the instance
// managers' logs on the node, the operator's and the kubelet's.
func diagnostics(env *node.PostgresEnv, ns string) string {
	var b strings.Builder
	out, err := env.Kubectl(context.Background(), "get", "pods,pvc,postgresclusters", "-n", ns, "-o", "wide")
	fmt.Fprintf(&b, "%s%v\n", out, err)
	logs, _ := filepath.Glob(filepath.Join(env.Node.PodLogsDir(), ns+"_*", pgrender.ContainerName, "*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		fmt.Fprintf(&b, "--- %s (end)\n%s\n", l, devenv.LastBytes(data, 3000))
	}
	fmt.Fprintf(&b, "--- operator (end)\n%s\n--- kubelet (end)\n%s\n", env.OperatorLog(), env.Node.KubeletLog())
	return b.String()
}

func logImage(t *testing.T, imgs node.PostgresImages) {
	for _, f := range imgs.Files {
		if st, err := os.Stat(f); err == nil && strings.Contains(f, image.PostgresName) {
			t.Logf("%s: %s, %.1f MiB", imgs.Postgres, filepath.Base(f), float64(st.Size())/(1<<20))
		}
	}
}

func podsOf(t *testing.T, env *node.PostgresEnv, ns, cluster string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	must(t, env.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{pgcontract.LabelCluster: cluster}))
	if len(list.Items) != 3 {
		t.Errorf("%d pods of cluster %s, want 3", len(list.Items), cluster)
	}
	return list.Items
}

func podNamed(pods []corev1.Pod, name string) *corev1.Pod {
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i]
		}
	}
	return &corev1.Pod{}
}

// containerOf is the status of the pod's PostgreSQL container.
func containerOf(p *corev1.Pod) corev1.ContainerStatus {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == pgrender.ContainerName {
			return c
		}
	}
	return corev1.ContainerStatus{}
}

func primaryIP(t *testing.T, env *node.PostgresEnv, ns, name string) string {
	t.Helper()
	var p corev1.Pod
	must(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p))
	return p.Status.PodIP
}

// waitAcked waits until the writer has n acknowledged writes, and fails with the last
// error it met.
func waitAcked(t *testing.T, w *pgwriter.Writer, n int, what string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return pgwriter.CountAcked(w.Records()) >= n, nil
	})
	if err == nil {
		return
	}
	rs := w.Records()
	last := "none"
	for i := len(rs) - 1; i >= 0 && last == "none"; i-- {
		if rs[i].Err != "" {
			last = rs[i].Outcome.String() + ": " + rs[i].Err
		}
	}
	t.Fatalf("no %s within a minute: %d acknowledged of %d, last error %s", what, pgwriter.CountAcked(rs), len(rs), last)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
