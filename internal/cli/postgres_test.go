package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const hippoYAML = `apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata:
  name: hippo
  namespace: zoo
  annotations:
    postgres-operator.crunchydata.com/trigger-switchover: "2"
spec:
  postgresVersion: 15
  instances:
  - name: instance1
    replicas: 2
    dataVolumeClaimSpec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
  patroni:
    switchover: {enabled: true}
status:
  ready: 2/2
  primary: hippo-instance1-abcd-0
  timeline: 2
  failoverBlocked: "hippo-instance1-efgh-0: 2097152 bytes behind, more than maximum_lag_on_failover"
  patroni: {switchover: "1"}
  replicas:
  - {name: hippo-instance1-efgh-0, state: streaming, syncState: async, lagBytes: 2097152, lagSeconds: "3.5"}
  lastFailover: {time: "2026-11-28T17:00:00Z", to: hippo-instance1-abcd-0, duration: 2.1s, timeline: 2}
  conditions:
  - {type: Reconciled, status: "True", reason: ReconcileSucceeded, message: "", observedGeneration: 0, lastTransitionTime: "2026-11-28T17:00:00Z"}
`

func writeHippo(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "hippo.yaml")
	if err := os.WriteFile(path, []byte(hippoYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// render prints what the controller would write for a PostgresCluster in a
// file, with the PostgreSQL of this machine.
func TestRenderPostgresCluster(t *testing.T) {
	var out, errOut bytes.Buffer
	err := Render(context.Background(), RenderOptions{Files: []string{writeHippo(t)}, PostgresCluster: "zoo/hippo", PostgresImage: "pg:test"}, &out, &errOut)
	if err != nil {
		t.Fatal(err, errOut.String())
	}
	for _, want := range []string{"kind: StatefulSet\n", "name: hippo-primary\n", "name: hippo-pguser-hippo\n", "name: hippo-instance-config\n", "kind: PrometheusRule\n", "image: pg:test\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output has no %q", want)
		}
	}
	if n := strings.Count(out.String(), "kind: StatefulSet\n"); n != 2 {
		t.Errorf("%d StatefulSets, want 2", n)
	}
}

// explain answers who is primary, why a failover would not happen, what
// became of the switchover asked for, and how far behind the replica is.
func TestExplainPostgresCluster(t *testing.T) {
	out := explainFiles(t, []string{writeHippo(t)}, ExplainOptions{Kind: "pgc", Key: "zoo/hippo"})
	for _, want := range []string{
		"primary: hippo-instance1-abcd-0 (timeline 2)",
		"failover: BLOCKED — if the primary were lost now, nothing would be promoted: hippo-instance1-efgh-0: 2097152 bytes behind",
		`switchover: request "2" (Switchover to any healthy replica) not carried out yet`,
		"last failover: hippo-instance1-abcd-0 promoted at 2026-11-28T17:00:00Z, 2.1s after the old primary was lost",
		"hippo-instance1-efgh-0: streaming (async), 2097152 bytes and 3.5s behind",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain says:\n%s\nwithout %q", out, want)
		}
	}
}

// explainFiles runs explain on the objects in paths.
func explainFiles(t *testing.T, paths []string, o ExplainOptions) string {
	t.Helper()
	objs, err := ReadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	c, err := FileReader(objs)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Explain(context.Background(), c, o, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
