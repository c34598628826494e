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
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lookout-operator/lookout/internal/controller"
	amrender "github.com/lookout-operator/lookout/internal/render/alertmanager"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/rules"
	thanosrender "github.com/lookout-operator/lookout/internal/render/thanos"
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
	for _, dir := range GeneratedDirs() {
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
		// Every feature on: each rule is granted once.
		for _, obj := range RBAC(Options{WatchNamespaces: ns, InstallCRDs: true, GenerateRBAC: true, Postgres: true}) {
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

func TestTheReloaderPodMonitorSelectsThePodsOfEveryKindThatRunsAReloader(t *testing.T) {
	sel, err := metav1.LabelSelectorAsSelector(&ReloaderPodMonitor(Options{}).Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	for kind, pod := range map[string]map[string]string{
		"Prometheus":      promrender.Server.PodLabels("k8s"),
		"PrometheusAgent": promrender.Agent.PodLabels("edge"),
		"Alertmanager":    amrender.SelectorLabels("main"),
		"ThanosRuler":     thanosrender.SelectorLabels("ruler"),
	} {
		if !sel.Matches(labels.Set(pod)) {
			t.Errorf("the PodMonitor %s (%s) does not select the pods of a %s (%v)", ReloaderPodMonitorName, sel, kind, pod)
		}
	}
}

func TestTheNetworkPolicyLeavesEgressOpenUnlessPortsAreGiven(t *testing.T) {
	open := NetworkPolicy(Options{}).Spec.Egress
	if len(open) != 1 || len(open[0].Ports) != 0 || len(open[0].To) != 0 {
		t.Fatalf("default egress is not open: %+v", open)
	}
	limited := NetworkPolicy(Options{APIServerPorts: []int32{16443}, APIServerCIDRs: []string{"10.0.0.1/32"}}).Spec.Egress
	if len(limited) != 2 || limited[1].Ports[0].Port.IntVal != 16443 || limited[1].To[0].IPBlock.CIDR != "10.0.0.1/32" {
		t.Fatalf("egress with apiserver ports: %+v", limited)
	}
}

// The default install (the bundle and the kustomize base) leaves the CRDs
// to config/crd: its operator may not create or change CRDs.
func TestTheDefaultInstallGrantsNoRightOnCRDsButTheConversionCRD(t *testing.T) {
	for _, obj := range RBAC(Options{}) {
		for _, r := range rulesOf(obj) {
			if slices.Contains(r.Resources, "customresourcedefinitions") &&
				(slices.Contains(r.Verbs, "create") || !slices.Equal(r.ResourceNames, []string{"alertmanagerconfigs.monitoring.coreos.com"})) {
				t.Errorf("the default install grants %v on %v %v", r.Verbs, r.Resources, r.ResourceNames)
			}
		}
	}
}

// RBAC cannot limit a write to the roles the operator created: in the
// default install (all namespaces or some, with or without the CRDs) no
// role lets it create, update, patch or delete a role or a binding.
func TestTheDefaultInstallCannotWriteRolesOrBindings(t *testing.T) {
	write := []string{"create", "update", "patch", "delete", "deletecollection", "*", "escalate", "bind"}
	for _, o := range []Options{{}, {WatchNamespaces: []string{"team-a"}}, {InstallCRDs: true}} {
		for _, obj := range RBAC(o) {
			for _, r := range rulesOf(obj) {
				if !slices.Contains(r.APIGroups, rbacv1.GroupName) && !slices.Contains(r.APIGroups, "*") {
					continue
				}
				for _, v := range r.Verbs {
					if slices.Contains(write, v) {
						t.Errorf("%+v: %T %s grants %s on %v", o, obj, obj.(interface{ GetName() string }).GetName(), v, r.Resources)
					}
				}
			}
		}
	}
	// The variant that asks for it has them, in roles named for it.
	found := false
	for _, obj := range FeatureRBAC(Options{GenerateRBAC: true}, controller.FeatureGenerateRBAC) {
		for _, r := range rulesOf(obj) {
			found = found || (slices.Contains(r.Resources, "clusterroles") && slices.Contains(r.Verbs, "create"))
		}
	}
	if !found {
		t.Error("the generated-RBAC variant cannot create ClusterRoles")
	}
}

// The PostgreSQL variants write the instance managers' Roles and bindings
// in the watched namespaces, and nothing cluster-wide: no right on
// ClusterRoles or ClusterRoleBindings, no escalate or bind (so the apiserver
// lets them grant only what they hold). Monitoring alone writes no RBAC.
func TestEachVariantWritesOnlyTheRBACItsControllersCreate(t *testing.T) {
	write := []string{"create", "update", "patch", "delete", "deletecollection", "*"}
	for _, v := range Variants {
		for _, o := range []Options{v.Options, {Postgres: v.Options.Postgres, NoMonitoring: v.Options.NoMonitoring, WatchNamespaces: []string{"team-a"}, InstallCRDs: true}} {
			roles := false
			for _, obj := range RBAC(o) {
				for _, r := range rulesOf(obj) {
					if !slices.Contains(r.APIGroups, rbacv1.GroupName) && !slices.Contains(r.APIGroups, "*") {
						continue
					}
					for _, v := range r.Verbs {
						switch {
						case v == "escalate" || v == "bind":
							t.Errorf("%+v: %s grants %s on %v", o, obj.(interface{ GetName() string }).GetName(), v, r.Resources)
						case slices.Contains(write, v) && (slices.Contains(r.Resources, "clusterroles") || slices.Contains(r.Resources, "clusterrolebindings")):
							t.Errorf("%+v: %s grants %s on %v", o, obj.(interface{ GetName() string }).GetName(), v, r.Resources)
						case slices.Contains(write, v):
							roles = true
						}
					}
				}
			}
			if roles != o.Postgres {
				t.Errorf("variant %s (%+v) writes Roles and RoleBindings: %v, want %v", v.Name, o, roles, o.Postgres)
			}
		}
	}
}

// Each variant names the controllers of its systems, so that it never takes
// over the objects of another operator serving the other system's CRDs.
func TestEachVariantRunsTheControllersOfItsSystems(t *testing.T) {
	want := map[string]string{
		"monitoring": "--controllers=prometheus,prometheusagent,alertmanager,thanosruler",
		"postgres":   "--controllers=postgrescluster",
		"both":       "--controllers=prometheus,prometheusagent,alertmanager,thanosruler,postgrescluster",
	}
	for _, v := range Variants {
		if args := Args(v.Options); !slices.Contains(args, want[v.Name]) {
			t.Errorf("variant %s runs with %q, want %s", v.Name, args, want[v.Name])
		}
		selfMonitoring := slices.Contains(Args(v.Options), "--self-monitoring")
		if selfMonitoring == v.Options.NoMonitoring {
			t.Errorf("variant %s: --self-monitoring %v, want it exactly with monitoring", v.Name, selfMonitoring)
		}
	}
}
