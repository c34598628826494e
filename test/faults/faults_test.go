// Package faults runs the operator binary against a real kube-apiserver, etcd and
// kube-controller-manager and breaks things on purpose: the operator killed mid-churn,
// the leader killed with a standby waiting. Each test ends by proving that the generated
// objects are exactly what a clean run writes: a fresh operator started on them sends no
// write.
package faults

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/scheme"
)

var (
	testCtx = context.Background()
	cp      *controlplane.ControlPlane
	k8s     client.Client
	bins    devenv.Binaries
	work    string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	var err error
	if work, err = os.MkdirTemp("", "lookout-faults-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)
	if bins, err = devenv.Build(testCtx, root, work, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cp, err = controlplane.Start(testCtx, controlplane.Options{Log: os.Stderr, CRDDir: filepath.Join(root, "config", "crd")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	defer cp.Stop()
	if k8s, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Short leases, so that a standby takes over a killed leader in seconds.
var fastLease = []string{"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms"}

type operator struct {
	*devenv.Operator
	metrics string // URL of its /metrics
}

func startOperator(t *testing.T, name string, args ...string) *operator {
	t.Helper()
	port, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args = append(append(fastLease, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port)), args...)
	op, err := devenv.StartOperator(testCtx, bins.Lookout, cp.KubeconfigPath, filepath.Join(work, t.Name()+"-"+name+".log"), args...)
	if err != nil {
		t.Fatalf("start operator %s: %v", name, err)
	}
	t.Cleanup(func() {
		select {
		case <-op.Exited():
		default:
			op.Stop()
		}
		if t.Failed() {
			b, _ := os.ReadFile(op.LogPath)
			t.Logf("--- operator %s log (last 3 KiB) ---\n%s", name, devenv.LastBytes(b, 3072))
		}
	})
	return &operator{Operator: op, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port)}
}

// metric is the sum of the samples of name whose labels include every one of match.
func (o *operator) metric(name string, match ...string) float64 {
	resp, err := http.Get(o.metrics) //nolint:noctx // local test
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && strings.Contains(line, m)
		}
		if !ok {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func newNamespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(name) > 60 {
		name = name[:60]
	}
	if err := k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	return name
}

func newPrometheus(ns string) *monitoringv1.Prometheus {
	return &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		}},
	}
}

func newServiceMonitor(ns string, i int) *monitoringv1.ServiceMonitor {
	return &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("sm-%04d", i), Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i)}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics"}},
		},
	}
}

// createMonitors creates monitors [from, to) with a few writers; after is called once
// `at` of them exist (nil: never).
func createMonitors(t *testing.T, ns string, from, to, at int, after func()) {
	t.Helper()
	var (
		mu      sync.Mutex
		created int
		once    sync.Once
		wg      sync.WaitGroup
		errs    = make(chan error, 8)
		next    = make(chan int)
	)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := k8s.Create(testCtx, newServiceMonitor(ns, i)); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				created++
				n := created
				mu.Unlock()
				if after != nil && n == at {
					once.Do(after)
				}
			}
		})
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("create ServiceMonitor: %v", err)
	default:
	}
}

// waitConverged waits until the config holds every monitor's job and every monitor
// carries an Accepted=True binding for the Prometheus, and returns when that happened.
func waitConverged(t *testing.T, ns string, monitors int, timeout time.Duration) time.Time {
	t.Helper()
	err := wait.PollUntilContextTimeout(testCtx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if jobs(ctx, ns) != monitors {
			return false, nil
		}
		var l monitoringv1.ServiceMonitorList
		if err := k8s.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, err
		}
		accepted := 0
		for _, sm := range l.Items {
			for _, b := range sm.Status.Bindings {
				if b.Name == "main" && len(b.Conditions) > 0 && b.Conditions[0].Status == monitoringv1.ConditionTrue {
					accepted++
				}
			}
		}
		return accepted == monitors, nil
	})
	if err != nil {
		t.Fatalf("not converged on %d monitors within %v: %v", monitors, timeout, err)
	}
	return time.Now()
}

// generated is the resourceVersion of every object the operator generates for the
// Prometheus: unchanged means not written.
func generated(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var sts appsv1.StatefulSetList
	var secrets corev1.SecretList
	var cms corev1.ConfigMapList
	var svcs corev1.ServiceList
	for _, l := range []client.ObjectList{&sts, &secrets, &cms, &svcs} {
		if err := k8s.List(testCtx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range sts.Items {
		out["StatefulSet/"+o.Name] = o.ResourceVersion
	}
	for _, o := range secrets.Items {
		out["Secret/"+o.Name] = o.ResourceVersion
	}
	for _, o := range cms.Items {
		if strings.HasPrefix(o.Name, "prometheus-") {
			out["ConfigMap/"+o.Name] = o.ResourceVersion
		}
	}
	for _, o := range svcs.Items {
		out["Service/"+o.Name] = o.ResourceVersion
	}
	return out
}

// assertCleanRunWritesNothing starts a fresh operator on the converged state, makes it
// reconcile the Prometheus (a label change: no spec change) and checks it writes none of
// the generated objects: they are byte for byte what a clean run renders.
func assertCleanRunWritesNothing(t *testing.T, ns string) {
	t.Helper()
	before := generated(t, ns)
	fresh := startOperator(t, "fresh")
	var p monitoringv1.Prometheus
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "main"}, &p); err != nil {
		t.Fatal(err)
	}
	// Its first reconcile comes once it leads; a label change (no spec change) makes sure
	// one starts after this point, and the reconcile counter says when it has finished.
	err := wait.PollUntilContextTimeout(testCtx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return fresh.metric("controller_runtime_reconcile_total", `controller="prometheus"`, `result="success"`) >= 1, nil
	})
	if err != nil {
		t.Fatalf("the fresh operator did not reconcile: %v", err)
	}
	done := fresh.metric("controller_runtime_reconcile_total", `controller="prometheus"`)
	patch := client.MergeFrom(p.DeepCopy())
	p.Labels = map[string]string{"fault-check": "1"}
	if err := k8s.Patch(testCtx, &p, patch); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(testCtx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return fresh.metric("controller_runtime_reconcile_total", `controller="prometheus"`) > done &&
			fresh.metric("controller_runtime_active_workers", `controller="prometheus"`) == 0, nil
	})
	if err != nil {
		t.Fatalf("the fresh operator did not reconcile after the label change: %v", err)
	}
	after := generated(t, ns)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("a clean run rewrote %s (resourceVersion %s → %s): the state the fault left differs from a clean render", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("a clean run created %s", k)
		}
	}
}

