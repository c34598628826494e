package install

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/install"
)

// objectCount is the number of objects in a YAML stream.
func objectCount(manifests []byte) int {
	n := 0
	for _, line := range strings.Split(string(manifests), "\n") {
		if strings.HasPrefix(line, "kind: ") {
			n++
		}
	}
	return n
}

// expectApplied fails unless kubectl reported every object as applied.
func expectApplied(t *testing.T, manifests []byte, out string) {
	t.Helper()
	applied := strings.Count(out, "serverside-applied (server dry run)")
	if want := objectCount(manifests); applied != want || want == 0 {
		t.Fatalf("server-side dry-run applied %d objects, the manifests hold %d:\n%s", applied, want, out)
	}
}

func TestTheKustomizeBaseAndOverlaysApplyWithAServerSideDryRun(t *testing.T) {
	installCertManagerStandIns(t, cp.RESTConfig)
	for _, dir := range []string{install.KustomizeBase, install.PostgresOnlyDir, install.WithPostgresDir, install.NamespacedDir, install.CertManagerDir, install.GeneratedRBACDir} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			manifests := runTool(t, nil, kubectl, "kustomize", dir)
			expectApplied(t, manifests, dryRun(t, manifests))
		})
	}
}

func TestTheBundlesApplyWithAServerSideDryRun(t *testing.T) {
	for _, v := range install.Variants {
		t.Run(v.Name, func(t *testing.T) {
			manifests, err := os.ReadFile(filepath.Join(repoRoot, v.Bundle))
			if err != nil {
				t.Fatal(err)
			}
			expectApplied(t, manifests, dryRun(t, manifests))
		})
	}
}

func TestTheHelmChartLintsAndItsTemplatesApplyWithAServerSideDryRun(t *testing.T) {
	runTool(t, nil, helm, "lint", "--strict", install.ChartDir)
	for _, c := range []struct {
		name string
		set  []string
	}{
		{"defaults", nil},
		{"watching two namespaces, with extra flags", []string{"--set", "namespaces={default,kube-public}", "--set", "extraArgs={--log-level=debug}"}},
		{"webhook, self-monitoring and network policy off, one replica", []string{"--set", "webhook.enabled=false", "--set", "selfMonitoring.enabled=false", "--set", "networkPolicy.enabled=false", "--set", "replicas=1"}},
		{"CRDs left to the user, conversion on, egress limited to the apiserver", []string{"--set", "crds.install=false", "--set", "webhook.conversion=true", "--set", "networkPolicy.apiServerPorts={6443,16443}", "--set", "networkPolicy.apiServerCIDRs={10.0.0.1/32}"}},
		{"a second release with its own name, pull secrets, pod labels and a priority class", []string{"--set", "fullnameOverride=lookout-b", "--set", "imagePullSecrets[0].name=regcred", "--set", "image.pullPolicy=IfNotPresent",
			"--set", "podLabels.team=platform", "--set", "podAnnotations.owner=platform", "--set", "priorityClassName=system-cluster-critical", "--set", "serviceAccount.annotations.iam=role"}},
		{"scheduled on chosen nodes", []string{"--set", "nodeSelector.disk=ssd", "--set", "tolerations[0].key=dedicated", "--set", "tolerations[0].operator=Exists"}},
		{"PostgreSQL only, egress limited to the apiserver", []string{"--set", "monitoring.enabled=false", "--set", "postgres.enabled=true", "--set", "networkPolicy.apiServerPorts={6443}"}},
		{"monitoring and PostgreSQL, watching two namespaces", []string{"--set", "postgres.enabled=true", "--set", "namespaces={default,kube-public}"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"template", "lookout", install.ChartDir, "--namespace", install.DefaultNamespace}, c.set...)
			manifests := runTool(t, nil, helm, args...)
			expectApplied(t, manifests, dryRun(t, manifests))
			if strings.Contains(c.name, "watching two namespaces") && !strings.Contains(string(manifests), "--namespaces=default,kube-public") {
				t.Errorf("the rendered Deployment does not pass --namespaces:\n%s", manifests)
			}
			if c.name != "defaults" && !strings.Contains(c.name, "PostgreSQL") {
				return
			}
			v := install.Variants[0]
			for _, pv := range install.Variants[1:] {
				if containsAll(strings.Join(c.set, " "), pv.HelmValues) {
					v = pv
					break
				}
			}
			expectChartVariant(t, v, manifests)
		})
	}
}

