package install

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql/parser"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/install"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/scheme"
	"github.com/lookout-operator/lookout/internal/webhook"
)

// forbiddenCounter records every 403 the operator's client receives.
type forbiddenCounter struct {
	next http.RoundTripper
	mu   *sync.Mutex
	seen *[]string
}

func (f forbiddenCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		f.mu.Lock()
		*f.seen = append(*f.seen, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
		f.mu.Unlock()
	}
	return resp, err
}

// installWithHelm installs the chart for real (the release is stored in a
// Secret, which must stay under 1 MiB) and uninstalls it when the test ends.
func installWithHelm(t *testing.T) {
	t.Helper()
	runTool(t, nil, helm, "--kubeconfig", cp.KubeconfigPath, "install", install.Name, install.ChartDir, "--namespace", install.DefaultNamespace)
	t.Cleanup(func() {
		runTool(t, nil, helm, "--kubeconfig", cp.KubeconfigPath, "uninstall", install.Name, "--namespace", install.DefaultNamespace)
	})
}

// installWithKustomize applies a kustomize directory for real.
func installWithKustomize(dir string) func(*testing.T) {
	return func(t *testing.T) {
		t.Helper()
		runTool(t, nil, kubectl, "--kubeconfig", cp.KubeconfigPath, "apply", "--server-side", "-k", dir)
	}
}

// operatorConfig is a client configuration of control plane c with a token
// of the operator's ServiceAccount, counting 403s.
func operatorConfig(t *testing.T, c *controlplane.ControlPlane, mu *sync.Mutex, forbidden *[]string) *rest.Config {
	t.Helper()
	return &rest.Config{
		Host:            c.Host,
		BearerToken:     serviceAccountToken(t, c),
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CACert},
		QPS:             500, Burst: 1000,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return forbiddenCounter{next: rt, mu: mu, seen: forbidden}
		},
	}
}

// operatorRun is what the Deployment's flags say: --namespaces,
// --manage-rbac, and the variant's --controllers and --self-monitoring.
type operatorRun struct {
	namespaces   []string
	generateRBAC bool
	variant      install.Variant
}

