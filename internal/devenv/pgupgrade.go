package devenv

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// MinorUpgrade is a rolling minor upgrade under load, as test/pge2e, the
// bench and the demo run it: pgbench and the id-tagged writer through the
// cluster's PgBouncer (the user Secret's pgbouncer keys), spec.image changed
// to To, and the wait until every instance runs it and the cluster is whole.
// The cluster must be ready with its pooler; PgBouncer pools transactions,
// so both clients use the simple query protocol.
type MinorUpgrade struct {
	Client             client.Client
	Namespace, Cluster string
	User               string
	To                 string
	// BinDir holds the pgbench the load runs (the host's PostgreSQL when
	// empty).
	BinDir string
	// Deadline bounds the upgrade (default 8 minutes).
	Deadline time.Duration
	// Log gets a line per change the clients or the status show.
	Log io.Writer
}

// MinorUpgradeResult is what the clients and the cluster saw.
type MinorUpgradeResult struct {
	// Took is from the change of spec.image to every instance on it and the
	// cluster whole (as the test saw the status); Condition is the
	// MinorUpgrade condition's message then.
	Took      time.Duration
	Condition string
	Pgbench   PgbenchResult
	// Writes compares the writer's log with the table; NotAcked are the
	// writes that failed or whose outcome is unknown (the one the writer's
	// stop cut short is not counted).
	Writes   pgwriter.Report
	NotAcked []string
	// WritePause is the longest gap between acknowledged writes across a
	// change of primary (the switchover); Switchovers counts those.
	WritePause  time.Duration
	Switchovers int
	// MinReady is the fewest instances ready the status showed meanwhile.
	MinReady int
	// OldPrimary and NewPrimary are the primaries before and after;
	// Versions is `SELECT version()` on every instance afterwards.
	OldPrimary, NewPrimary string
	Versions               map[string]string
}

// Run carries the upgrade out; an error is a step that did not happen
// (the result holds what was measured until then).
func (u MinorUpgrade) Run(ctx context.Context) (MinorUpgradeResult, error) {
	var res MinorUpgradeResult
	logf := func(format string, args ...any) {
		if u.Log != nil {
			fmt.Fprintf(u.Log, format+"\n", args...)
		}
	}
	key := client.ObjectKey{Namespace: u.Namespace, Name: u.Cluster}
	var pgc postgresv1beta1.PostgresCluster
	if err := u.Client.Get(ctx, key, &pgc); err != nil {
		return res, err
	}
	res.OldPrimary = pgc.Status.Primary
	desired := int32(0)
	for _, s := range pgc.Spec.InstanceSets {
		desired += ptrOr(s.Replicas, 1)
	}
	var secret corev1.Secret
	if err := u.Client.Get(ctx, client.ObjectKey{Namespace: u.Namespace, Name: pgrender.UserSecretName(u.Cluster, u.User)}, &secret); err != nil {
		return res, err
	}
	lookup := ServiceLookup(u.Client)
	poolerURI := string(secret.Data[pgrender.KeyPoolerURI])
	if poolerURI == "" {
		return res, fmt.Errorf("Secret %s has no %s: the cluster needs spec.proxy.pgBouncer", secret.Name, pgrender.KeyPoolerURI)
	}
	poolerURI += "?default_query_exec_mode=simple_protocol"

	// pgbench's tables, made on the primary; its transactions and the
	// writer's go through the pooler.
	bin := u.BinDir
	if bin == "" {
		bin = "/usr/lib/postgresql/15/bin"
	}
	pgbench := filepath.Join(bin, "pgbench")
	env := []string{"PGPASSWORD=" + string(secret.Data[pgrender.KeyPassword]), "PGSSLMODE=require", "PGCONNECT_TIMEOUT=10"}
	primaryAddrs, err := lookup(ctx, string(secret.Data[pgrender.KeyHost]))
	if err != nil {
		return res, err
	}
	user, db := string(secret.Data[pgrender.KeyUser]), string(secret.Data[pgrender.KeyDBName])
	initLoad := &Pgbench{Path: pgbench, Env: env}
	if out, err := initLoad.initialize(ctx, primaryAddrs[0], string(secret.Data[pgrender.KeyPort]), user, db); err != nil {
		return res, fmt.Errorf("pgbench -i: %w\n%s", err, out)
	}
	poolerAddrs, err := lookup(ctx, string(secret.Data[pgrender.KeyPoolerHost]))
	if err != nil {
		return res, err
	}
	addr, err := ResolvedURI(ctx, poolerURI, lookup)
	if err != nil {
		return res, err
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = pgwriter.Prepare(pctx, addr)
	cancel()
	if err != nil {
		return res, fmt.Errorf("the writer's table: %w", err)
	}

	// A steady load, not a CPU hog: 4 clients, 50 transactions a second.
	load := &Pgbench{Path: pgbench, Env: env, Chunk: 10 * time.Second,
		Args: []string{"-n", "-c", "4", "-j", "2", "-R", "50", "-h", poolerAddrs[0], "-p", string(secret.Data[pgrender.KeyPoolerPort]), "-U", user, db}}
	load.Start()
	w := &pgwriter.Writer{ConnString: poolerURI, Lookup: lookup, Interval: 20 * time.Millisecond, Timeout: 30 * time.Second, FirstID: 1 << 24}
	stopWriter := w.Start(ctx)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopWriter()
			res.Pgbench = load.Stop()
		}
	}
	defer stop()
	if err := waitUntil(ctx, time.Minute, func() bool { return pgwriter.CountAcked(w.Records()) >= 20 }); err != nil {
		return res, fmt.Errorf("no acknowledged write through the pooler within a minute: %w", err)
	}

	patch := fmt.Sprintf(`{"spec":{"image":%q}}`, u.To)
	if err := u.Client.Patch(ctx, &pgc, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return res, err
	}
	changed := time.Now()
	logf("spec.image set to %s", u.To)
	deadline := u.Deadline
	if deadline == 0 {
		deadline = 8 * time.Minute
	}
	res.MinReady = int(desired)
	lastCondition := ""
	err = waitUntil(ctx, deadline, func() bool {
		var c postgresv1beta1.PostgresCluster
		if err := u.Client.Get(ctx, key, &c); err != nil {
			return false
		}
		if n, _, ok := strings.Cut(c.Status.Ready, "/"); ok {
			if r, err := strconv.Atoi(n); err == nil && r < res.MinReady {
				res.MinReady = r
			}
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, postgresv1beta1.ConditionMinorUpgrade)
		if cond != nil && cond.Message != lastCondition {
			lastCondition = cond.Message
			logf("%5.1fs  MinorUpgrade=%s %s: %s", time.Since(changed).Seconds(), cond.Status, cond.Reason, cond.Message)
		}
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != postgresv1beta1.ReasonUpgraded || c.Status.Primary == "" {
			return false
		}
		on := 0
		for _, v := range c.Status.InstanceVersions {
			if v.Image == u.To && v.Version != "" {
				on++
			}
		}
		res.Condition, res.NewPrimary = cond.Message, c.Status.Primary
		return on == int(desired) && c.Status.Ready == fmt.Sprintf("%d/%d", desired, desired)
	})
	res.Took = time.Since(changed)
	if err != nil {
		return res, fmt.Errorf("not every instance on %s within %s (last condition: %s): %w", u.To, deadline, lastCondition, err)
	}
	logf("%5.1fs  every instance on %s, primary %s → %s", res.Took.Seconds(), u.To, res.OldPrimary, res.NewPrimary)

	mark := pgwriter.CountAcked(w.Records())
	if err := waitUntil(ctx, time.Minute, func() bool { return pgwriter.CountAcked(w.Records()) >= mark+20 }); err != nil {
		return res, fmt.Errorf("no acknowledged write after the upgrade: %w", err)
	}
	stopping := time.Now()
	stop()
	records := w.Records()
	for _, r := range records {
		if r.Outcome != pgwriter.Acked && r.End.Before(stopping) {
			res.NotAcked = append(res.NotAcked, fmt.Sprintf("%d %s: %s", r.ID, r.Outcome, r.Err))
		}
	}
	for _, f := range pgwriter.Failovers(records) {
		res.Switchovers++
		res.WritePause = max(res.WritePause, f.Duration())
	}
	if res.Writes, err = CheckWrites(ctx, poolerURI, lookup, records); err != nil {
		return res, err
	}
	res.Versions, err = instanceVersions(ctx, u.Client, u.Namespace, u.Cluster, &secret)
	return res, err
}

