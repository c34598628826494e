package pge2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

const (
	clusterName = "hippo"
	userName    = "rhino"
	dbName      = "zoo"
)

// Generous on a busy 2-core machine: three initdb/pg_basebackup runs, and a
// replacement pod that rewinds before it follows.
const (
	startDeadline    = 5 * time.Minute
	failoverDeadline = 3 * time.Minute
	rejoinDeadline   = 4 * time.Minute
)

// TestPGOManifestRunsThreeInstancesAndFailsOverWithoutLosingAWrite applies PGO's
// quickstart manifest (synchronous replication on, as PGO's HA page turns it on)
// unchanged and checks what its user would: three instances ready with one primary, the labels, the -primary Service and the user Secret; then kills the
// primary's processes while a client writes through the Secret's uri, and checks that a
// replica took over, the old primary came back as a replica, and no acknowledged write
// was lost.
func TestPGOManifestRunsThreeInstancesAndFailsOverWithoutLosingAWrite(t *testing.T) {
	ns := fmt.Sprintf("pge2e-%d", time.Now().UnixNano()%1e6)
	must(t, k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	kc(t, "apply", "-n", ns, "-f", filepath.Join("..", "..", "examples-postgres", "hippo.yaml"))

	pods, err := devenv.RunPostgresPods(testCtx, k8s, cp, bins, network, ns, clusterName, filepath.Join(work, ns))
	must(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			logPods(t, pods, ns)
		}
		pods.Stop()
	})

	start := time.Now()
	// The manifest asks for synchronous replication: commits wait for a
	// standby once one streams, which is what makes 0 lost writes a promise.
	pgc := waitCluster(t, ns, startDeadline, "3/3 instances ready with a primary and a synchronous standby", func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "3/3" && c.Status.Primary != "" && len(c.Status.Replicas) == 2 && len(c.Status.SynchronousStandbys) > 0
	}, pods)
	t.Logf("3 instances ready with primary %s %s after kubectl apply (machine load: %s)", pgc.Status.Primary, time.Since(start).Round(time.Second), loadavg())

	// What kubectl shows.
	out := kc(t, "get", "pgc", clusterName, "-n", ns)
	if !strings.Contains(out, "3/3") || !strings.Contains(out, pgc.Status.Primary) || !strings.Contains(out, "15") {
		t.Errorf("kubectl get pgc does not show READY 3/3, PRIMARY %s and VERSION 15:\n%s", pgc.Status.Primary, out)
	}
	primary := checkRoles(t, ns, pgc.Status.Primary)
	checkPrimaryEndpoints(t, ns, primary)

	// The user Secret, as an application reads it.
	var secret corev1.Secret
	must(t, k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: pgrender.UserSecretName(clusterName, userName)}, &secret))
	uri := string(secret.Data["uri"])
	if u, err := url.Parse(uri); err != nil || u.Hostname() != pgrender.PrimaryServiceName(clusterName)+"."+ns+".svc" || u.Path != "/"+dbName || u.User.Username() != userName {
		t.Fatalf("Secret %s: uri %q does not name user %s, database %s at the -primary Service", secret.Name, uri, userName, dbName)
	}
	lookup := devenv.ServiceLookup(k8s)
	checkConnects(t, uri, lookup)
	checkLibpq(t, ns, &secret, lookup)
	must(t, prepareWrites(uri, lookup))

	// A client writes through the Secret's uri throughout the fault.
	w := &pgwriter.Writer{ConnString: uri, Lookup: lookup, Interval: 20 * time.Millisecond}
	stop := startWriter(w)
	defer stop()
	waitFor(t, 60*time.Second, "the writer's first acknowledged writes", func() (bool, string) {
		return pgwriter.CountAcked(w.Records()) >= 20, lastError(w.Records())
	})

	// SIGKILL of every process of the primary's pod.
	victim := pods.Pod(primary)
	if victim == nil {
		t.Fatalf("the primary %s is not among the running pods", primary)
	}
	killed := time.Now()
	must(t, victim.Kill(testCtx))
	t.Logf("killed every process of primary %s", primary)

	// The new primary reports its new timeline once its promotion has ended: wait for
	// the status to show it.
	pgc = waitCluster(t, ns, failoverDeadline, "a new primary and the last failover with its duration and new timeline", func(c *postgresv1beta1.PostgresCluster) bool {
		f := c.Status.LastFailover
		return c.Status.Primary != "" && c.Status.Primary != primary && f != nil && f.To == c.Status.Primary && f.Duration != "" && f.Timeline > 1
	}, pods)
	newPrimary := pgc.Status.Primary
	t.Logf("status: primary %s, last failover %+v, %s after the kill", newPrimary, *pgc.Status.LastFailover, time.Since(killed).Round(time.Millisecond))

	// The old primary's pod is replaced by its StatefulSet and rejoins as a replica.
	pgc = waitCluster(t, ns, rejoinDeadline, "the old primary back as a replica, 3/3 ready", func(c *postgresv1beta1.PostgresCluster) bool {
		if c.Status.Ready != "3/3" || c.Status.Primary != newPrimary {
			return false
		}
		return slices.ContainsFunc(c.Status.Replicas, func(r postgresv1beta1.ReplicaStatus) bool {
			return r.Name == primary && r.State == "streaming"
		})
	}, pods)
	t.Logf("back to full strength %s after the kill", time.Since(killed).Round(time.Second))
	checkRoles(t, ns, newPrimary)
	checkPrimaryEndpoints(t, ns, newPrimary)

	// Writes keep going through the Service to the new primary.
	mark := pgwriter.CountAcked(w.Records())
	waitFor(t, 60*time.Second, "acknowledged writes after the old primary rejoined", func() (bool, string) {
		return pgwriter.CountAcked(w.Records()) > mark+20, lastError(w.Records())
	})
	stop()
	records := w.Records()
	checkWriteLog(t, uri, lookup, records, "writes")
	fos := pgwriter.Failovers(records)
	if len(fos) != 1 {
		t.Fatalf("the writes show %d changes of timeline, want 1: %+v", len(fos), fos)
	}
	if len(fos[0].SplitBrain) > 0 {
		t.Errorf("writes acknowledged on the old timeline after the first on the new one: %v", fos[0].SplitBrain)
	}
	t.Logf("failover as the client saw it: %s from the last acknowledged write on timeline %d to the first on %d (status says %s; machine load: %s)",
		fos[0].Duration().Round(time.Millisecond), fos[0].OldTimeline, fos[0].NewTimeline, pgc.Status.LastFailover.Duration, loadavg())

	checkRollingRestart(t, ns, uri, lookup, &secret, pods, newPrimary)
}