// expectChartVariant checks that the chart rendered with v's values runs
// v's controllers, validates v's kinds and holds v's systems' roles only,
// as the kustomize directory of v does.
func expectChartVariant(t *testing.T, v install.Variant, manifests []byte) {
	t.Helper()
	got := objectsOf(t, manifests)
	kustomized := objectsOf(t, runTool(t, nil, kubectl, "kustomize", v.Kustomize))
	for key := range kustomized {
		kind := strings.SplitN(key, "/", 2)[0]
		namespaced := strings.Contains(key, "watched") && strings.Contains(string(manifests), "--namespaces=")
		if (kind == "ClusterRole" || kind == "Role" || kind == "ValidatingWebhookConfiguration") && got[key] == nil && !namespaced {
			t.Errorf("the chart with %v lacks %s, which %s installs", v.HelmValues, key, v.Kustomize)
		}
	}
	for key := range got {
		kind := strings.SplitN(key, "/", 2)[0]
		if (kind == "ClusterRole" || kind == "Role") && kustomized[key] == nil && !strings.Contains(key, "install-") && !strings.Contains(key, "watched") {
			t.Errorf("the chart with %v holds %s, which %s does not", v.HelmValues, key, v.Kustomize)
		}
	}
	want := install.Controllers(v.Options)
	if !strings.Contains(string(manifests), "--controllers="+strings.Join(want, ",")+"\n") {
		t.Errorf("the chart with %v does not run --controllers=%s", v.HelmValues, strings.Join(want, ","))
	}
	var hooks []string
	for key, o := range got {
		if strings.HasPrefix(key, "ValidatingWebhookConfiguration/") {
			for _, w := range o.(map[string]any)["webhooks"].([]any) {
				hooks = append(hooks, w.(map[string]any)["name"].(string))
			}
		}
	}
	var wantHooks []string
	for key, o := range kustomized {
		if strings.HasPrefix(key, "ValidatingWebhookConfiguration/") {
			for _, w := range o.(map[string]any)["webhooks"].([]any) {
				wantHooks = append(wantHooks, w.(map[string]any)["name"].(string))
			}
		}
	}
	if strings.Join(hooks, ",") != strings.Join(wantHooks, ",") {
		t.Errorf("the chart with %v validates %v, %s validates %v", v.HelmValues, hooks, v.Kustomize, wantHooks)
	}
}

// installCertManagerStandIns installs CRDs for cert-manager's Issuer and
// Certificate so that the cert-manager overlay can be dry-run here. They
// accept any spec: this checks the overlay's kinds, names and namespaces,
// not cert-manager's validation of its spec.
func installCertManagerStandIns(t *testing.T, cfg *rest.Config) {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	preserve := true
	for _, kind := range []string{"Issuer", "Certificate"} {
		plural := strings.ToLower(kind) + "s"
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".cert-manager.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "cert-manager.io",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: &preserve,
					}},
				}},
			},
		}
		if err := c.Create(testCtx, crd); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(testCtx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var got apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), &got); err != nil {
				return false, nil
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", crd.Name, err)
		}
	}
}

