// Command demo tells Lookout's story in one command: a local control plane,
// the operator, the examples, a real Prometheus run from the StatefulSet the
// operator generated, scraping a target in its own network namespace, and two
// peered Alertmanager replicas delivering its always-firing alert to a local
// alert sink.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/localpod"
	"github.com/lookout-operator/lookout/internal/scheme"
	"github.com/lookout-operator/lookout/internal/testhost"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func main() {
	localpod.MaybeMountExec()
	testhost.MaybeServe()
	exitAfter := flag.Bool("exit", false, "stop after printing the results instead of waiting for Ctrl-C")
	ldflags := flag.String("ldflags", "", "ldflags for building lookout")
	postgres := flag.Bool("postgres", false, "also run a 3-instance PostgresCluster (examples-postgres/), write through its user Secret, kill its primary and show the failover")
	flag.Parse()
	// The demo's own clients (controller-runtime's) log through its global
	// logger; unset, it prints a "SetLogger was never called" stack trace
	// in the middle of the demo's output after 30 s. Warnings only.
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := run(*exitAfter, *ldflags, *postgres); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) {
	fmt.Printf("\n\033[1m==> "+format+"\033[0m\n", args...)
}

func run(exitAfter bool, ldflags string, postgres bool) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the demo runs Prometheus with bind-mounted volumes and a target in a network namespace: run it as root")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	out := filepath.Join(root, "_output", "demo")
	_ = os.RemoveAll(out)
	if err := os.MkdirAll(filepath.Join(out, "bin"), 0o755); err != nil {
		return err
	}
	if err := devenv.CheckPortsFree(9090); err != nil {
		return err
	}

	step("Building lookout and lookout-reloader (Prometheus and the control plane come from the cache)")
	bins, err := devenv.Build(ctx, root, filepath.Join(out, "bin"), ldflags)
	if err != nil {
		return err
	}
	kubectl, err := controlplane.Kubectl.Ensure(ctx, os.Stderr)
	if err != nil {
		return err
	}

	step("Starting etcd, kube-apiserver and kube-controller-manager on loopback, with the monitoring.coreos.com CRDs")
	kubeconfig := filepath.Join(out, "kubeconfig")
	cp, err := controlplane.Start(ctx, controlplane.Options{Log: os.Stdout, KubeconfigPath: kubeconfig, CRDDir: filepath.Join(root, "config", "crd")})
	if err != nil {
		return err
	}
	defer cp.Stop()
	c, err := client.New(cp.RESTConfig, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	if postgres {
		step("Installing the PostgresCluster CRD (postgres-operator.crunchydata.com/v1beta1)")
		if _, err := controlplane.InstallCRDs(ctx, cp.RESTConfig, filepath.Join(root, controlplane.PostgresCRDDir)); err != nil {
			return err
		}
	}
	// The pods the demo runs in network namespaces share this bridge; the host's address
	// on it is the node's.
	network, err := testhost.NewNetwork()
	if err != nil {
		return err
	}
	defer network.Close()
	node, err := devenv.RegisterNode(ctx, cp, network.HostIP)
	if err != nil {
		return err
	}
	defer node.Stop()
	fmt.Printf("    Node %s (%s): the pods the demo runs as local processes are bound to it and reported as a kubelet would\n", node.Name, node.IP)

	step("Starting the operator: lookout operator --kubeconfig %s (log: %s)", kubeconfig, filepath.Join(out, "operator.log"))
	op, err := devenv.StartOperator(ctx, bins.Lookout, kubeconfig, filepath.Join(out, "operator.log"))
	if err != nil {
		return err
	}
	defer op.Stop()

	step("Starting an example app: a /metrics server in its own network namespace, published as Service default/example-app")
	host, addr, err := devenv.StartTarget(ctx, c, "default", "example-app", 8080)
	if err != nil {
		return err
	}
	defer host.Close()
	fmt.Printf("    target %s (network namespace %s)\n", addr, host.Namespace)

	step("Applying examples/ (one object of each kind; not the ThanosRuler: the demo does not build Thanos, test/e2e runs it)")
	if err := applyExamples(ctx, c, filepath.Join(root, "examples"), "thanosruler.yaml"); err != nil {
		return err
	}
	kc := func(args ...string) {
		cmd := exec.CommandContext(ctx, kubectl, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		_ = cmd.Run()
	}
	kc("get", "prometheuses,servicemonitors,podmonitors,probes,scrapeconfigs,prometheusrules,alertmanagers,alertmanagerconfigs,prometheusagents", "-n", "default")

	step("Running the Prometheus pod the operator generated (StatefulSet default/prometheus-platform) as local processes")
	pod, err := devenv.RunPrometheusPod(ctx, c, cp, bins, "default", "platform", filepath.Join(out, "pod"))
	if err != nil {
		return err
	}
	defer pod.Stop()
	kc("get", "statefulsets,services,secrets,serviceaccounts,roles,rolebindings", "-n", "default", "-l", "lookout.dev/prometheus=platform")

	step("The generated prometheus.yaml (Secret default/prometheus-platform, key prometheus.yaml.gz)")
	cfg, err := devenv.GeneratedConfig(ctx, c, "default", "platform")
	if err != nil {
		return err
	}
	fmt.Println(cfg)

	step("Waiting for Prometheus to scrape the example app (scrapeInterval 15s)")
	target, err := waitForTarget(ctx)
	if err != nil {
		return err
	}
	fmt.Println(target)

	step("Rule groups Prometheus loaded from PrometheusRule default/example-rules (ConfigMap prometheus-platform-rulefiles-0)")
	if groups, err := ruleGroups(); err == nil {
		fmt.Println(groups)
	}

	step("Running the Alertmanager pods the operator generated (StatefulSet default/alertmanager-main, 2 replicas peered as one cluster), each in its own network namespace")
	// The example AlertmanagerConfig sends to http://alert-sink.default.svc:8099/alerts:
	// the demo's alert sink listens on the network's host address, and the pods resolve
	// that name to it.
	sink, err := devenv.StartReceiverOn(network, 8099)
	if err != nil {
		return err
	}
	defer sink.Close()
	ams, err := devenv.RunAlertmanagerPods(ctx, c, cp, bins, network, "default", "main", filepath.Join(out, "alertmanager"),
		map[string]string{"alert-sink.default.svc": network.HostIP})
	if err != nil {
		return err
	}
	defer ams.Stop()
	alertsLog := filepath.Join(out, "alerts.log")
	go logNotifications(ctx, sink, alertsLog)
	fmt.Printf("    replicas at %s; alert sink at %s\n", strings.Join(ams.IPs(), ", "), sink.URL("/alerts"))
	kc("get", "alertmanagers,alertmanagerconfigs", "-n", "default")

	step("Running the PrometheusAgent pod the operator generated (StatefulSet default/prom-agent-edge) in its own network namespace: it scrapes Service default/edge-app and remote-writes to Prometheus default/platform")
	stopAgent, err := runAgent(ctx, c, cp, bins, network, filepath.Join(out, "agent"))
	defer stopAgent()
	if err != nil {
		return err
	}
	kc("get", "prometheusagent/edge", "statefulset/prom-agent-edge", "secret/prom-agent-edge", "service/prometheus-agent-operated", "-n", "default")

	step("lookout render -f examples/ -o alertmanager: offline, the alertmanager.yaml the operator wrote into Secret default/alertmanager-main-generated (a base config plus one route per AlertmanagerConfig)")
	ex := exec.CommandContext(ctx, bins.Lookout, "render", "-f", filepath.Join(root, "examples"), "-o", "alertmanager")
	ex.Stdout, ex.Stderr = os.Stdout, os.Stderr
	_ = ex.Run()

	step("Waiting for the Watchdog alert (PrometheusRule default/example-rules, always firing) to go Prometheus → Alertmanager → the alert sink (evaluation interval 30s, group wait 5s)")
	waitCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	note, err := sink.WaitFor(waitCtx, func(r devenv.Request) bool { return bytes.Contains(r.Body, []byte(`"Watchdog"`)) })
	cancel()
	if err != nil {
		return fmt.Errorf("the Watchdog alert was not delivered: %w\n%s", err, ams.Logs(2048))
	}
	fmt.Printf("    POST %s from Alertmanager (webhook receiver default/example-routing/webhook):\n", note.Path)
	fmt.Println(indentJSON(note.Body))

	step("The pods the demo runs, as the API reports them, and every workload Available")
	if err := waitAvailable(ctx, c, "v1/Prometheus", "v1/Alertmanager", "v1alpha1/PrometheusAgent"); err != nil {
		return err
	}
	kc("get", "nodes", "-o", "wide")
	kc("get", "pods,statefulsets", "-n", "default", "-o", "wide")
	kc("get", "prometheuses,alertmanagers,prometheusagents", "-n", "default")

	step("lookout explain alertmanagerconfig default/example-routing")
	ex = exec.CommandContext(ctx, bins.Lookout, "explain", "alertmanagerconfig", "default/example-routing", "--kubeconfig", kubeconfig)
	ex.Stdout, ex.Stderr = os.Stdout, os.Stderr
	_ = ex.Run()

	step("lookout explain servicemonitor default/example-app")
	ex = exec.CommandContext(ctx, bins.Lookout, "explain", "servicemonitor", "default/example-app", "--kubeconfig", kubeconfig)
	ex.Stdout, ex.Stderr = os.Stdout, os.Stderr
	_ = ex.Run()

	if postgres {
		stopPostgres, err := runPostgres(ctx, c, cp, bins, network, root, out, kc)
		defer stopPostgres()
		if err != nil {
			return err
		}
	}

	step("Explore")
	fmt.Printf(`    export KUBECONFIG=%s
    %s get pods -o wide                                 # the pods the demo runs, on Node lookout-local
    %s get prometheus platform -n default -o yaml       # status: Reconciled, replicas
    %s get servicemonitor example-app -o yaml  # status.bindings: Accepted per Prometheus
    %s explain servicemonitor default/example-app --kubeconfig $KUBECONFIG
    curl -s 'http://127.0.0.1:9090/api/v1/query?query=up' # Prometheus's API
    Edit the ServiceMonitor (kubectl edit servicemonitor example-app) and watch the reloader
    apply it within seconds: %s
    tail -f %s       # every notification the alert sink receives
    curl -s http://%s:9093/api/v2/alerts                       # Alertmanager's API (replica 0)
    %s --alertmanager.url=http://%s:9093 alert query           # the same with amtool
    %s get alertmanagerconfig example-routing -o yaml       # status.bindings: Accepted per Alertmanager
    %s explain alertmanagerconfig default/example-routing --kubeconfig $KUBECONFIG
`, kubeconfig, kubectl, kubectl, kubectl, bins.Lookout, filepath.Join(out, "pod", "config-reloader.log"),
		alertsLog, ams.IPs()[0], bins.Amtool, ams.IPs()[0], kubectl, bins.Lookout)
	if exitAfter {
		return nil
	}
	fmt.Println("\n    Press Ctrl-C to stop everything.")
	<-ctx.Done()
	return nil
}

// applyExamples creates the objects of every YAML file in dir but those named in skip.
func applyExamples(ctx context.Context, c client.Client, dir string, skip ...string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if slices.Contains(skip, filepath.Base(f)) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err == io.EOF {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if obj.GetNamespace() == "" {
				obj.SetNamespace("default") // as kubectl apply would (examples-postgres/hippo.yaml)
			}
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("create %s %s from %s: %w", obj.GetKind(), obj.GetName(), filepath.Base(f), err)
			}
		}
	}
	return nil
}

