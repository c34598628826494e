package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/scheme"
)

// scenario is one cluster shape.
type scenario struct {
	Name, Description string
	// Namespaces to create; monitors and noise are spread over them.
	Namespaces []string
	// Prometheuses as "ns/name"; allNamespaces: select monitors in every
	// namespace (serviceMonitorNamespaceSelector {}), else only its own.
	Prometheuses  []string
	allNamespaces bool
	// Monitors per namespace in Namespaces.
	MonitorsPerNamespace int
	// Noise: unrelated Secrets (BigSecrets of them ~1 MiB) and ConfigMaps.
	Secrets, BigSecrets, ConfigMaps int
	// Changes: sequential ServiceMonitor creations timed (0: none).
	Changes bool
	// expected maps a monitor's namespace to the Prometheus that selects it.
	expected func(ns string) (promNs, promName string)
}

func scenarioS1() scenario {
	ns := make([]string, 500)
	for i := range ns {
		ns[i] = fmt.Sprintf("app-%03d", i)
	}
	return scenario{
		Name:                 "s1",
		Description:          "1 Prometheus, 5,000 ServiceMonitors in 500 namespaces; noise: 20,000 Secrets (200 of ~1 MiB), 10,000 ConfigMaps",
		Namespaces:           ns,
		Prometheuses:         []string{"monitoring/main"},
		allNamespaces:        true,
		MonitorsPerNamespace: 10,
		Secrets:              20000,
		BigSecrets:           200,
		ConfigMaps:           10000,
		Changes:              true,
		expected:             func(string) (string, string) { return "monitoring", "main" },
	}
}

func scenarioS2() scenario {
	ns := make([]string, 50)
	proms := make([]string, 50)
	for i := range ns {
		ns[i] = fmt.Sprintf("team-%02d", i)
		proms[i] = ns[i] + "/prom"
	}
	return scenario{
		Name:                 "s2",
		Description:          "50 Prometheus objects, each selecting the 100 ServiceMonitors of its own namespace; no noise",
		Namespaces:           ns,
		Prometheuses:         proms,
		MonitorsPerNamespace: 100,
		expected:             func(ns string) (string, string) { return ns, "prom" },
	}
}

