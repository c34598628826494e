package pge2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// majorUpgradeDeadline bounds a step of the major upgrade on a busy 2-core
// machine: initdb and pg_upgrade --check, or the upgrade itself with two
// clones of the new primary (each waits for the controller's next look).
const majorUpgradeDeadline = 8 * time.Minute

// postgres17 is where make tools (hack/tools postgres17) installs PostgreSQL 17.
const postgres17 = "/opt/lookout-postgresql/lib/postgresql/17/bin"

// TestMajorUpgradeFifteenToSeventeen runs PGO's quickstart cluster (three
// instances, synchronous replication) on PostgreSQL 15 with a client
// writing through the Secret's uri, and changes spec.postgresVersion to 17:
// refused until the allow-upgrade annotation names 17, with nothing
// touched; then refused by pg_upgrade --check (a regproc column, which
// pg_upgrade cannot carry) with 15 serving on and the reason in the
// condition; then, the column dropped, upgraded: every instance answers
// 17, the replicas stream, the downtime is in the status, and no
// acknowledged write is lost.
func TestMajorUpgradeFifteenToSeventeen(t *testing.T) {
	if _, err := os.Stat(filepath.Join(postgres17, "pg_upgrade")); err != nil {
		t.Fatalf("PostgreSQL 17 is not installed (make tools installs it: go run ./hack/tools postgres17): %v", err)
	}
	ns := fmt.Sprintf("pgup-%d", time.Now().UnixNano()%1e6)
	must(t, k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	kc(t, "apply", "-n", ns, "-f", filepath.Join("..", "..", "examples-postgres", "hippo.yaml"))
	pods := runPods(t, ns, clusterName)
	start := time.Now()
	pgc := waitCluster(t, ns, startDeadline, "3/3 instances ready with a primary and two streaming replicas", func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "3/3" && c.Status.Primary != "" && streamingReplicas(c) == 2 && c.Status.PostgresVersion == 15
	}, pods)
	primary := pgc.Status.Primary
	t.Logf("3 instances on PostgreSQL 15 ready %s after kubectl apply, primary %s (machine load: %s)", time.Since(start).Round(time.Second), primary, loadavg())

	var secret corev1.Secret
	must(t, k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: pgrender.UserSecretName(clusterName, userName)}, &secret))
	uri := string(secret.Data["uri"])
	lookup := devenv.ServiceLookup(k8s)
	must(t, prepareWrites(uri, lookup))
	// A column of a reg* type: its values are OIDs pg_upgrade does not keep,
	// so pg_upgrade --check refuses the cluster.
	execURI(t, uri, lookup, `CREATE TABLE upgrade_blocker (f regproc); INSERT INTO upgrade_blocker VALUES ('now')`)
	w := &pgwriter.Writer{ConnString: uri, Lookup: lookup, Interval: 20 * time.Millisecond, FirstID: 2 << 20}
	stop := startWriter(w)
	defer stop()
	acked := func(n int, what string) {
		t.Helper()
		mark := pgwriter.CountAcked(w.Records())
		waitFor(t, 2*time.Minute, what, func() (bool, string) {
			return pgwriter.CountAcked(w.Records()) >= mark+n, lastError(w.Records())
		})
	}
	acked(20, "the writer's first acknowledged writes")

	// 1. Without the annotation the change is refused, by name, and nothing
	// that runs is touched.
	setVersion(t, ns, 17)
	c := waitCluster(t, ns, time.Minute, "Reconciled=False with reason MajorUpgradeNotAllowed", func(c *postgresv1beta1.PostgresCluster) bool {
		cond := meta.FindStatusCondition(c.Status.Conditions, postgresv1beta1.ConditionReconciled)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == pgrender.ReasonMajorUpgradeNotAllowed
	}, pods)
	cond := meta.FindStatusCondition(c.Status.Conditions, postgresv1beta1.ConditionReconciled)
	if !strings.Contains(cond.Message, pgcontract.AnnotationAllowUpgrade+`="17"`) {
		t.Errorf("the refusal does not say which annotation allows it: %s", cond.Message)
	}
	waitEvent(t, ns, pgrender.ReasonMajorUpgradeNotAllowed)
	checkVersions(t, ns, &secret, "15")
	acked(20, "acknowledged writes while the upgrade is refused")

	// 2. Allowed: pg_upgrade --check refuses the reg* column; 15 runs on.
	allowUpgrade(t, ns, "17")
	c = waitCluster(t, ns, majorUpgradeDeadline, "MajorUpgrade=False with reason CheckFailed", func(c *postgresv1beta1.PostgresCluster) bool {
		cond := meta.FindStatusCondition(c.Status.Conditions, pgrender.ConditionMajorUpgrade)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == pgcontract.UpgradeCheckFailed
	}, pods)
	cond = meta.FindStatusCondition(c.Status.Conditions, pgrender.ConditionMajorUpgrade)
	t.Logf("refused by the check: %s", cond.Message)
	if !strings.Contains(cond.Message, "PostgreSQL 15 runs on") || !strings.Contains(cond.Message, "reg*") {
		t.Errorf("the condition does not say that 15 runs on and why: %s", cond.Message)
	}
	waitEvent(t, ns, pgcontract.UpgradeCheckFailed)
	waitCluster(t, ns, time.Minute, "3/3 ready on PostgreSQL 15 with the same primary", func(c *postgresv1beta1.PostgresCluster) bool {
		return c.Status.Ready == "3/3" && c.Status.Primary == primary && streamingReplicas(c) == 2 && c.Status.PostgresVersion == 15
	}, pods)
	checkVersions(t, ns, &secret, "15")
	acked(20, "acknowledged writes on 15 after the refused check")

	// 3. The column dropped, the change made again (15, then 17: a new
	// generation is a new attempt): the upgrade.
	execURI(t, uri, lookup, `DROP TABLE upgrade_blocker`)
	setVersion(t, ns, 15)
	waitCluster(t, ns, time.Minute, "the spec at 15 applied", func(c *postgresv1beta1.PostgresCluster) bool {
		cond := meta.FindStatusCondition(c.Status.Conditions, postgresv1beta1.ConditionReconciled)
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == c.Generation
	}, pods)
	upgradeStart := time.Now()
	setVersion(t, ns, 17)
	c = waitCluster(t, ns, majorUpgradeDeadline, "the major upgrade Complete, 3/3 ready, two streaming replicas", func(c *postgresv1beta1.PostgresCluster) bool {
		u := c.Status.MajorUpgrade
		return u != nil && u.Step == pgrender.StepComplete && c.Status.Ready == "3/3" && streamingReplicas(c) == 2 && c.Status.PostgresVersion == 17
	}, pods)
	u := c.Status.MajorUpgrade
	t.Logf("upgraded in %s (status: downtime %s, %s → %s; machine load: %s)", time.Since(upgradeStart).Round(time.Second), u.Downtime,
		u.StartTime.Format(time.RFC3339), u.CompletionTime.Format(time.RFC3339), loadavg())
	if u.Downtime == "" {
		t.Errorf("no downtime in the status: %+v", u)
	}
	cond = meta.FindStatusCondition(c.Status.Conditions, pgrender.ConditionMajorUpgrade)
	if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "downtime "+u.Downtime) {
		t.Errorf("MajorUpgrade condition %+v, want True with the downtime", cond)
	}
	checkVersions(t, ns, &secret, "17")
	acked(20, "acknowledged writes on 17")

	out, err := exec.Command(bins.Lookout, "explain", "postgrescluster", ns+"/"+clusterName, "--kubeconfig", cp.KubeconfigPath).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "major upgrade: PostgreSQL 15 → 17, Complete, downtime "+u.Downtime) {
		t.Errorf("lookout explain (%v) does not print the upgrade and its downtime:\n%s", err, out)
	}
	stop()
	records := w.Records()
	checkWriteLog(t, uri, lookup, records, "writes through the refusals and the upgrade")
	for _, f := range pgwriter.Failovers(records) {
		t.Logf("the upgrade as the client saw it: %s without an acknowledged write", f.Duration().Round(time.Millisecond))
	}
}

