package webhook

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

var postgresClusterKind = metav1.GroupVersionKind{Group: "postgres-operator.crunchydata.com", Version: "v1beta1", Kind: "PostgresCluster"}

// The webhook answers kubectl at once with what the controller would refuse,
// and is configured for PostgresClusters only when the operator runs them.
func TestPostgresClusterWebhook(t *testing.T) {
	inst := &pgrender.Installation{Parameters: map[int]map[string]bool{15: {"work_mem": true}}}
	h := &handler{postgres: inst}
	cluster := func(extra string) []byte {
		return []byte(`{"apiVersion":"postgres-operator.crunchydata.com/v1beta1","kind":"PostgresCluster","metadata":{"name":"hippo","namespace":"zoo"},
			"spec":{"postgresVersion":15,"instances":[{"name":"a","dataVolumeClaimSpec":{"resources":{"requests":{"storage":"1Gi"}}}}]` + extra + `}}`)
	}
	for _, tc := range []struct {
		name, extra, denied string
	}{
		{"admits a cluster it can run", ``, ""},
		{"admits a known parameter", `,"patroni":{"dynamicConfiguration":{"postgresql":{"parameters":{"work_mem":"8MB"}}}}`, ""},
		{"denies a field Lookout does not honour, by name", `,"userInterface":{"pgAdmin":{}}`, `spec.userInterface: Forbidden: spec.userInterface is not supported by Lookout`},
		{"denies a major not installed", `,"postgresVersion":16`, `spec.postgresVersion: Invalid value: UnsupportedPostgresVersion: PostgreSQL 16 is not installed for the operator; installed: 15`},
		{"denies an unknown parameter", `,"patroni":{"dynamicConfiguration":{"postgresql":{"parameters":{"work_mme":"8MB"}}}}`, `parameters.work_mme: Invalid value: InvalidParameter: PostgreSQL 15 has no parameter "work_mme"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.Handle(context.Background(), admissionRequest(t, admissionv1.Create, postgresClusterKind, cluster(tc.extra), nil))
			if tc.denied == "" {
				if !resp.Allowed {
					t.Fatalf("denied: %v", resp.Result)
				}
				return
			}
			if resp.Allowed || !strings.Contains(resp.Result.Message, tc.denied) {
				t.Errorf("allowed %v, message %q; want it denied with %q", resp.Allowed, resp.Result.Message, tc.denied)
			}
		})
	}

	paths := func(o Options) []string {
		var out []string
		for _, w := range desiredConfiguration(o, nil).Webhooks {
			out = append(out, *w.ClientConfig.Service.Path)
		}
		return out
	}
	o := Options{Namespace: "lookout-system"}
	o.setDefaults()
	if got := strings.Join(paths(o), " "); strings.Contains(got, "postgres") {
		t.Errorf("without Postgres the configuration has %s", got)
	}
	o.Postgres = inst
	if got := strings.Join(paths(o), " "); !strings.Contains(got, "/validate-postgres-operator-crunchydata-com-v1beta1-postgrescluster") {
		t.Errorf("with Postgres the configuration has %s", got)
	}
}
