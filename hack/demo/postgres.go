package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// The PostgreSQL part of the demo (-postgres): examples-postgres/ holds PGO's quickstart
// cluster (3 instances, user rhino with database zoo) and a Prometheus that selects the
// PodMonitor and PrometheusRule the operator renders for every PostgresCluster.
const (
	pgNamespace = "default"
	pgCluster   = "hippo"
	pgUser      = "rhino"
	// pgPrometheus is the Prometheus of examples-postgres/prometheus.yaml.
	pgPrometheus = "postgres"
)

// runPostgres runs the cluster's pods as a kubelet would, writes through the user
// Secret's uri, kills the primary, and prints what a user sees: the failover time, the
// new primary, and that no acknowledged write was lost; then what Lookout's Prometheus
// scrapes of the instances. It returns how to stop the pods.
func runPostgres(ctx context.Context, c client.Client, cp *controlplane.ControlPlane, bins devenv.Binaries, network *testhost.Network, root, out string, kc func(args ...string)) (stop func(), err error) {
	stops := []func(){}
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	step("Applying examples-postgres/ (PGO's quickstart PostgresCluster default/hippo with synchronous replication on, as PGO's HA documentation writes it, and a Prometheus selecting its PodMonitor and PrometheusRule)")
	if err := applyExamples(ctx, c, filepath.Join(root, "examples-postgres")); err != nil {
		return stop, err
	}
	start := time.Now()
	step("Running the instance pods StatefulSets default/hippo-instance1-* ask for, each in its own network namespace, as uid 26 with the instance manager (lookout instance) and this host's PostgreSQL 15")
	pods, err := devenv.RunPostgresPods(ctx, c, cp, bins, network, pgNamespace, pgCluster, filepath.Join(out, "postgres"))
	if err != nil {
		return stop, err
	}
	stops = append(stops, pods.Stop)
	// The manifest asks for synchronous replication: the fault waits until a
	// standby is synchronous, which is what makes 0 lost writes a promise.
	pgc, err := waitPostgres(ctx, c, 5*time.Minute, func(p *postgresv1beta1.PostgresCluster) bool {
		return p.Status.Ready == "3/3" && p.Status.Primary != "" && len(p.Status.Replicas) == 2 && len(p.Status.SynchronousStandbys) > 0
	})
	if err != nil {
		return stop, fmt.Errorf("%w (pods: %v)", err, pods.Errors())
	}
	fmt.Printf("    3 instances ready %s after the apply\n", time.Since(start).Round(time.Second))
	kc("get", "postgresclusters", "-n", pgNamespace)
	kc("get", "pods", "-n", pgNamespace, "-l", pgcontract.LabelCluster+"="+pgCluster, "-L", pgcontract.LabelRole, "-o", "wide")

	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: pgNamespace, Name: pgrender.UserSecretName(pgCluster, pgUser)}, &secret); err != nil {
		return stop, err
	}
	uri := string(secret.Data["uri"])
	lookup := devenv.ServiceLookup(c)
	u, _ := url.Parse(uri)
	addrs, err := lookup(ctx, u.Hostname())
	if err != nil {
		return stop, err
	}
	step("Connecting with the uri of Secret %s/%s (its host %s is the Service's endpoint %s, the primary)", pgNamespace, secret.Name, u.Hostname(), strings.Join(addrs, ","))
	fmt.Printf("    uri: %s (password redacted here)\n", u.Redacted())
	if err := prepareTable(ctx, uri, lookup); err != nil {
		return stop, err
	}
	w := &pgwriter.Writer{ConnString: uri, Lookup: lookup, Interval: 20 * time.Millisecond}
	wctx, stopWriter := context.WithCancel(ctx)
	writerDone := make(chan struct{})
	go func() { w.Run(wctx); close(writerDone) }()
	stopW := func() {
		if wctx.Err() == nil {
			stopWriter()
			<-writerDone
		}
	}
	stops = append(stops, stopW)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return pgwriter.CountAcked(w.Records()) >= 100, nil
	}); err != nil {
		return stop, fmt.Errorf("the writer got no 100 acknowledged writes in a minute")
	}
	fmt.Printf("    a client writes a row every 20 ms through it: %d acknowledged so far\n", pgwriter.CountAcked(w.Records()))

	old := pgc.Status.Primary
	victim := pods.Pod(old)
	if victim == nil {
		return stop, fmt.Errorf("the primary %s is not running here", old)
	}
	step("Killing every process of the primary %s (SIGKILL: the instance manager, postgres and its backends)", old)
	killed := time.Now()
	if err := victim.Kill(ctx); err != nil {
		return stop, err
	}
	pgc, err = waitPostgres(ctx, c, 3*time.Minute, func(p *postgresv1beta1.PostgresCluster) bool {
		f := p.Status.LastFailover
		return p.Status.Primary != "" && p.Status.Primary != old && f != nil && f.To == p.Status.Primary && f.Timeline > 1
	})
	if err != nil {
		return stop, err
	}
	fmt.Printf("    new primary: %s (status.lastFailover: %s, timeline %d)\n", pgc.Status.Primary, pgc.Status.LastFailover.Duration, pgc.Status.LastFailover.Timeline)
	pgc, err = waitPostgres(ctx, c, 4*time.Minute, func(p *postgresv1beta1.PostgresCluster) bool {
		return p.Status.Ready == "3/3" && p.Status.Primary == pgc.Status.Primary && len(p.Status.Replicas) == 2
	})
	if err != nil {
		return stop, err
	}
	fmt.Printf("    %s is back as a replica (its StatefulSet replaced the pod; it rewound and follows): 3/3 ready %s after the kill\n", old, time.Since(killed).Round(time.Second))
	stopW()
	records := w.Records()
	rep, err := devenv.CheckWrites(ctx, uri, lookup, records)
	if err != nil {
		return stop, err
	}
	for _, f := range pgwriter.Failovers(records) {
		fmt.Printf("    failover time: %s (the client's last acknowledged write on timeline %d to its first on timeline %d)\n",
			f.Duration().Round(time.Millisecond), f.OldTimeline, f.NewTimeline)
	}
	fmt.Printf("    writes: %s\n", rep)
	fmt.Printf("    %d acknowledged writes lost\n", len(rep.Lost))
	kc("get", "postgresclusters", "-n", pgNamespace)
	kc("get", "pods", "-n", pgNamespace, "-l", pgcontract.LabelCluster+"="+pgCluster, "-L", pgcontract.LabelRole)

	if err := upgradeMinor(ctx, c, pods, kc); err != nil {
		return stop, err
	}

	step("Running Prometheus default/postgres (examples-postgres/prometheus.yaml) in its own network namespace: it scrapes the instance managers through PodMonitor default/hippo-postgres")
	host, err := network.NewHost()
	if err != nil {
		return stop, err
	}
	stops = append(stops, host.Close)
	prom, err := devenv.RunPrometheusPodOn(ctx, c, cp, bins, host, pgNamespace, pgPrometheus, filepath.Join(out, "postgres-prometheus"))
	if err != nil {
		return stop, err
	}
	stops = append(stops, prom.Stop)
	roles, err := scrapedRoles(ctx, "http://"+host.IP+":9090")
	if err != nil {
		return stop, err
	}
	fmt.Printf("    %s{namespace=%q,cluster=%q} at http://%s:9090:\n%s", pgcontract.MetricRole, pgNamespace, pgCluster, host.IP, roles)
	if err := runPostgresBackup(ctx, c, cp, bins, network, out, kc, &stops); err != nil {
		return stop, err
	}
	return stop, nil
}

