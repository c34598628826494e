package install

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/render/rules"
	"github.com/lookout-operator/lookout/internal/webhook"
)

const repoRoot = "../.."

func TestTheGeneratedInstallFilesAreUpToDate(t *testing.T) {
	files, err := Files(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		got, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil || !bytes.Equal(got, files[p]) {
			t.Errorf("%s is out of date (%v): run go run ./hack/install (make manifests) and commit", p, err)
		}
	}
	// Nothing generated is left over from an earlier definition.
	for _, dir := range []string{KustomizeBase, NamespacedDir, CertManagerDir, ChartDir} {
		_ = filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(repoRoot, path)
			if _, ok := files[filepath.ToSlash(rel)]; !ok {
				t.Errorf("%s is not generated any more: run go run ./hack/install", rel)
			}
			return nil
		})
	}
}

func TestTheOperatorsAlertsPassTheRuleValidatorTheControllerUses(t *testing.T) {
	pr := PrometheusRule(Options{})
	pr.UID = "self-monitoring"
	if errs := webhook.ValidatePrometheusRule(pr); len(errs) > 0 {
		t.Fatalf("the webhook refuses the operator's PrometheusRule: %v", errs.ToAggregate())
	}
	res, err := rules.Generate(rules.Input{
		Prometheus: &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: "k8s"}},
		Rules:      []*monitoringv1.PrometheusRule{pr},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Verdicts) != 1 || !res.Verdicts[0].Accepted {
		t.Fatalf("the rule renderer does not accept the operator's PrometheusRule: %+v", res.Verdicts)
	}
	if len(pr.Spec.Groups) == 0 || len(pr.Spec.Groups[0].Rules) < 5 {
		t.Fatalf("the operator's PrometheusRule has too few alerts: %+v", pr.Spec.Groups)
	}
}

func TestEveryPermissionIsInTheInstallsRBAC(t *testing.T) {
	for _, ns := range [][]string{nil, {"team-a"}} {
		granted := 0
		for _, obj := range RBAC(Options{WatchNamespaces: ns}) {
			granted += len(rulesOf(obj))
		}
		if granted != len(controller.Permissions) {
			t.Errorf("with namespaces %v the install grants %d rules, controller.Permissions has %d", ns, granted, len(controller.Permissions))
		}
	}
}

func rulesOf(obj any) []rbacRule {
	switch r := obj.(type) {
	case *rbacv1.ClusterRole:
		return r.Rules
	case *rbacv1.Role:
		return r.Rules
	}
	return nil
}

type rbacRule = rbacv1.PolicyRule
