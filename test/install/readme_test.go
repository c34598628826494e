package install

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/crds"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/install"
)

// installPath is one way in, as the README writes it: the commands that
// install (kubectl apply or helm install, then what follows them) and the
// README's command that removes it.
type installPath struct {
	install   []string
	uninstall string
}

// readmeInstallPaths reads the README's install and uninstall commands: the
// first two sh blocks of "Installing into a cluster". Each kubectl apply or
// helm install line starts a path; a line that neither applies nor installs
// (kubectl label) belongs to the path before it.
func readmeInstallPaths(t *testing.T) []installPath {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Installing into a cluster")
	if !ok {
		t.Fatal("the README has no section Installing into a cluster")
	}
	blocks := shBlocks(section)
	if len(blocks) < 2 {
		t.Fatalf("the install section has %d sh blocks, want the install commands and the uninstall commands", len(blocks))
	}
	var paths []installPath
	for _, cmd := range blocks[0] {
		if strings.HasPrefix(cmd, "kubectl apply ") || strings.HasPrefix(cmd, "helm install ") {
			paths = append(paths, installPath{install: []string{cmd}})
		} else if len(paths) > 0 {
			paths[len(paths)-1].install = append(paths[len(paths)-1].install, cmd)
		}
	}
	var kubectlDelete, helmUninstall string
	for _, cmd := range blocks[1] {
		switch {
		case strings.HasPrefix(cmd, "kubectl delete "):
			kubectlDelete = cmd
		case strings.HasPrefix(cmd, "helm uninstall "):
			helmUninstall = cmd
		}
	}
	if kubectlDelete == "" || helmUninstall == "" {
		t.Fatalf("the README's uninstall block lacks kubectl delete or helm uninstall: %q", blocks[1])
	}
	for i := range paths {
		paths[i].uninstall = kubectlDelete
		if strings.HasPrefix(paths[i].install[0], "helm ") {
			paths[i].uninstall = helmUninstall
		}
	}
	if len(paths) < 11 {
		t.Fatalf("found %d install paths in the README, want the bundle and Helm in three variants each, and five kustomize directories: %q", len(paths), blocks[0])
	}
	seen := map[string]int{}
	for _, p := range paths {
		seen[variantOf(p.install[0]).Name]++
	}
	for _, v := range install.Variants {
		if seen[v.Name] < 3 {
			t.Errorf("the README installs the %s variant by %d paths, want each of the bundle, kustomize and Helm", v.Name, seen[v.Name])
		}
	}
	return paths
}

// variantOf is the variant an install command installs: monitoring unless it
// names a PostgreSQL bundle, kustomize directory or chart values.
func variantOf(cmd string) install.Variant {
	for _, v := range install.Variants {
		if v.Options.Postgres && (strings.Contains(cmd, " "+v.Bundle) || strings.HasSuffix(strings.Fields(cmd)[len(strings.Fields(cmd))-1], v.Kustomize) ||
			strings.HasPrefix(cmd, "helm ") && containsAll(cmd, v.HelmValues)) {
			return v
		}
	}
	return install.Variants[0]
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// shBlocks returns the commands of every ```sh block of text, comments
// dropped and continued lines joined.
func shBlocks(text string) [][]string {
	var blocks [][]string
	var cur []string
	in, pending := false, ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in, cur = true, nil
			continue
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, cur)
			continue
		case !in:
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			pending += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		cur = append(cur, pending+line)
		pending = ""
	}
	return blocks
}