func ruleGroups() (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:9090/api/v1/rules") //nolint:noctx // local
		if err == nil {
			var out struct {
				Data struct {
					Groups []struct {
						Name  string `json:"name"`
						File  string `json:"file"`
						Rules []struct {
							Name string `json:"name"`
							Type string `json:"type"`
						} `json:"rules"`
					} `json:"groups"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if err == nil && len(out.Data.Groups) > 0 {
				var b strings.Builder
				for _, g := range out.Data.Groups {
					fmt.Fprintf(&b, "    group %s from %s\n", g.Name, g.File)
					for _, r := range g.Rules {
						fmt.Fprintf(&b, "      %s %s\n", r.Type, r.Name)
					}
				}
				return b.String(), nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no rule groups loaded within 30s")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func waitForTarget(ctx context.Context) (string, error) {
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:9090/api/v1/targets?state=active") //nolint:noctx // local
		if err == nil {
			var out struct {
				Data struct {
					ActiveTargets []struct {
						ScrapePool string            `json:"scrapePool"`
						ScrapeURL  string            `json:"scrapeUrl"`
						Health     string            `json:"health"`
						LastScrape string            `json:"lastScrape"`
						Labels     map[string]string `json:"labels"`
					} `json:"activeTargets"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			for _, t := range out.Data.ActiveTargets {
				if t.Health == "up" {
					labels, _ := json.Marshal(t.Labels)
					q := url.QueryEscape(`up{service="example-app"}`)
					return fmt.Sprintf("    scrape pool %s\n    %s  health=%s  last scrape %s\n    labels %s\n    query: curl -s 'http://127.0.0.1:9090/api/v1/query?query=%s'",
						t.ScrapePool, t.ScrapeURL, t.Health, t.LastScrape, labels, q), nil
				}
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("Prometheus did not report the example target up within 90s (last error: %v)", err)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// logNotifications appends every request the alert sink receives to path, one JSON
// document per line, until ctx ends.
func logNotifications(ctx context.Context, sink *devenv.Receiver, path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	for n := 0; ; n++ {
		i := 0
		req, err := sink.WaitFor(ctx, func(devenv.Request) bool { i++; return i > n })
		if err != nil {
			return
		}
		var compact bytes.Buffer
		if json.Compact(&compact, req.Body) != nil {
			compact.Write(req.Body)
		}
		fmt.Fprintf(f, "%s POST %s %s\n", req.Time.Format(time.RFC3339), req.Path, compact.Bytes())
	}
}

// indentJSON pretty-prints a notification, indented for the demo's output.
func indentJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "    ", "  "); err != nil {
		return "    " + string(b)
	}
	return "    " + out.String()
}

// runAgent starts a second example app for the agent on the Alertmanagers' network, with a
// ServiceMonitor the agent selects (team=edge), runs the agent's pod next to it and waits
// for its samples to arrive at the demo's Prometheus (remote-write receiver on) with the
// agent's external label cluster="edge". stop ends what it started, whatever the error.
func runAgent(ctx context.Context, c client.Client, cp *controlplane.ControlPlane, bins devenv.Binaries, network *testhost.Network, dir string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	app, err := network.NewHost()
	if err != nil {
		return stop, err
	}
	stops = append(stops, app.Close)
	if _, err := devenv.PublishTarget(ctx, c, app, "default", "edge-app", 8080); err != nil {
		return stop, err
	}
	sm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
		"metadata": map[string]any{"name": "edge-app", "namespace": "default", "labels": map[string]any{"team": "edge"}},
		"spec": map[string]any{
			"selector":  map[string]any{"matchLabels": map[string]any{"app": "edge-app"}},
			"endpoints": []any{map[string]any{"port": "metrics", "interval": "5s"}},
		},
	}}
	if err := c.Create(ctx, sm); err != nil {
		return stop, err
	}
	agentHost, err := network.NewHost()
	if err != nil {
		return stop, err
	}
	stops = append(stops, agentHost.Close)
	pod, err := devenv.RunStatefulSetPodOn(ctx, c, cp, bins, agentHost,
		map[string]string{"prometheus-platform.default.svc": network.HostIP}, "default", "prom-agent-edge", dir)
	if err != nil {
		return stop, err
	}
	stops = append(stops, pod.Stop)
	q := `up{cluster="edge", service="edge-app"}`
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:9090/api/v1/query?query=" + url.QueryEscape(q)) //nolint:noctx // local
		if err == nil {
			var out struct {
				Data struct {
					Result []struct {
						Metric map[string]string `json:"metric"`
						Value  []any             `json:"value"`
					} `json:"result"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if err == nil && len(out.Data.Result) > 0 {
				r := out.Data.Result[0]
				labels, _ := json.Marshal(r.Metric)
				fmt.Printf("    agent %s scrapes %s; at Prometheus default/platform:\n    %s %v\n    query: curl -s 'http://127.0.0.1:9090/api/v1/query?query=%s'\n",
					agentHost.IP, app.IP+":8080", labels, r.Value, url.QueryEscape(q))
				return stop, nil
			}
		}
		if time.Now().After(deadline) {
			return stop, fmt.Errorf("no sample from the agent reached Prometheus within 90s (last error: %v); agent logs in %s", err, dir)
		}
		select {
		case <-ctx.Done():
			return stop, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// waitAvailable waits until every object of the given kinds ("<version>/<Kind>" of
// monitoring.coreos.com) in namespace default has the condition Available=True: the
// operator counts its pods from its StatefulSet, which counts the pods the node reports
// Ready.
func waitAvailable(ctx context.Context, c client.Client, kinds ...string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var waiting []string
		for _, vk := range kinds {
			version, kind, _ := strings.Cut(vk, "/")
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("monitoring.coreos.com/" + version)
			list.SetKind(kind + "List")
			if err := c.List(ctx, list, client.InNamespace("default")); err != nil {
				return err
			}
			for _, obj := range list.Items {
				conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
				available := false
				for _, cond := range conditions {
					m, _ := cond.(map[string]any)
					available = available || (m["type"] == "Available" && m["status"] == "True")
				}
				if !available {
					waiting = append(waiting, kind+" "+obj.GetName())
				}
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not Available within 2 minutes: %s", strings.Join(waiting, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