// initialize runs `pgbench -i` against host:port.
func (p *Pgbench) initialize(ctx context.Context, host, port, user, db string) (string, error) {
	cmd := exec.CommandContext(ctx, p.Path, "-i", "-s", "1", "-q", "-h", host, "-p", port, "-U", user, db)
	cmd.Env = append(os.Environ(), p.Env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// instanceVersions asks every instance pod of the cluster for
// `SELECT version()`, as the Secret's user over TLS.
func instanceVersions(ctx context.Context, c client.Reader, ns, cluster string, secret *corev1.Secret) (map[string]string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{pgcontract.LabelCluster: cluster}, client.HasLabels{pgcontract.LabelInstance}); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		u := url.URL{Scheme: "postgresql", User: url.UserPassword(string(secret.Data[pgrender.KeyUser]), string(secret.Data[pgrender.KeyPassword])),
			Host: net.JoinHostPort(p.Status.PodIP, string(secret.Data[pgrender.KeyPort])), Path: "/" + string(secret.Data[pgrender.KeyDBName]),
			RawQuery: "sslmode=require&connect_timeout=10"}
		var v string
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(cctx, u.String())
			if err != nil {
				return false, nil
			}
			defer conn.Close(cctx)
			return conn.QueryRow(cctx, `SELECT version()`).Scan(&v) == nil, nil
		})
		if err != nil {
			return out, fmt.Errorf("SELECT version() on %s: %w", p.Name, err)
		}
		out[p.Name] = v
	}
	return out, nil
}

// VersionLines lists "instance: version" in name order.
func (r MinorUpgradeResult) VersionLines() []string {
	var out []string
	for n, v := range r.Versions {
		out = append(out, n+": "+v)
	}
	slices.Sort(out)
	return out
}

func waitUntil(ctx context.Context, timeout time.Duration, ok func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return ok(), nil })
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