// Every install command of the README, run as written in a shell against an
// apiserver that has no CRDs, exits 0 and leaves the operator, its RBAC, its
// webhook and its dashboard; the lookout binary, run with the arguments of the
// installed Deployment and a token of the installed ServiceAccount, applies
// its self-monitoring objects (and, from Helm, the CRDs); the README's
// uninstall command leaves a cluster where AlertmanagerConfigs still list and
// a namespace holding one deletes.
func TestTheREADMEInstallCommandsWorkOnAClusterWithoutCRDs(t *testing.T) {
	paths := readmeInstallPaths(t)
	bin := buildLookout(t)
	for _, p := range paths {
		v := variantOf(p.install[0])
		t.Run(p.install[0], func(t *testing.T) {
			empty, err := controlplane.Start(testCtx, controlplane.Options{Log: os.Stderr})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(empty.Stop)
			c, err := client.New(empty.RESTConfig, client.Options{Scheme: crdScheme(t)})
			if err != nil {
				t.Fatal(err)
			}
			var crds apiextensionsv1.CustomResourceDefinitionList
			if err := c.List(testCtx, &crds); err != nil || len(crds.Items) != 0 {
				t.Fatalf("the control plane starts with %d CRDs (%v), want none", len(crds.Items), err)
			}
			certManager := strings.Contains(p.install[0], install.CertManagerDir)
			if certManager {
				// The overlay's prerequisite: cert-manager's kinds.
				installCertManagerStandIns(t, empty.RESTConfig)
			}
			for _, cmd := range p.install {
				shell(t, empty, cmd)
			}
			expectInstalled(t, c, v)
			installsCRDs := strings.HasPrefix(p.install[0], "helm ")
			if installsCRDs && v.Options.Monitoring() {
				// An older release's operator left a schema without a field
				// this version reads: the upgrade must bring it.
				applyOlderServiceMonitorCRD(t, c)
			}
			if !certManager {
				// Under cert-manager the operator serves the certificate
				// cert-manager issues, and there is no cert-manager here.
				runInstalledOperator(t, empty, bin, v).Stop()
			}
			if installsCRDs && v.Options.Monitoring() {
				var crd apiextensionsv1.CustomResourceDefinition
				if err := c.Get(testCtx, client.ObjectKey{Name: serviceMonitorCRD}, &crd); err != nil {
					t.Fatal(err)
				}
				if _, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties[upgradedField]; !ok {
					t.Errorf("after the operator of the new release ran, CRD %s still lacks spec.%s", serviceMonitorCRD, upgradedField)
				}
			}
			expectCRDsOf(t, c, v)
			if !v.Options.Monitoring() {
				// The PostgresCluster the operator reconciled outlives it.
				shell(t, empty, p.uninstall)
				expectUninstalled(t, c)
				if out := shell(t, empty, "kubectl get postgresclusters -A"); !strings.Contains(out, "hippo") {
					t.Errorf("after the uninstall, kubectl get postgresclusters -A does not list db/hippo:\n%s", out)
				}
				return
			}

			// An AlertmanagerConfig in a namespace of its own, then the uninstall.
			team := createAlertmanagerConfig(t, c)
			shell(t, empty, p.uninstall)
			expectWorkingAfterUninstall(t, empty, c, team)
		})
	}
}

func crdScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, monitoringv1.AddToScheme, monitoringv1alpha1.AddToScheme, apiextensionsv1.AddToScheme, postgresv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// shell runs one README command as a user would type it, with the kubectl
// and helm that make tools builds first on PATH, and fails unless it exits 0.
func shell(t *testing.T, cp *controlplane.ControlPlane, command string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.CommandContext(testCtx, "sh", "-c", command)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(kubectl)+string(os.PathListSeparator)+filepath.Dir(helm)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+cp.KubeconfigPath,
		"HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_DATA_HOME="+filepath.Join(home, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out.String())
	}
	return out.String()
}

// expectInstalled checks what every path installs, and that the roles of
// the systems v leaves out are not there.
func expectInstalled(t *testing.T, c client.Client, v install.Variant) {
	t.Helper()
	ns := install.DefaultNamespace
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: install.Name}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: install.Name}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: install.Name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: install.Name}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lookout-webhook"}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "lookout"}},
	}
	systems := map[string]bool{"monitoring": v.Options.Monitoring(), "postgres": v.Options.Postgres}
	if systems["monitoring"] {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: install.DashboardName}})
	}
	for _, o := range objs {
		if err := c.Get(testCtx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Errorf("after the install, %T %s: %v", o, client.ObjectKeyFromObject(o), err)
		}
	}
	for system, on := range systems {
		// A ClusterRole, or a Role in each watched namespace (the namespaced overlay).
		name := install.Name + "-" + system + "-watched"
		clusterErr := c.Get(testCtx, client.ObjectKey{Name: name}, &rbacv1.ClusterRole{})
		roleErr := c.Get(testCtx, client.ObjectKey{Namespace: install.ExampleWatchNamespaces[0], Name: name}, &rbacv1.Role{})
		if on && clusterErr != nil && roleErr != nil {
			t.Errorf("the %s variant installs no ClusterRole or Role %s: %v, %v", v.Name, name, clusterErr, roleErr)
		}
		if !on && (!apierrors.IsNotFound(clusterErr) || !apierrors.IsNotFound(roleErr)) {
			t.Errorf("the %s variant installs %s (%v, %v), the rights of a system it leaves out", v.Name, name, clusterErr, roleErr)
		}
	}
}