// startOperator runs the operator in this process the way `lookout operator`
// wires it from the Deployment's flags: leader election in the operator
// namespace, the webhook with managed certificates behind the lookout-webhook
// Service, the controllers.
func startOperator(t *testing.T, cfg *rest.Config, run operatorRun) {
	t.Helper()
	namespaces, o := run.namespaces, run.variant.Options
	pg := controller.PostgresOptions{Image: "lookout-postgres:test"}
	if o.Postgres {
		inst, err := gather.PostgresInstallation(testCtx, gather.DefaultPostgresBinDirs)
		if err != nil {
			t.Fatalf("the PostgreSQL of this machine (postgresql-15): %v", err)
		}
		pg.Installation = &inst
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	port := ports[0]
	wh := webhook.Options{
		Host:         "127.0.0.1",
		Port:         port,
		CertDir:      t.TempDir(),
		ManageCerts:  true,
		Namespace:    install.DefaultNamespace,
		Postgres:     pg.Installation,
		NoMonitoring: !o.Monitoring(),
	}
	lease := 4 * time.Second
	renew := 3 * time.Second
	retry := 500 * time.Millisecond
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.Scheme,
		WebhookServer:          crwebhook.NewServer(wh.ServerOptions()),
		Cache:                  controller.CacheOptions(namespaces),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// One operator per mode, one after the other, in this process.
		Controller:                    config.Controller{SkipNameValidation: &skipNameValidation},
		LeaderElection:                true,
		LeaderElectionID:              "lookout-operator-leader",
		LeaderElectionNamespace:       install.DefaultNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
		Client: client.Options{Cache: &client.CacheOptions{
			DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := webhook.Setup(mgr, wh); err != nil {
		t.Fatal(err)
	}
	if err := controller.Setup(mgr, controller.Options{Workers: 2, ReloaderImage: "lookout-reloader:test", NoRBAC: !run.generateRBAC,
		Controllers: install.Controllers(o), Postgres: pg}); err != nil {
		t.Fatal(err)
	}
	// Every install variant with monitoring passes --self-monitoring: the
	// operator applies its ServiceMonitor, the reloaders' PodMonitor and its
	// PrometheusRule, with the rights the install grants it.
	if o.Monitoring() {
		if err := mgr.Add(install.SelfMonitoring{
			Client:  mgr.GetClient(),
			Options: install.Options{Namespace: install.DefaultNamespace, WatchNamespaces: namespaces},
			Log:     ctrl.Log.WithName("self-monitoring"),
		}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("operator stopped: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

var skipNameValidation = true

// forbiddenSoFar, when set, tells what the operator was refused so far: a
// missing permission usually shows as a condition that never comes.
var forbiddenSoFar func() string

// eventually polls cond until it holds, failing with what it last said.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(testCtx, 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		refused := ""
		if forbiddenSoFar != nil {
			refused = forbiddenSoFar()
		}
		t.Fatalf("%s: %v (last: %s)%s", what, err, last, refused)
	}
}

func TestTheOperatorRunsWithItsOwnServiceAccountWithoutAForbiddenRequest(t *testing.T) {
	for _, m := range []struct {
		name    string
		install func(*testing.T)
		// watch is --namespaces; ns is where the objects are.
		watch []string
		ns    string
		// generateRBAC is --manage-rbac, as the install variant passes it.
		generateRBAC bool
		// reapply, once the operator has injected its CA bundle, applies
		// the install again with a change.
		reapply func(*testing.T)
	}{
		{name: "installed by the Helm chart, watching all namespaces", install: installWithHelm, ns: "app"},
		{name: "installed by the namespaced kustomize overlay, watching its example namespace", install: installWithKustomize(install.NamespacedDir),
			watch: install.ExampleWatchNamespaces, ns: install.ExampleWatchNamespaces[0], reapply: reapplyWithAnotherTimeout(install.NamespacedDir)},
		// Last: the RBAC it generates stays behind.
		{name: "installed by the generated-RBAC kustomize overlay, watching all namespaces", install: installWithKustomize(install.GeneratedRBACDir),
			ns: "app-rbac", generateRBAC: true},
	} {
		t.Run(m.name, func(t *testing.T) {
			m.install(t)
			leastPrivilegeFlow(t, m.watch, m.ns, m.generateRBAC, m.reapply)
		})
	}
	t.Run("the dashboard and the alerts query only metrics the operator and the reloader export", checkQueries)
}

// leastPrivilegeFlow runs the operator with the RBAC just installed, as its
// ServiceAccount, watching watch, and goes through every kind in ns; it fails
// on any 403.
func leastPrivilegeFlow(t *testing.T, watch []string, ns string, generateRBAC bool, reapply func(*testing.T)) {
	var mu sync.Mutex
	var forbidden []string
	startOperator(t, operatorConfig(t, cp, &mu, &forbidden), operatorRun{namespaces: watch, generateRBAC: generateRBAC, variant: install.Variants[0]})
	forbiddenSoFar = func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("; forbidden so far: %d\n%s", len(forbidden), strings.Join(forbidden, "\n"))
	}
	t.Cleanup(func() { forbiddenSoFar = nil })

	if err := k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	all := &metav1.LabelSelector{}
	prom := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform"},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
				ServiceMonitorSelector:          all,
				ServiceMonitorNamespaceSelector: all,
			},
			RuleSelector:          all,
			RuleNamespaceSelector: all,
		},
	}
	good := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "checkout"},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": "checkout"}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics"}},
		},
	}
	if len(watch) == 0 {
		// Targets in every namespace: the discovery RBAC is a ClusterRole.
		good.Spec.NamespaceSelector = monitoringv1.NamespaceSelector{Any: true}
	}
	bad := good.DeepCopy()
	bad.Name = "broken"
	bad.Spec.Endpoints[0].RelabelConfigs = []monitoringv1.RelabelConfig{{Action: "replace", Regex: "(unclosed", TargetLabel: "x"}}
	rule := install.PrometheusRule(install.Options{Namespace: ns})
	rule.Labels = nil
	// Its own name: in the namespaced variant ns is the operator's namespace,
	// where self-monitoring applies the install's rule as "lookout".
	rule.Name = "lookout-alerts-copy"
	am := &monitoringv1.Alertmanager{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec:       monitoringv1.AlertmanagerSpec{AlertmanagerConfigSelector: all},
	}
	amc := &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "routing"},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route:     &monitoringv1alpha1.Route{Receiver: "null"},
			Receivers: []monitoringv1alpha1.Receiver{{Name: "null"}},
		},
	}
	// The two other workload kinds: an agent in DaemonSet mode (the controller writes a
	// DaemonSet) and a ThanosRuler (a StatefulSet and rule ConfigMaps of its own).
	daemonSet := monitoringv1alpha1.DaemonSetPrometheusAgentMode
	agent := &monitoringv1alpha1.PrometheusAgent{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
		Spec: monitoringv1alpha1.PrometheusAgentSpec{
			Mode: &daemonSet,
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
				PodMonitorSelector: all,
				RemoteWrite:        []monitoringv1.RemoteWriteSpec{{URL: "http://central.example:9090/api/v1/write"}},
			},
		},
	}
	ruler := &monitoringv1.ThanosRuler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "global"},
		Spec: monitoringv1.ThanosRulerSpec{
			QueryEndpoints: []string{"http://thanos-query." + ns + ".svc:9090"},
			RuleSelector:   all,
		},
	}
	for _, o := range []client.Object{prom, good, bad, rule, am, amc, agent, ruler} {
		if err := k8s.Create(testCtx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}

	eventually(t, "the operator holds the leader Lease", func() (bool, string) {
		var l coordinationv1.Lease
		err := k8s.Get(testCtx, client.ObjectKey{Namespace: install.DefaultNamespace, Name: "lookout-operator-leader"}, &l)
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", fmt.Sprint(err)
	})
	eventually(t, "the webhook certificate is issued and its CA bundle injected", func() (bool, string) {
		var s corev1.Secret
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: install.DefaultNamespace, Name: webhook.DefaultSecretName}, &s); err != nil {
			return false, err.Error()
		}
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := k8s.Get(testCtx, client.ObjectKey{Name: webhook.DefaultConfigurationName}, &vwc); err != nil {
			return false, err.Error()
		}
		return len(vwc.Webhooks) > 0 && len(vwc.Webhooks[0].ClientConfig.CABundle) > 0, "no CA bundle yet"
	})
	if reapply != nil {
		reapply(t)
	}
	eventually(t, "the Prometheus is reconciled with its StatefulSet, config and discovery RBAC", func() (bool, string) {
		var p monitoringv1.Prometheus
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(prom), &p); err != nil {
			return false, err.Error()
		}
		if c := findCondition(p.Status.Conditions, monitoringv1.Reconciled); c == nil || c.Status != monitoringv1.ConditionTrue {
			return false, fmt.Sprintf("Reconciled: %+v", c)
		}
		var sts appsv1.StatefulSet
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-platform"}, &sts); err != nil {
			return false, err.Error()
		}
		var roles rbacv1.RoleList
		var crs rbacv1.ClusterRoleList
		if err := k8s.List(testCtx, &roles, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/managed-by": "lookout"}); err != nil {
			return false, err.Error()
		}
		if err := k8s.List(testCtx, &crs, client.MatchingLabels{"app.kubernetes.io/managed-by": "lookout"}); err != nil {
			return false, err.Error()
		}
		if !generateRBAC {
			// As prometheus-operator: the user provides the Prometheus's RBAC.
			if len(roles.Items)+len(crs.Items) > 0 {
				t.Fatalf("the operator without --manage-rbac generated %d Roles and %d ClusterRoles", len(roles.Items), len(crs.Items))
			}
			return true, ""
		}
		if len(watch) > 0 {
			var r rbacv1.Role
			err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: promrender.RBACName(prom)}, &r)
			return err == nil, fmt.Sprintf("discovery Role: %v", err)
		}
		if len(crs.Items) == 0 {
			return false, "no generated ClusterRole"
		}
		return true, ""
	})
	eventually(t, "the bindings say the good monitor and the rule are accepted, the broken monitor rejected", func() (bool, string) {
		var g, b monitoringv1.ServiceMonitor
		var r monitoringv1.PrometheusRule
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(good), &g); err != nil {
			return false, err.Error()
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(bad), &b); err != nil {
			return false, err.Error()
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(rule), &r); err != nil {
			return false, err.Error()
		}
		return accepted(g.Status.Bindings) == "True" && accepted(b.Status.Bindings) == "False" && accepted(r.Status.Bindings) == "True",
			fmt.Sprintf("good %s, broken %s, rule %s", accepted(g.Status.Bindings), accepted(b.Status.Bindings), accepted(r.Status.Bindings))
	})
	if len(watch) == 0 {
		// The Prometheus selects rules in every namespace, the install's
		// own alerts included: the controller accepts them.
		eventually(t, "the install's PrometheusRule is accepted by the controller", func() (bool, string) {
			var r monitoringv1.PrometheusRule
			if err := k8s.Get(testCtx, client.ObjectKey{Namespace: install.DefaultNamespace, Name: install.Name}, &r); err != nil {
				return false, err.Error()
			}
			return accepted(r.Status.Bindings) == "True", "binding " + accepted(r.Status.Bindings)
		})
	}
	eventually(t, "the rejection is an Event on the broken monitor", func() (bool, string) {
		var evs eventsv1.EventList
		if err := k8s.List(testCtx, &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == bad.Name && e.Type == corev1.EventTypeWarning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none a warning on %s", len(evs.Items), bad.Name)
	})
	eventually(t, "the Alertmanager is reconciled and accepts the AlertmanagerConfig", func() (bool, string) {
		var a monitoringv1.Alertmanager
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(am), &a); err != nil {
			return false, err.Error()
		}
		if c := findCondition(a.Status.Conditions, monitoringv1.Reconciled); c == nil || c.Status != monitoringv1.ConditionTrue {
			return false, fmt.Sprintf("Reconciled: %+v", c)
		}
		var c monitoringv1alpha1.AlertmanagerConfig
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(amc), &c); err != nil {
			return false, err.Error()
		}
		return accepted(c.Status.Bindings) == "True", "binding " + accepted(c.Status.Bindings)
	})

	eventually(t, "the PrometheusAgent is reconciled with its DaemonSet", func() (bool, string) {
		var a monitoringv1alpha1.PrometheusAgent
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(agent), &a); err != nil {
			return false, err.Error()
		}
		if c := findCondition(a.Status.Conditions, monitoringv1.Reconciled); c == nil || c.Status != monitoringv1.ConditionTrue {
			return false, fmt.Sprintf("Reconciled: %+v", c)
		}
		err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prom-agent-edge"}, &appsv1.DaemonSet{})
		return err == nil, fmt.Sprintf("DaemonSet: %v", err)
	})
	eventually(t, "the ThanosRuler is reconciled with its StatefulSet and binds the rule", func() (bool, string) {
		var tr monitoringv1.ThanosRuler
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(ruler), &tr); err != nil {
			return false, err.Error()
		}
		if c := findCondition(tr.Status.Conditions, monitoringv1.Reconciled); c == nil || c.Status != monitoringv1.ConditionTrue {
			return false, fmt.Sprintf("Reconciled: %+v", c)
		}
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "thanos-ruler-global"}, &appsv1.StatefulSet{}); err != nil {
			return false, fmt.Sprintf("StatefulSet: %v", err)
		}
		var r monitoringv1.PrometheusRule
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(rule), &r); err != nil {
			return false, err.Error()
		}
		for _, b := range r.Status.Bindings {
			if b.Resource == monitoringv1.ThanosRulerName {
				return true, ""
			}
		}
		return false, "no thanosrulers binding on the rule"
	})

	// Deletion: the finalizers prune the cluster-scoped RBAC and let go.
	for _, o := range []client.Object{prom, agent, ruler} {
		if err := k8s.Delete(testCtx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []client.Object{prom, agent, ruler} {
		key, into := client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object)
		eventually(t, fmt.Sprintf("the %T is finalized and gone", o), func() (bool, string) {
			err := k8s.Get(testCtx, key, into)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}

	mu.Lock()
	defer mu.Unlock()
	if len(forbidden) > 0 {
		sort.Strings(forbidden)
		t.Fatalf("the operator got %d forbidden responses with the install's RBAC:\n%s", len(forbidden), strings.Join(forbidden, "\n"))
	}
}

// checkQueries checks every query of the dashboard and the alerts against the
// metrics the operator exported while it ran.
func checkQueries(t *testing.T) {
	exported := exportedMetrics(t)
	var exprs []string
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(install.DashboardJSON), &dash); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, grafanaVariables.Replace(tg.Expr))
		}
	}
	for _, g := range install.PrometheusRule(install.Options{}).Spec.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr.String())
		}
	}
	for _, expr := range exprs {
		e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
		if err != nil {
			t.Errorf("query %q does not parse: %v", expr, err)
			continue
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok && !exported[vs.Name] {
				t.Errorf("query %q reads %s, which neither the operator nor the reloader exports", expr, vs.Name)
			}
			return nil
		})
	}
}