// TestAnOperatorKilledMidChurnIsResumedByTheNextOne: SIGKILL while monitors are being
// created (a reconcile, a config write or a status write may be cut in half); the next
// operator converges on every monitor, and a clean run afterwards writes nothing.
func TestAnOperatorKilledMidChurnIsResumedByTheNextOne(t *testing.T) {
	const monitors = 300
	ns := newNamespace(t)
	if err := k8s.Create(testCtx, newPrometheus(ns)); err != nil {
		t.Fatal(err)
	}
	first := startOperator(t, "first")
	createMonitors(t, ns, 0, monitors/2, monitors/4, first.Kill)
	select {
	case <-first.Exited():
	default:
		t.Fatal("the first operator was not killed")
	}
	second := startOperator(t, "second")
	createMonitors(t, ns, monitors/2, monitors, 0, nil)
	waitConverged(t, ns, monitors, 2*time.Minute)
	second.Stop()
	assertCleanRunWritesNothing(t, ns)
}

// TestTheStandbyTakesOverWhenTheLeaderIsKilled: two replicas; the leader is killed
// with SIGKILL (no lease release) during churn of 1,000 monitors; the standby takes the
// lease when it expires and converges. The time from the kill to convergence is logged;
// the bound asserted is generous (the lease here is 4 s).
func TestTheStandbyTakesOverWhenTheLeaderIsKilled(t *testing.T) {
	const monitors = 1000
	ns := newNamespace(t)
	if err := k8s.Create(testCtx, newPrometheus(ns)); err != nil {
		t.Fatal(err)
	}
	a := startOperator(t, "a")
	b := startOperator(t, "b")
	leader := func() *operator {
		for _, op := range []*operator{a, b} {
			if op.metric("leader_election_master_status") == 1 {
				return op
			}
		}
		return nil
	}
	var lead *operator
	if err := wait.PollUntilContextTimeout(testCtx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		lead = leader()
		return lead != nil, nil
	}); err != nil {
		t.Fatalf("no leader: %v", err)
	}
	standby := a
	if lead == a {
		standby = b
	}
	var killedAt time.Time
	createMonitors(t, ns, 0, monitors, monitors/2, func() {
		lead.Kill()
		killedAt = time.Now()
	})
	convergedAt := waitConverged(t, ns, monitors, 2*time.Minute)
	took := convergedAt.Sub(killedAt)
	// The time is reported, not asserted (a loaded machine stretches it; the
	// bound that matters is waitConverged's): the standby converges at all.
	t.Logf("leader killed → standby converged on %d monitors in %v", monitors, took.Round(time.Millisecond))
	if standby.metric("leader_election_master_status") != 1 {
		t.Errorf("the standby does not lead")
	}
	standby.Stop()
	assertCleanRunWritesNothing(t, ns)
}

// jobs counts the ServiceMonitor jobs in the config and its pieces (a large config moves
// its jobs into the Secrets prometheus-main-scrape-<i>).
func jobs(ctx context.Context, ns string) int {
	var l corev1.SecretList
	if err := k8s.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return -1
	}
	n := 0
	for _, s := range l.Items {
		if !strings.HasPrefix(s.Name, "prometheus-main") {
			continue
		}
		for key, v := range s.Data {
			if !strings.HasSuffix(key, ".gz") {
				continue
			}
			zr, err := gzip.NewReader(bytes.NewReader(v))
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(zr)
			n += strings.Count(string(b), "job_name: serviceMonitor/"+ns+"/")
		}
	}
	return n
}

// TestTheOperatorRidesOutAnAPIServerRestartAndACompactedHistory: churn, then
// kube-apiserver goes away and etcd's history is compacted while it is down, so every
// watch the operator resumes gets 410 Gone and must list again; more churn after it is
// back. The operator converges on every monitor, and a clean run writes nothing.
func TestTheOperatorRidesOutAnAPIServerRestartAndACompactedHistory(t *testing.T) {
	const monitors = 300
	ns := newNamespace(t)
	if err := k8s.Create(testCtx, newPrometheus(ns)); err != nil {
		t.Fatal(err)
	}
	// A lease that outlives the restart: a leader that cannot renew within its deadline
	// exits on purpose (its Deployment restarts it), which is another test's subject.
	op := startOperator(t, "survivor", "--leader-election-lease-duration=60s", "--leader-election-renew-deadline=45s", "--leader-election-retry-period=2s")
	createMonitors(t, ns, 0, monitors/2, 0, nil)
	if err := cp.RestartAPIServer(testCtx, cp.CompactEtcd); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	createMonitors(t, ns, monitors/2, monitors, 0, nil)
	waitConverged(t, ns, monitors, 2*time.Minute)
	select {
	case <-op.Exited():
		t.Fatal("the operator exited during the apiserver restart")
	default:
	}
	op.Stop()
	assertCleanRunWritesNothing(t, ns)
}