// expectCRDsOf checks that the CRDs of v's systems are served and no other.
func expectCRDsOf(t *testing.T, c client.Client, v install.Variant) {
	t.Helper()
	want := map[string]bool{controller.PostgresCRDName: v.Options.Postgres}
	for _, name := range controller.CRDNames {
		want[name] = v.Options.Monitoring()
	}
	for name, served := range want {
		var crd apiextensionsv1.CustomResourceDefinition
		err := c.Get(testCtx, client.ObjectKey{Name: name}, &crd)
		if served && err != nil {
			t.Errorf("the %s variant: CRD %s: %v", v.Name, name, err)
		}
		if !served && !apierrors.IsNotFound(err) {
			t.Errorf("the %s variant installs CRD %s (%v), of a system it leaves out", v.Name, name, err)
		}
	}
}

// runInstalledOperator runs the lookout binary with the arguments of the
// installed Deployment (out of the cluster: the webhook by URL, the cert
// directory and the probes' addresses its own) and a token of the installed
// ServiceAccount, until its self-monitoring objects exist (monitoring) and a
// PostgresCluster db/hippo has its Services and its instance managers' Role
// (PostgreSQL).
func runInstalledOperator(t *testing.T, cp *controlplane.ControlPlane, bin string, v install.Variant, extra ...string) *devenv.Operator {
	t.Helper()
	c, err := client.New(cp.RESTConfig, client.Options{Scheme: crdScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := c.Get(testCtx, client.ObjectKey{Namespace: install.DefaultNamespace, Name: install.Name}, &d); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args[1:] {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--reloader-image", "--metrics-bind-address", "--health-probe-bind-address", "--webhook-cert-dir":
			continue // devenv.StartOperator sets its own
		}
		args = append(args, a)
	}
	args = append(append(args, "--leader-election-namespace="+install.DefaultNamespace), extra...)
	dir := t.TempDir()
	op, err := devenv.StartOperator(testCtx, bin, serviceAccountKubeconfig(t, cp, dir), filepath.Join(dir, "operator.log"), args...)
	if err != nil {
		t.Fatalf("the operator does not start with %q: %v", args, err)
	}
	t.Cleanup(op.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(op.LogPath)
			t.Logf("operator log (%s):\n%s", op.LogPath, lastLines(string(log), 60))
		}
	})
	ns := install.DefaultNamespace
	var expected []client.Object
	if v.Options.Monitoring() {
		expected = append(expected,
			&monitoringv1.ServiceMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: install.Name}},
			&monitoringv1.PodMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: install.ReloaderPodMonitorName}},
			&monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: install.Name}})
	}
	if v.Options.Postgres {
		expected = append(expected, postgresClusterObjects(t, c, v.Options.Monitoring())...)
	}
	var missing string
	err = wait.PollUntilContextTimeout(testCtx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, o := range expected {
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				missing = fmt.Sprintf("%T %s: %v", o, client.ObjectKeyFromObject(o), err)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		log, _ := os.ReadFile(op.LogPath)
		t.Fatalf("the operator run as installed (%q) did not apply what it should (%s): %v\n%s", args, missing, err, devenv.LastBytes(log, 8192))
	}
	return op
}

// serviceAccountKubeconfig writes a kubeconfig with a token of the
// installed ServiceAccount.
func serviceAccountKubeconfig(t *testing.T, cp *controlplane.ControlPlane, dir string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lookout"] = &clientcmdapi.Cluster{Server: cp.Host, CertificateAuthorityData: cp.CACert}
	cfg.AuthInfos["lookout"] = &clientcmdapi.AuthInfo{Token: serviceAccountToken(t, cp)}
	cfg.Contexts["lookout"] = &clientcmdapi.Context{Cluster: "lookout", AuthInfo: "lookout"}
	cfg.CurrentContext = "lookout"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// expectUninstalled checks that the operator's Deployment is gone.
func expectUninstalled(t *testing.T, c client.Client) {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(testCtx, client.ObjectKey{Namespace: install.DefaultNamespace, Name: install.Name}, &d); !apierrors.IsNotFound(err) {
		t.Errorf("after the uninstall the Deployment is still there (%v)", err)
	}
}

// expectWorkingAfterUninstall checks what a user checks after removing the
// operator: its objects are gone, AlertmanagerConfigs list (no conversion
// webhook pointing at a Service that is gone), and a namespace holding one
// deletes.
func expectWorkingAfterUninstall(t *testing.T, cp *controlplane.ControlPlane, c client.Client, team *corev1.Namespace) {
	t.Helper()
	expectUninstalled(t, c)
	if out := shell(t, cp, "kubectl get alertmanagerconfigs -A"); !strings.Contains(out, "routing") {
		t.Errorf("kubectl get alertmanagerconfigs -A does not list team/routing:\n%s", out)
	}
	if err := c.Delete(testCtx, team); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(testCtx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(team), &corev1.Namespace{})), nil
	})
	if err != nil {
		var ns corev1.Namespace
		_ = c.Get(testCtx, client.ObjectKeyFromObject(team), &ns)
		t.Fatalf("namespace %s holding an AlertmanagerConfig did not delete: %v", team.Name, fmt.Sprint(ns.Status.Conditions))
	}
}