func streamingReplicas(c *postgresv1beta1.PostgresCluster) int {
	n := 0
	for _, r := range c.Status.Replicas {
		if r.State == "streaming" {
			n++
		}
	}
	return n
}

func setVersion(t *testing.T, ns string, major int) {
	t.Helper()
	patchCluster(t, ns, fmt.Sprintf(`{"spec":{"postgresVersion":%d}}`, major))
}

func allowUpgrade(t *testing.T, ns, major string) {
	t.Helper()
	patchCluster(t, ns, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, pgcontract.AnnotationAllowUpgrade, major))
}

func patchCluster(t *testing.T, ns, patch string) {
	t.Helper()
	var pgc postgresv1beta1.PostgresCluster
	must(t, k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: clusterName}, &pgc))
	must(t, k8s.Patch(testCtx, &pgc, client.RawPatch(types.MergePatchType, []byte(patch))))
}

// waitEvent waits for an Event of the cluster with reason.
func waitEvent(t *testing.T, ns, reason string) {
	t.Helper()
	waitFor(t, time.Minute, "an Event "+reason, func() (bool, string) {
		var list corev1.EventList
		if err := k8s.List(testCtx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name == clusterName && e.Reason == reason {
				return true, ""
			}
			seen = append(seen, e.Reason)
		}
		return false, fmt.Sprint(seen)
	})
}

// checkVersions asks every instance for its server_version (as the user,
// through its own address) until each answers major.
func checkVersions(t *testing.T, ns string, secret *corev1.Secret, major string) {
	t.Helper()
	waitFor(t, 2*time.Minute, "server_version "+major+" on every instance", func() (bool, string) {
		var list corev1.PodList
		if err := k8s.List(testCtx, &list, client.InNamespace(ns), client.MatchingLabels{pgcontract.LabelCluster: clusterName}); err != nil {
			return false, err.Error()
		}
		var wrong []string
		for _, p := range list.Items {
			host := p.Name + "." + pgrender.PodsServiceName(clusterName) + "." + ns + ".svc"
			if out, err := psql(ns, secret, host, p.Status.PodIP, "SHOW server_version"); err != nil || !strings.HasPrefix(out, major+".") {
				wrong = append(wrong, fmt.Sprintf("%s: %q (%v)", p.Name, out, err))
			}
		}
		return len(list.Items) == 3 && len(wrong) == 0, fmt.Sprint(wrong)
	})
}