// Each overlay, rendered by kustomize, is exactly what internal/install gives
// for that variant: the patches are derived from it, and this holds them to it.
func TestEachKustomizeOverlayRendersTheObjectsOfItsVariant(t *testing.T) {
	for _, c := range []struct {
		dir   string
		opts  install.Options
		extra []runtime.Object
	}{
		{install.KustomizeBase, install.Options{}, nil},
		{install.PostgresOnlyDir, install.Options{Postgres: true, NoMonitoring: true}, nil},
		{install.WithPostgresDir, install.Options{Postgres: true}, nil},
		{install.NamespacedDir, install.Options{WatchNamespaces: install.ExampleWatchNamespaces}, nil},
		{install.CertManagerDir, install.Options{CertManager: true}, install.CertManagerObjects(install.Options{CertManager: true})},
		{install.GeneratedRBACDir, install.Options{GenerateRBAC: true}, nil},
	} {
		t.Run(filepath.Base(c.dir), func(t *testing.T) {
			got := objectsOf(t, runTool(t, nil, kubectl, "kustomize", c.dir))
			want := map[string]any{}
			if c.opts.Monitoring() {
				maps.Copy(want, objectsOf(t, runTool(t, nil, kubectl, "kustomize", install.CRDDir)))
			}
			if c.opts.Postgres {
				maps.Copy(want, objectsOf(t, runTool(t, nil, kubectl, "kustomize", install.PostgresCRDDir)))
			}
			for _, o := range append(install.Objects(c.opts), c.extra...) {
				b, err := json.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				maps.Copy(want, objectsOf(t, b))
			}
			for k := range want {
				if _, ok := got[k]; !ok {
					t.Errorf("kustomize %s lacks %s", c.dir, k)
				}
			}
			for k, g := range got {
				w, ok := want[k]
				if !ok {
					t.Errorf("kustomize %s renders %s, which the variant does not have", c.dir, k)
					continue
				}
				if !reflect.DeepEqual(g, w) {
					gb, _ := json.Marshal(g)
					wb, _ := json.Marshal(w)
					t.Errorf("kustomize %s renders %s differently:\n got %s\nwant %s", c.dir, k, gb, wb)
				}
			}
		})
	}
}

// objectsOf parses a YAML or JSON stream into plain JSON values keyed by
// kind/namespace/name, without the fields an empty typed struct adds.
func objectsOf(t *testing.T, stream []byte) map[string]any {
	t.Helper()
	out := map[string]any{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if m == nil {
			continue
		}
		delete(m, "status")
		install.DropEmpty(m)
		md, _ := m["metadata"].(map[string]any)
		key := fmt.Sprintf("%v/%v/%v", m["kind"], md["namespace"], md["name"])
		out[key] = m
	}
	return out
}

// values.schema.json refuses what the chart does not know, so a misspelt
// value fails the install instead of being ignored.
func TestTheHelmChartRefusesAValueItDoesNotKnow(t *testing.T) {
	for _, set := range []string{"replica=1", "networkpolicy.enabled=false", "webhook.enable=false", "replicas=0", "postgres.enable=true", "postgresql.enabled=true"} {
		cmd := exec.CommandContext(testCtx, helm, "template", "lookout", install.ChartDir, "--set", set)
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("helm template --set %s succeeded; want the values schema to refuse it", set)
		} else if !strings.Contains(string(out), "schema") {
			t.Errorf("helm template --set %s failed, but not on the schema: %s", set, out)
		}
	}
}

// A release that turns both systems off would run an operator that does
// nothing: the chart refuses it.
func TestTheHelmChartRefusesToRunNeitherSystem(t *testing.T) {
	cmd := exec.CommandContext(testCtx, helm, "template", "lookout", install.ChartDir, "--set", "monitoring.enabled=false")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "monitoring.enabled and postgres.enabled are both false") {
		t.Errorf("helm template --set monitoring.enabled=false: %v, %s; want it refused", err, out)
	}
}

// Two releases, in two namespaces, install side by side: their
// cluster-scoped objects are named by the release.
func TestTwoHelmReleasesInstallSideBySide(t *testing.T) {
	for _, r := range []string{"lookout-one", "lookout-two"} {
		runTool(t, nil, helm, "--kubeconfig", cp.KubeconfigPath, "install", r, install.ChartDir, "--namespace", r, "--create-namespace")
		t.Cleanup(func() {
			runTool(t, nil, helm, "--kubeconfig", cp.KubeconfigPath, "uninstall", r, "--namespace", r)
		})
	}
	for _, r := range []string{"lookout-one", "lookout-two"} {
		var cr rbacv1.ClusterRole
		if err := k8s.Get(testCtx, client.ObjectKey{Name: r}, &cr); err != nil {
			t.Errorf("release %s: ClusterRole %s: %v", r, r, err)
		}
	}
}