const (
	serviceMonitorCRD = "servicemonitors.monitoring.coreos.com"
	upgradedField     = "scrapeClass"
)

// applyOlderServiceMonitorCRD applies the ServiceMonitor CRD without
// spec.scrapeClass, as the operator of an older release would have.
func applyOlderServiceMonitorCRD(t *testing.T, c client.Client) {
	t.Helper()
	all, err := crds.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		if crd.Name != serviceMonitorCRD {
			continue
		}
		delete(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties, upgradedField)
		if err := crds.Apply(testCtx, c, []*apiextensionsv1.CustomResourceDefinition{crd}, crds.FieldOwner, time.Minute); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no CRD %s is embedded", serviceMonitorCRD)
}

// serviceAccountToken is a token of the installed ServiceAccount lookout.
func serviceAccountToken(t *testing.T, cp *controlplane.ControlPlane) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	expiry := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(install.DefaultNamespace).CreateToken(testCtx, install.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("request a token for ServiceAccount %s/%s: %v", install.DefaultNamespace, install.Name, err)
	}
	return tr.Status.Token
}

// A release with the conversion webhook on, then turned off by the value
// that removes the whole webhook: the operator of the new release points the
// AlertmanagerConfig CRD's conversion back to None, so AlertmanagerConfigs
// still list in every version and their namespaces delete, after the
// release is gone too.
func TestTurningTheWebhookOffReleasesTheConversionWebhook(t *testing.T) {
	bin := buildLookout(t)
	empty, err := controlplane.Start(testCtx, controlplane.Options{Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(empty.Stop)
	c, err := client.New(empty.RESTConfig, client.Options{Scheme: crdScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	// Both runs serve at one address, as the Service would be one.
	at := []string{fmt.Sprintf("--webhook-port=%d", ports[0]), fmt.Sprintf("--webhook-url=https://127.0.0.1:%d", ports[0])}

	shell(t, empty, "helm install lookout charts/lookout -n lookout-system --create-namespace --set webhook.conversion=true")
	op := runInstalledOperator(t, empty, bin, install.Variants[0], at...)
	waitConversion(t, c, "Webhook")
	op.Stop()
	team := createAlertmanagerConfig(t, c)

	shell(t, empty, "helm upgrade lookout charts/lookout -n lookout-system --reuse-values --set webhook.enabled=false")
	op = runInstalledOperator(t, empty, bin, install.Variants[0], at...)
	waitConversion(t, c, "None")
	op.Stop()
	shell(t, empty, "helm uninstall lookout -n lookout-system")
	expectWorkingAfterUninstall(t, empty, c, team)
}

// waitConversion waits until the AlertmanagerConfig CRD converts by want.
func waitConversion(t *testing.T, c client.Client, want string) {
	t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(testCtx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: "alertmanagerconfigs.monitoring.coreos.com"}, &crd); err != nil || crd.Spec.Conversion == nil {
			return false, nil
		}
		got = string(crd.Spec.Conversion.Strategy)
		return got == want, nil
	})
	if err != nil {
		t.Fatalf("the AlertmanagerConfig CRD's conversion is %q, want %s", got, want)
	}
}

// buildLookout builds the lookout binary for this test.
func buildLookout(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lookout")
	build := exec.CommandContext(testCtx, "go", "build", "-o", bin, "./cmd/lookout")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build lookout: %v\n%s", err, out)
	}
	return bin
}

// createAlertmanagerConfig creates the namespace team holding the
// AlertmanagerConfig team/routing, and returns the namespace.
func createAlertmanagerConfig(t *testing.T, c client.Client) *corev1.Namespace {
	t.Helper()
	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	amc := &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: team.Name, Name: "routing"},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route:     &monitoringv1alpha1.Route{Receiver: "null"},
			Receivers: []monitoringv1alpha1.Receiver{{Name: "null"}},
		},
	}
	for _, o := range []client.Object{team, amc} {
		if err := c.Create(testCtx, o); err != nil {
			t.Fatal(err)
		}
	}
	return team
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