// checkWriteLog compares the writer's id-tagged log with the table and
// fails on an acknowledged write that is missing or a failed one that is there.
func checkWriteLog(t *testing.T, uri string, lookup devenv.LookupFunc, records []pgwriter.Record, what string) {
	t.Helper()
	rep, err := devenv.CheckWrites(testCtx, uri, lookup, records)
	must(t, err)
	t.Logf("%s: %s", what, rep)
	if len(rep.Lost) > 0 {
		t.Errorf("%d acknowledged writes lost: %v", len(rep.Lost), rep.Lost)
	}
	if len(rep.Phantom) > 0 {
		t.Errorf("%d writes that failed are in the table: %v", len(rep.Phantom), rep.Phantom)
	}
}

// checkRoles checks that the primary's pod is labelled role=master and every other pod
// of the cluster role=replica, and returns the primary's pod name.
func checkRoles(t *testing.T, ns, primary string) string {
	t.Helper()
	var list corev1.PodList
	must(t, k8s.List(testCtx, &list, client.InNamespace(ns), client.MatchingLabels{pgcontract.LabelCluster: clusterName}))
	if len(list.Items) != 3 {
		t.Errorf("%d pods, want 3", len(list.Items))
	}
	found := false
	for _, p := range list.Items {
		want := pgcontract.RoleReplica
		if p.Name == primary {
			want, found = pgcontract.RolePrimary, true
		}
		if got := p.Labels[pgcontract.LabelRole]; got != want {
			t.Errorf("pod %s is labelled %s=%q, want %q", p.Name, pgcontract.LabelRole, got, want)
		}
	}
	if !found {
		t.Errorf("status.primary %s is no pod of the cluster", primary)
	}
	return primary
}

// checkPrimaryEndpoints waits until the -primary Service's endpoints are the primary
// pod's address alone (the EndpointSlice controller follows the label).
func checkPrimaryEndpoints(t *testing.T, ns, primary string) {
	t.Helper()
	waitFor(t, 60*time.Second, "the -primary Service's endpoints to be the primary's address alone", func() (bool, string) {
		var pod corev1.Pod
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: primary}, &pod); err != nil {
			return false, err.Error()
		}
		var list discoveryv1.EndpointSliceList
		if err := k8s.List(testCtx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: pgrender.PrimaryServiceName(clusterName)}); err != nil {
			return false, err.Error()
		}
		var addrs []string
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					addrs = append(addrs, e.Addresses...)
				}
			}
		}
		return len(addrs) == 1 && addrs[0] == pod.Status.PodIP, fmt.Sprintf("ready endpoints %v, primary %s at %s", addrs, primary, pod.Status.PodIP)
	})
}

// checkConnects connects with the Secret's uri and writes and reads a row.
func checkConnects(t *testing.T, uri string, lookup devenv.LookupFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx, 30*time.Second)
	defer cancel()
	conn, err := connect(ctx, uri, lookup)
	if err != nil {
		t.Fatalf("connect with the Secret's uri: %v", err)
	}
	defer conn.Close(ctx)
	var user, db string
	must(t, conn.QueryRow(ctx, `SELECT current_user, current_database()`).Scan(&user, &db))
	if user != userName || db != dbName {
		t.Errorf("connected as %s to %s, want %s to %s", user, db, userName, dbName)
	}
	_, err = conn.Exec(ctx, `CREATE TABLE animals (name text PRIMARY KEY); INSERT INTO animals VALUES ('hippo'), ('rhino')`)
	if err != nil {
		t.Fatalf("user %s cannot write in database %s: %v", userName, dbName, err)
	}
}