// Result is what one scenario measured. Durations are seconds unless the
// name says otherwise; memory is MiB.
type Result struct {
	Scenario    string `json:"scenario"`
	Description string `json:"description"`
	Commit      string `json:"commit"`
	Date        string `json:"date"`
	CPUs        int    `json:"cpus"`

	SetupObjects int     `json:"setupObjects"`
	SetupSeconds float64 `json:"setupSeconds"`

	// From `lookout operator` being started.
	ReadySeconds       float64            `json:"readySeconds"`
	ConfigSeconds      float64            `json:"configSeconds"`
	BindingsSeconds    float64            `json:"bindingsSeconds"`
	ColdStartSeconds   float64            `json:"coldStartSeconds"`
	ConfigSecrets      int                `json:"configSecrets"`
	ConvergeCPUSeconds float64            `json:"convergeCPUSeconds"`
	ConvergeRequests   map[string]float64 `json:"convergeRequestsByMethod"`
	ConvergeWrites     float64            `json:"convergeWrites"`
	ConvergedRSSMiB    float64            `json:"convergedRSSMiB"`
	ConvergeReconciles float64            `json:"convergeReconciles"`
	// The rest of the machine over the same span: is the operator waiting
	// for the apiserver, or for a CPU?
	APIServerConvergeCPUSeconds float64 `json:"apiserverConvergeCPUSeconds,omitempty"`
	EtcdConvergeCPUSeconds      float64 `json:"etcdConvergeCPUSeconds,omitempty"`
	HarnessConvergeCPUSeconds   float64 `json:"harnessConvergeCPUSeconds,omitempty"`
	HostBusyPercentConverge     float64 `json:"hostBusyPercentConverge,omitempty"`
	// The operator's client: seconds its requests waited for its own rate
	// limiter (summed over requests), and the mean PATCH round trip.
	ConvergeThrottledSeconds float64 `json:"convergeClientThrottledSeconds,omitempty"`
	ConvergePatchMeanMs      float64 `json:"convergePatchMeanMs,omitempty"`

	// Changes made back to back in the first minute after the config first held every
	// job (while the cold start's bindings are still being written).
	EarlyChangeSamples int     `json:"earlyChangeSamples,omitempty"`
	EarlyChangeP50Ms   float64 `json:"earlyChangeP50Ms,omitempty"`
	EarlyChangeMaxMs   float64 `json:"earlyChangeMaxMs,omitempty"`

	ChangeSamples       int     `json:"changeSamples,omitempty"`
	ChangeP50Ms         float64 `json:"changeP50Ms,omitempty"`
	ChangeP99Ms         float64 `json:"changeP99Ms,omitempty"`
	ChangeMaxMs         float64 `json:"changeMaxMs,omitempty"`
	ReconcilesPerChange float64 `json:"reconcilesPerChange,omitempty"`
	// Where a change's latency goes: the create call (it passes the
	// operator's validating webhook) and the reconcile it causes.
	ChangeCreateP50Ms float64 `json:"changeCreateP50Ms,omitempty"`
	ChangeReconcileMs float64 `json:"changeReconcileMeanMs,omitempty"`
	// Mean time per reconcile phase while changes were timed (gather,
	// render, config, apply, bindings), from lookout_prometheus_reconcile_phase_seconds.
	ChangePhaseMs       map[string]float64 `json:"changePhaseMeanMs,omitempty"`
	ChangeCPUSecondsPer float64            `json:"changeCPUSecondsPerChange,omitempty"`

	// SettleSeconds is how long the control plane took to go quiet after the setup,
	// before the operator was started.
	SettleSeconds float64 `json:"settleSeconds"`

	IdleSeconds      float64            `json:"idleSeconds"`
	IdleCPUSeconds   float64            `json:"idleCPUSeconds"`
	IdleRequests     map[string]float64 `json:"idleRequestsByMethod"`
	IdleWrites       float64            `json:"idleWrites"`
	IdleWritesByRes  map[string]float64 `json:"idleWritesByResource"`
	IdleNonLeaseWrts float64            `json:"idleWritesExceptLeases"`

	PeakRSSMiB   float64 `json:"peakRSSMiB"`
	SteadyRSSMiB float64 `json:"steadyRSSMiB"`
}