func waitPostgres(ctx context.Context, c client.Client, timeout time.Duration, ok func(*postgresv1beta1.PostgresCluster) bool) (*postgresv1beta1.PostgresCluster, error) {
	return devenv.WaitPostgresCluster(ctx, c, client.ObjectKey{Namespace: pgNamespace, Name: pgCluster}, timeout, ok)
}

func prepareTable(ctx context.Context, uri string, lookup devenv.LookupFunc) error {
	addr, err := devenv.ResolvedURI(ctx, uri, lookup)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, addr)
	if err != nil {
		return err
	}
	var user, db string
	err = conn.QueryRow(cctx, `SELECT current_user, current_database()`).Scan(&user, &db)
	conn.Close(cctx)
	if err != nil {
		return err
	}
	fmt.Printf("    connected as %s to database %s\n", user, db)
	return pgwriter.Prepare(cctx, addr)
}

// scrapedRoles waits until Prometheus has scraped all three instance managers and
// returns the role each reports.
func scrapedRoles(ctx context.Context, base string) (string, error) {
	q := url.Values{"query": {fmt.Sprintf(`%s{namespace=%q,cluster=%q} == 1`, pgcontract.MetricRole, pgNamespace, pgCluster)}}
	var lines []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		resp, err := http.Get(base + "/api/v1/query?" + q.Encode()) //nolint:noctx // local
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		var out struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return false, nil
		}
		lines = lines[:0]
		for _, r := range out.Data.Result {
			lines = append(lines, fmt.Sprintf("      pod %s role %s\n", r.Metric["pod"], r.Metric["role"]))
		}
		return len(lines) == 3, nil
	})
	if err != nil {
		return "", fmt.Errorf("Prometheus did not scrape the 3 instances within 3 minutes (%d seen)", len(lines))
	}
	sort.Strings(lines)
	return strings.Join(lines, ""), nil
}