// checkLibpq connects as a libpq application configured from the Secret's
// keys does: TLS verified against the cluster's CA for the Service's name,
// and SCRAM with channel binding required, which libpq's default (prefer)
// uses whenever the server offers it; so the Secret's keys work without
// connection options of their own.
func checkLibpq(t *testing.T, ns string, secret *corev1.Secret, lookup devenv.LookupFunc) {
	t.Helper()
	host := string(secret.Data["host"])
	addrs, err := lookup(testCtx, host)
	if err != nil || len(addrs) == 0 {
		t.Fatalf("look up %s: %v %v", host, addrs, err)
	}
	if out, err := psql(ns, secret, host, addrs[0], "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"); err != nil || out != "t" {
		t.Fatalf("libpq with the Secret's keys, verify-full and channel_binding=require: %v\n%s", err, out)
	}
}

// psql runs query with libpq's psql as the Secret's user on host (a name
// the cluster's certificate covers) at addr, and returns its trimmed output.
func psql(ns string, secret *corev1.Secret, host, addr, query string) (string, error) {
	var cert corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: pgrender.ClusterCertSecretName(clusterName)}, &cert); err != nil {
		return "", err
	}
	ca, err := os.CreateTemp("", "pge2e-ca-*.crt")
	if err != nil {
		return "", err
	}
	defer os.Remove(ca.Name())
	if _, err := ca.Write(cert.Data[pgrender.KeyCACert]); err != nil {
		return "", err
	}
	ca.Close()
	conninfo := fmt.Sprintf("host=%s hostaddr=%s port=%s user=%s dbname=%s sslmode=verify-full sslrootcert=%s channel_binding=require connect_timeout=10",
		host, addr, secret.Data["port"], secret.Data["user"], secret.Data["dbname"], ca.Name())
	ctx, cancel := context.WithTimeout(testCtx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/lib/postgresql/15/bin/psql", conninfo, "-XAtc", query)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+string(secret.Data["password"]))
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func connect(ctx context.Context, uri string, lookup devenv.LookupFunc) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(uri)
	if err != nil {
		return nil, err
	}
	cfg.LookupFunc = lookup
	return pgx.ConnectConfig(ctx, cfg)
}

// prepareWrites creates the writer's table (pgwriter.Prepare, through the Service).
func prepareWrites(uri string, lookup devenv.LookupFunc) error {
	addr, err := devenv.ResolvedURI(testCtx, uri, lookup)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(testCtx, 30*time.Second)
	defer cancel()
	return pgwriter.Prepare(ctx, addr)
}

// waitCluster waits until ok, and fails with the cluster's status and the pods' errors
// when the deadline passes.
func waitCluster(t *testing.T, ns string, deadline time.Duration, what string, ok func(*postgresv1beta1.PostgresCluster) bool, pods *devenv.PostgresPods) *postgresv1beta1.PostgresCluster {
	t.Helper()
	c, err := devenv.WaitPostgresCluster(testCtx, k8s, client.ObjectKey{Namespace: ns, Name: clusterName}, deadline, ok)
	if err != nil {
		t.Fatalf("no %s: %v; pod errors: %v", what, err, pods.Errors())
	}
	return c
}

func waitFor(t *testing.T, deadline time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(testCtx, 100*time.Millisecond, deadline, true, func(context.Context) (bool, error) {
		var done bool
		done, last = ok()
		return done, nil
	})
	if err != nil {
		t.Fatalf("no %s within %s (last: %s)", what, deadline, last)
	}
}

// startWriter runs w until the returned stop (which may be called again).
func startWriter(w *pgwriter.Writer) (stop func()) {
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	return func() {
		cancel()
		<-done
	}
}

func lastError(records []pgwriter.Record) string {
	for i := len(records) - 1; i >= 0; i-- {
		if records[i].Err != "" {
			return records[i].Err
		}
	}
	return ""
}

// kc runs kubectl against the control plane and returns its output.
func kc(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.KubeconfigPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// logPods logs the pods and the last lines of each instance manager's log.
func logPods(t *testing.T, pods *devenv.PostgresPods, ns string) {
	t.Logf("kubectl get pods:\n%s", kc(t, "get", "pods", "-n", ns, "-o", "wide", "--show-labels"))
	logs, _ := filepath.Glob(filepath.Join(work, ns, "*", pgrender.ContainerName+".log"))
	poolers, _ := filepath.Glob(filepath.Join(work, ns, "*", pgrender.PoolerContainerName+".log"))
	logs = append(logs, poolers...)
	// The latest runs: a pod that failed at once was replaced again and again.
	modified := func(path string) time.Time {
		st, err := os.Stat(path)
		if err != nil {
			return time.Time{}
		}
		return st.ModTime()
	}
	slices.SortFunc(logs, func(a, b string) int { return modified(a).Compare(modified(b)) })
	if len(logs) > 6 {
		logs = logs[len(logs)-6:]
	}
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		t.Logf("--- %s (last 3 KiB) ---\n%s", l, devenv.LastBytes(b, 3072))
	}
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