func runScenario(ctx context.Context, sc scenario, f flags, root, bin, dir string) (res Result, err error) {
	res = Result{Scenario: sc.Name, Description: sc.Description, CPUs: numCPU()}
	logf("%s: starting the control plane", sc.Name)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cp, err := controlplane.Start(ctx, controlplane.Options{
		KubeconfigPath:           kubeconfig,
		WithoutControllerManager: true,
		CRDDir:                   filepath.Join(root, "config", "crd"),
		Log:                      os.Stderr,
		ReadyTimeout:             2 * time.Minute,
	})
	if err != nil {
		return res, err
	}
	defer cp.Stop()

	cfg := rest.CopyConfig(cp.RESTConfig)
	cfg.QPS, cfg.Burst = 5000, 10000
	cfg.Timeout = 2 * time.Minute
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return res, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return res, err
	}

	// Setup, before the operator runs.
	start := time.Now()
	n, err := setup(ctx, c, sc, f.workers)
	if err != nil {
		return res, err
	}
	res.SetupObjects, res.SetupSeconds = n, time.Since(start).Seconds()
	logf("%s: created %d objects in %.1fs", sc.Name, n, res.SetupSeconds)
	if f.hold {
		logf("%s: holding the control plane until interrupted; KUBECONFIG=%s", sc.Name, kubeconfig)
		<-ctx.Done()
		return res, ctx.Err()
	}

	watchCtx, cancelWatches := context.WithCancel(ctx)
	defer cancelWatches()
	configs, err := watchConfigs(watchCtx, cs)
	if err != nil {
		return res, err
	}
	bindings, err := watchBindings(watchCtx, c, sc.expected)
	if err != nil {
		return res, err
	}
	monitors := len(sc.Namespaces) * sc.MonitorsPerNamespace
	perProm := map[string]int{}
	for _, ns := range sc.Namespaces {
		pns, pname := sc.expected(ns)
		perProm[pns+"/"+pname] += sc.MonitorsPerNamespace
	}

	// A cluster an operator restarts in is not busy storing 35,000 objects created a moment
	// ago: let the apiserver and etcd finish with the setup (their CPU below a tenth of a
	// core over a second, at most a minute) so that the cold start measures the operator.
	others := otherProcesses(cp)
	settleStart := time.Now()
	if err := others.settle(ctx, time.Minute); err != nil {
		return res, err
	}
	res.SettleSeconds = time.Since(settleStart).Seconds()
	logf("%s: the control plane settled after %.1fs", sc.Name, res.SettleSeconds)

	// Cold start.
	metricsPort, err := devenv.FreePort()
	if err != nil {
		return res, err
	}
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	others.samples = nil
	others.sample()
	logf("%s: starting the operator (log %s)", sc.Name, filepath.Join(dir, "operator.log"))
	start = time.Now()
	opArgs := []string{fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort)}
	var pprofBase string
	if f.profiles != "" {
		pprofPort, err := devenv.FreePort()
		if err != nil {
			return res, err
		}
		pprofBase = fmt.Sprintf("http://127.0.0.1:%d", pprofPort)
		opArgs = append(opArgs, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))
	}
	op, err := devenv.StartOperator(ctx, bin, kubeconfig, filepath.Join(dir, "operator.log"), opArgs...)
	if err != nil {
		return res, err
	}
	defer op.Stop()
	res.ReadySeconds = time.Since(start).Seconds()
	// Profiles: CPU from /readyz to converged and over the change phase,
	// heap (and the Go runtime's figures) at each end and after the idle
	// window. A nil profiler does nothing.
	var prof *profiler
	if f.profiles != "" {
		profDir := filepath.Join(absPath(root, f.profiles), sc.Name)
		if prof, err = newProfiler(pprofBase, profDir); err != nil {
			return res, err
		}
		defer func() {
			if prof.cpu != nil {
				// The scenario failed mid-phase: keep what was recorded.
				prof.end(ctx, "aborted", metricsURL)
			}
			if summary, err := prof.finish(); err != nil {
				logf("profiles: %v", err)
			} else if summary != "" {
				fmt.Fprintf(os.Stderr, "\n%s: profiles in %s: %s\n\n%s", sc.Name, profDir, strings.Join(profileFiles(profDir), " "), summary)
			}
		}()
		prof.begin(ctx, "cpu-converge")
	}
	pid, err := findPID(bin)
	if err != nil {
		return res, err
	}
	// Peak RSS may be reached between samples; VmHWM keeps it anyway.
	if _, err := scrapeURL(ctx, metricsURL); err != nil {
		return res, fmt.Errorf("the operator's metrics (is the later --metrics-bind-address honoured?): %w", err)
	}

	configAt, err := configs.waitUntil(ctx, 20*time.Minute, fmt.Sprintf("the config Secrets hold all %d jobs", monitors), func() bool {
		for prom, want := range perProm {
			if configs.jobs(prom) != want {
				return false
			}
		}
		return true
	})
	if err != nil {
		return res, err
	}
	res.ConfigSeconds = configAt.Sub(start).Seconds()
	logf("%s: config complete after %.1fs", sc.Name, res.ConfigSeconds)
	if sc.Changes {
		// What users feel right after a start: changes made back to back while the
		// operator still writes the cold start's status bindings.
		if err := measureEarlyChanges(ctx, c, sc, configs, time.Minute, &res); err != nil {
			return res, err
		}
		monitors += res.EarlyChangeSamples
	}
	bindingsAt, err := bindings.waitUntil(ctx, 20*time.Minute, fmt.Sprintf("all %d monitors are Accepted", monitors), func() bool {
		return bindings.count >= monitors
	})
	if err != nil {
		return res, err
	}
	res.BindingsSeconds = bindingsAt.Sub(start).Seconds()
	res.ColdStartSeconds = max(res.ConfigSeconds, res.BindingsSeconds)
	logf("%s: bindings complete after %.1fs; converged after %.1fs", sc.Name, res.BindingsSeconds, res.ColdStartSeconds)
	for prom := range perProm {
		res.ConfigSecrets += configs.pieces(prom)
	}

	// What convergence cost, counted from the process start.
	ps, err := readProc(pid)
	if err != nil {
		return res, err
	}
	m, err := scrapeURL(ctx, metricsURL)
	if err != nil {
		return res, err
	}
	res.ConvergeCPUSeconds, res.ConvergedRSSMiB = ps.cpuSeconds, mib(ps.rssKiB)
	res.ConvergeThrottledSeconds = m.sum("rest_client_rate_limiter_duration_seconds_sum", nil)
	if n := m.sum("rest_client_request_duration_seconds_count", map[string]string{"verb": "PATCH"}); n > 0 {
		res.ConvergePatchMeanMs = 1000 * m.sum("rest_client_request_duration_seconds_sum", map[string]string{"verb": "PATCH"}) / n
	}
	logf("%s: the operator's %.0f requests waited %.1fs in all for its client rate limiter; a PATCH took %.1fms on average",
		sc.Name, m.sum("rest_client_rate_limiter_duration_seconds_count", nil), res.ConvergeThrottledSeconds, res.ConvergePatchMeanMs)
	others.sample()
	res.APIServerConvergeCPUSeconds, res.EtcdConvergeCPUSeconds, res.HarnessConvergeCPUSeconds, res.HostBusyPercentConverge = others.delta()
	logf("%s: CPU during convergence: operator %.1fs, kube-apiserver %.1fs, etcd %.1fs, harness %.1fs; machine %.0f%% busy (%d cores)",
		sc.Name, res.ConvergeCPUSeconds, res.APIServerConvergeCPUSeconds, res.EtcdConvergeCPUSeconds, res.HarnessConvergeCPUSeconds,
		res.HostBusyPercentConverge, res.CPUs)
	res.ConvergeRequests = m.by("rest_client_requests_total", "method", nil)
	res.ConvergeWrites = writes(res.ConvergeRequests)
	res.ConvergeReconciles = m.sum("controller_runtime_reconcile_total", map[string]string{"controller": "prometheus"})
	prof.end(ctx, "converged", metricsURL)

	if sc.Changes {
		prof.begin(ctx, "cpu-changes")
		if err := measureChanges(ctx, c, sc, f.changes, configs, metricsURL, pid, others, &res); err != nil {
			return res, err
		}
		prof.end(ctx, "changes", metricsURL)
	}

	// Idle window: nothing changes; the operator should write nothing.
	if err := waitIdle(ctx, metricsURL); err != nil {
		return res, err
	}
	logf("%s: idle window of %v", sc.Name, f.idle)
	m0, err := scrapeURL(ctx, metricsURL)
	if err != nil {
		return res, err
	}
	a0, err := scrapeAPIServer(ctx, cs)
	if err != nil {
		return res, err
	}
	p0, err := readProc(pid)
	if err != nil {
		return res, err
	}
	select {
	case <-time.After(f.idle):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	m1, err := scrapeURL(ctx, metricsURL)
	if err != nil {
		return res, err
	}
	a1, err := scrapeAPIServer(ctx, cs)
	if err != nil {
		return res, err
	}
	p1, err := readProc(pid)
	if err != nil {
		return res, err
	}
	res.IdleSeconds = p1.at.Sub(p0.at).Seconds()
	res.IdleCPUSeconds = p1.cpuSeconds - p0.cpuSeconds
	res.IdleRequests = delta(m0.by("rest_client_requests_total", "method", nil), m1.by("rest_client_requests_total", "method", nil))
	res.IdleWrites = writes(res.IdleRequests)
	// The apiserver's view, by resource: which writes they were. Nothing
	// else talks to this apiserver in the window (no controller manager;
	// the harness only reads /metrics), so leases are the operator's
	// leader-election renewals and the apiserver's own identity lease.
	isWriteSeries := func(l map[string]string) bool { return isWrite(l["verb"]) }
	res.IdleWritesByRes = delta(a0.by("apiserver_request_total", "resource", isWriteSeries), a1.by("apiserver_request_total", "resource", isWriteSeries))
	for r, v := range res.IdleWritesByRes {
		if r != "leases" {
			res.IdleNonLeaseWrts += v
		}
	}
	res.PeakRSSMiB, res.SteadyRSSMiB = mib(p1.hwmKiB), mib(p1.rssKiB)
	prof.point(ctx, "idle", metricsURL)
	logf("%s: idle: %v operator requests, apiserver writes by resource %v", sc.Name, res.IdleRequests, res.IdleWritesByRes)
	cancelWatches()
	op.Stop()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		return res, fmt.Errorf("operator pid %d still running after Stop", pid)
	}
	return res, nil
}

func numCPU() int { return runtime.NumCPU() }
