package pg

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance/pgwriter"
)

// A new cluster: the first instance to take the Lease runs initdb, the
// others clone it and stream through a slot each; the users exist; the pods
// carry their roles; the managers serve status and metrics.
func TestANewClusterStreamsToTwoClones(t *testing.T) {
	c := newCluster(t, 3, pgcontract.Config{Generation: 1, PostgresVersion: 15, Port: 5432,
		LeaseDuration: pgcontract.Duration{Duration: 5 * time.Second}})
	start := time.Now()
	primary := c.WaitHealthy(3 * time.Minute)
	t.Logf("3 instances ready %s after start; primary %s", time.Since(start).Round(time.Millisecond), primary)

	st, err := c.Status(primary)
	must(t, err)
	var streaming []string
	for _, r := range st.Replicas {
		if r.State == "streaming" {
			streaming = append(streaming, r.Instance)
		}
	}
	slices.Sort(streaming)
	if want := slices.DeleteFunc(slices.Clone(c.Names), func(n string) bool { return n == primary }); !slices.Equal(streaming, want) {
		t.Errorf("primary streams to %v, want %v", streaming, want)
	}

	ctx := context.Background()
	conn := c.Connect(c.ConnString())
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT slot_name FROM pg_replication_slots WHERE active ORDER BY slot_name`)
	must(t, err)
	slots, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	if want := []string{"pg_1", "pg_2", "pg_0"}; len(slots) != 2 {
		t.Errorf("active slots %v, want one for each of the two replicas (of %v)", slots, want)
	}
	var owner string
	must(t, conn.QueryRow(ctx, `SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'app'`).Scan(&owner))
	if owner != c.User {
		t.Errorf("database app is owned by %q, want %q", owner, c.User)
	}
	must(t, pgwriter.Prepare(ctx, c.ConnString()))

	for _, n := range c.Names {
		pod, err := clientset.CoreV1().Pods(c.NS).Get(ctx, n, metav1.GetOptions{})
		must(t, err)
		want := pgcontract.RoleReplica
		if n == primary {
			want = pgcontract.RolePrimary
		}
		if got := pod.Labels[pgcontract.LabelRole]; got != want {
			t.Errorf("pod %s has role label %q, want %q", n, got, want)
		}
	}
	resp, err := http.Get("http://" + c.Insts[primary].Host.IP + ":8008" + pgcontract.PathMetrics)
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{pgcontract.MetricUp + " 1", pgcontract.MetricRole + `{role="master"} 1`, pgcontract.MetricReplicationLagBytes + `{replica=`, pgcontract.MetricXactCommit} {
		if !strings.Contains(string(body), m) {
			t.Errorf("metrics of the primary lack %q", m)
		}
	}
}