// grafanaVariables replaces the dashboard's variables by values PromQL parses.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$job", ".*")

// exportedMetrics are the metric names the operator exported during the
// flow (controller-runtime's, client-go's, Go's, Lookout's, the webhook's),
// those of Lookout's collectors that had no sample, and the reloader's (it
// runs in the generated pods, and defines its metrics in one file).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	addHistogram := func(name string) {
		out[name] = true
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			out[name+s] = true
		}
	}
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		addHistogram(f.GetName())
	}
	descs := make(chan *prometheus.Desc, 100)
	go func() {
		for _, c := range controller.Collectors {
			c.Describe(descs)
		}
		close(descs)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			addHistogram(m[1])
		}
	}
	src, err := os.ReadFile(filepath.Join(repoRoot, "internal", "reloader", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`Name: "(lookout_reloader_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = true
	}
	// Prometheus writes up for every target it scrapes (LookoutNoLeader
	// counts the operator's replicas with it).
	out["up"] = true
	if !out[webhook.CertificateExpiryMetric] || !out["lookout_reconcile_errors_total"] {
		t.Fatalf("the operator's own metrics are missing from the registry: %v", slices.Sorted(maps.Keys(out)))
	}
	return out
}

func findCondition(cs []monitoringv1.Condition, t monitoringv1.ConditionType) *monitoringv1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// accepted is the Accepted status of the first binding, "" when none.
func accepted(bs []monitoringv1.WorkloadBinding) string {
	for _, b := range bs {
		for _, c := range b.Conditions {
			if c.Type == monitoringv1.Accepted {
				return string(c.Status)
			}
		}
	}
	return ""
}

// reapplyWithAnotherTimeout applies the kustomize directory again, as its
// user upgrading it would, with a changed webhook timeout: the operator owns
// only the CA bundle of the configuration the install ships, so the apply
// meets no field conflict, the timeout changes and the bundle stays.
func reapplyWithAnotherTimeout(dir string) func(*testing.T) {
	return func(t *testing.T) {
		t.Helper()
		rendered := runTool(t, nil, kubectl, "kustomize", dir)
		changed := strings.ReplaceAll(string(rendered), "timeoutSeconds: 5", "timeoutSeconds: 7")
		if changed == string(rendered) {
			t.Fatal("the install has no timeoutSeconds: 5 to change")
		}
		runTool(t, []byte(changed), kubectl, "--kubeconfig", cp.KubeconfigPath, "apply", "--server-side", "-f", "-")
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := k8s.Get(testCtx, client.ObjectKey{Name: webhook.DefaultConfigurationName}, &vwc); err != nil {
			t.Fatal(err)
		}
		for _, w := range vwc.Webhooks {
			if w.TimeoutSeconds == nil || *w.TimeoutSeconds != 7 || len(w.ClientConfig.CABundle) == 0 {
				t.Fatalf("after the install's apply, webhook %s has timeout %v and a CA bundle of %d bytes; want 7 and the operator's bundle", w.Name, w.TimeoutSeconds, len(w.ClientConfig.CABundle))
			}
		}
		// Back to the install as it ships, for what follows.
		runTool(t, rendered, kubectl, "--kubeconfig", cp.KubeconfigPath, "apply", "--server-side", "-f", "-")
	}
}
