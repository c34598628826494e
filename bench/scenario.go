package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// otherCPU samples the CPU of the control plane, of the harness and of
// the whole machine, twice: before the operator starts and at convergence.
type otherCPU struct {
	apiserver, etcd int // 0: not found
	samples         []otherSample
}

type otherSample struct {
	apiserver, etcd, harness float64
	host                     hostCPU
}

func otherProcesses(cp *controlplane.ControlPlane) *otherCPU {
	o := &otherCPU{}
	var err error
	if o.apiserver, err = findPIDByArg("--secure-port=" + strconv.Itoa(cp.Port)); err != nil {
		logf("kube-apiserver CPU is not measured: %v", err)
	}
	if o.etcd, err = findPIDByArg("--data-dir=" + filepath.Join(cp.Dir, "etcd")); err != nil {
		logf("etcd CPU is not measured: %v", err)
	}
	return o
}

func (o *otherCPU) sample() {
	var s otherSample
	s.apiserver, s.etcd, s.harness = procCPU(o.apiserver), procCPU(o.etcd), procCPU(os.Getpid())
	s.host, _ = readHostCPU()
	o.samples = append(o.samples, s)
}

// procCPU is the CPU seconds process pid has used, 0 when it is not known.
func procCPU(pid int) float64 {
	if pid == 0 {
		return 0
	}
	ps, err := readProc(pid)
	if err != nil {
		return 0
	}
	return ps.cpuSeconds
}

// cpuNow is the CPU seconds the operator, kube-apiserver and etcd have used so far.
type cpuNow struct{ operator, apiserver, etcd float64 }

func (o *otherCPU) now(operator int) cpuNow {
	return cpuNow{procCPU(operator), procCPU(o.apiserver), procCPU(o.etcd)}
}

func (c cpuNow) minus(d cpuNow) cpuNow {
	return cpuNow{c.operator - d.operator, c.apiserver - d.apiserver, c.etcd - d.etcd}
}

// settle waits until kube-apiserver and etcd together use less than a tenth of a core
// over one second, or until limit has passed (then it goes on anyway).
func (o *otherCPU) settle(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		before := *o
		before.samples = nil
		before.sample()
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		before.sample()
		apiserver, etcd, _, _ := before.delta()
		if apiserver+etcd < 0.1 {
			return nil
		}
	}
	return nil
}

// delta is the CPU seconds of kube-apiserver, etcd and the harness, and the
// machine's busy percentage, between the first and the last sample.
func (o *otherCPU) delta() (apiserver, etcd, harness, hostBusy float64) {
	if len(o.samples) < 2 {
		return 0, 0, 0, 0
	}
	a, b := o.samples[0], o.samples[len(o.samples)-1]
	return b.apiserver - a.apiserver, b.etcd - a.etcd, b.harness - a.harness, busyPercent(a.host, b.host)
}

// measureChanges creates monitors one after the other, each when the
// prometheus controller is idle, and times create → a config Secret
// delivered by the watch holds the new job.
func measureChanges(ctx context.Context, c client.Client, sc scenario, n int, configs *configWatch, metricsURL string, pid int, others *otherCPU, res *Result) error {
	if err := waitIdle(ctx, metricsURL); err != nil {
		return err
	}
	m0, err := scrapeURL(ctx, metricsURL)
	if err != nil {
		return err
	}
	p0, err := readProc(pid)
	if err != nil {
		return err
	}
	pns, pname := sc.expected(sc.Namespaces[0])
	prom := pns + "/" + pname
	lat := make([]time.Duration, 0, n)
	creates := make([]time.Duration, 0, n)
	logf("%s: timing %d ServiceMonitor creations", sc.Name, n)
	// Each change's own share of the operator's phases and collections, from the
	// metrics read while waiting for the controller to be idle around it: where a slow
	// change lost its time.
	samples := make([]changeSample, 0, n)
	before := m0
	for i := range n {
		idle, err := waitIdleMetrics(ctx, metricsURL)
		if err != nil {
			return err
		}
		if i > 0 {
			samples[i-1].fill(before, idle)
		}
		before = idle
		ns, name := sc.Namespaces[i%len(sc.Namespaces)], fmt.Sprintf("new-%04d", i)
		job := jobPrefix + ns + "/" + name + "/0\n"
		cpu0 := others.now(pid)
		begin := time.Now()
		if err := c.Create(ctx, newServiceMonitor(ns, name)); err != nil {
			return fmt.Errorf("create ServiceMonitor %s/%s: %w", ns, name, err)
		}
		creates = append(creates, time.Since(begin))
		at, err := configs.waitUntil(ctx, 2*time.Minute, "the config holds "+strings.TrimSpace(job), func() bool {
			return configs.has(prom, job)
		})
		if err != nil {
			return err
		}
		lat = append(lat, at.Sub(begin))
		samples = append(samples, changeSample{i: i, all: at.Sub(begin), create: creates[i], cpu: others.now(pid).minus(cpu0)})
		if (i+1)%50 == 0 {
			logf("%s: %d/%d changes, last %v", sc.Name, i+1, n, at.Sub(begin).Round(time.Millisecond))
		}
	}
	m1, err := waitIdleMetrics(ctx, metricsURL)
	if err != nil {
		return err
	}
	samples[n-1].fill(before, m1)
	slices.SortFunc(samples, func(a, b changeSample) int { return cmp.Compare(b.all, a.all) })
	for _, s := range samples[:min(5, len(samples))] {
		logf("%s: change %d: %.0fms (create call %.1fms; operator gather %.1f, render %.1f, config %.1fms; %v collections; CPU meanwhile: operator %.0f, kube-apiserver %.0f, etcd %.0f ms)",
			sc.Name, s.i, ms(s.all), ms(s.create), s.phases[0], s.phases[1], s.phases[2], s.collections, 1000*s.cpu.operator, 1000*s.cpu.apiserver, 1000*s.cpu.etcd)
	}
	p1, err := readProc(pid)
	if err != nil {
		return err
	}
	match := map[string]string{"controller": "prometheus"}
	res.ReconcilesPerChange = (m1.sum("controller_runtime_reconcile_total", match) - m0.sum("controller_runtime_reconcile_total", match)) / float64(n)
	res.ChangeCPUSecondsPer = (p1.cpuSeconds - p0.cpuSeconds) / float64(n)
	if count := m1.sum("controller_runtime_reconcile_time_seconds_count", match) - m0.sum("controller_runtime_reconcile_time_seconds_count", match); count > 0 {
		res.ChangeReconcileMs = 1000 * (m1.sum("controller_runtime_reconcile_time_seconds_sum", match) - m0.sum("controller_runtime_reconcile_time_seconds_sum", match)) / count
	}
	for _, phase := range []string{"gather", "render", "config", "apply", "bindings"} {
		pm := map[string]string{"phase": phase}
		count := m1.sum("lookout_prometheus_reconcile_phase_seconds_count", pm) - m0.sum("lookout_prometheus_reconcile_phase_seconds_count", pm)
		if count > 0 {
			if res.ChangePhaseMs == nil {
				res.ChangePhaseMs = map[string]float64{}
			}
			res.ChangePhaseMs[phase] = 1000 * (m1.sum("lookout_prometheus_reconcile_phase_seconds_sum", pm) - m0.sum("lookout_prometheus_reconcile_phase_seconds_sum", pm)) / count
		}
	}
	slices.Sort(creates)
	res.ChangeCreateP50Ms = ms(percentile(creates, 0.50))
	slices.Sort(lat)
	res.ChangeSamples = len(lat)
	res.ChangeP50Ms = ms(percentile(lat, 0.50))
	res.ChangeP99Ms = ms(percentile(lat, 0.99))
	res.ChangeMaxMs = ms(lat[len(lat)-1])
	logf("%s: change latency p50 %.0fms p99 %.0fms max %.0fms, %.2f reconciles per change; create call p50 %.1fms, reconcile mean %.1fms (%s)",
		sc.Name, res.ChangeP50Ms, res.ChangeP99Ms, res.ChangeMaxMs, res.ReconcilesPerChange, res.ChangeCreateP50Ms, res.ChangeReconcileMs, phaseText(res.ChangePhaseMs))
	return nil
}

// measureEarlyChanges creates monitors one after the other for window, from the moment
// the config first holds every job, each timed from its create call until a config
// Secret delivered by the watch holds its job: the worst of them is the change a user
// waits longest for after a start, a leader change or an upgrade.
func measureEarlyChanges(ctx context.Context, c client.Client, sc scenario, configs *configWatch, window time.Duration, res *Result) error {
	pns, pname := sc.expected(sc.Namespaces[0])
	prom := pns + "/" + pname
	type sample struct {
		i                   int
		offset, create, all time.Duration
	}
	var lat []time.Duration
	var samples []sample
	first := time.Now()
	for i, end := 0, time.Now().Add(window); time.Now().Before(end); i++ {
		ns, name := sc.Namespaces[i%len(sc.Namespaces)], fmt.Sprintf("early-%04d", i)
		job := jobPrefix + ns + "/" + name + "/0\n"
		begin := time.Now()
		if err := c.Create(ctx, newServiceMonitor(ns, name)); err != nil {
			return fmt.Errorf("create ServiceMonitor %s/%s: %w", ns, name, err)
		}
		created := time.Now()
		at, err := configs.waitUntil(ctx, 2*time.Minute, "the config holds "+strings.TrimSpace(job), func() bool {
			return configs.has(prom, job)
		})
		if err != nil {
			return err
		}
		lat = append(lat, at.Sub(begin))
		samples = append(samples, sample{i: i, offset: begin.Sub(first), create: created.Sub(begin), all: at.Sub(begin)})
	}
	// The slowest, with when they came and how much of them the create call (with the
	// webhook) was: where the worst change lost its time.
	slices.SortFunc(samples, func(a, b sample) int { return cmp.Compare(b.all, a.all) })
	for _, s := range samples[:min(5, len(samples))] {
		logf("%s: early change %d at +%.2fs: %.0fms (create call %.0fms)", sc.Name, s.i, s.offset.Seconds(), ms(s.all), ms(s.create))
	}
	slices.Sort(lat)
	res.EarlyChangeSamples = len(lat)
	res.EarlyChangeP50Ms = ms(percentile(lat, 0.50))
	res.EarlyChangeMaxMs = ms(lat[len(lat)-1])
	logf("%s: %d changes in the first %v after the config was complete: p50 %.0fms, worst %.0fms",
		sc.Name, res.EarlyChangeSamples, window, res.EarlyChangeP50Ms, res.EarlyChangeMaxMs)
	return nil
}

// waitIdle waits until the prometheus controller has nothing queued and no
// reconcile running, reading the operator's own metrics.
func waitIdle(ctx context.Context, metricsURL string) error {
	_, err := waitIdleMetrics(ctx, metricsURL)
	return err
}

// waitIdleMetrics is waitIdle, returning the metrics that showed the controller idle.
func waitIdleMetrics(ctx context.Context, metricsURL string) (metrics, error) {
	deadline := time.Now().Add(5 * time.Minute)
	match := map[string]string{"controller": "prometheus"}
	for {
		m, err := scrapeURL(ctx, metricsURL)
		if err != nil {
			return nil, err
		}
		if m.sum("workqueue_depth", match)+m.sum("controller_runtime_active_workers", match) == 0 {
			return m, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the prometheus controller is still busy after 5 minutes")
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// changeSample is one timed change: from its create call until the config held its job,
// and the operator's phases and collections between the idle controller before it and
// the idle controller after it.
type changeSample struct {
	i           int
	all, create time.Duration
	phases      [3]float64 // gather, render, config (ms)
	collections float64
	// The CPU each process used from the create call until the config held the job, in
	// the kernel's ticks (10 ms): whether a slow change waited for the operator or for
	// the control plane.
	cpu cpuNow
}

func (s *changeSample) fill(before, after metrics) {
	for i, phase := range []string{"gather", "render", "config"} {
		pm := map[string]string{"phase": phase}
		s.phases[i] = 1000 * (after.sum("lookout_prometheus_reconcile_phase_seconds_sum", pm) - before.sum("lookout_prometheus_reconcile_phase_seconds_sum", pm))
	}
	s.collections = after.sum("go_gc_duration_seconds_count", nil) - before.sum("go_gc_duration_seconds_count", nil)
}

// percentile is the nearest-rank percentile of sorted samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func newServiceMonitor(ns, name string) *monitoringv1.ServiceMonitor {
	return &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics"}},
		},
	}
}

func newPrometheus(key string, allNamespaces bool) *monitoringv1.Prometheus {
	ns, name, _ := strings.Cut(key, "/")
	p := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{},
		}},
	}
	if allNamespaces {
		p.Spec.ServiceMonitorNamespaceSelector = &metav1.LabelSelector{}
	}
	return p
}

// setup creates the namespaces, then the Prometheus objects, monitors and
// noise from many goroutines. It returns how many objects it created.
func setup(ctx context.Context, c client.Client, sc scenario, workers int) (int, error) {
	nsSet := map[string]bool{}
	for _, ns := range sc.Namespaces {
		nsSet[ns] = true
	}
	for _, p := range sc.Prometheuses {
		ns, _, _ := strings.Cut(p, "/")
		nsSet[ns] = true
	}
	namespaces := make([]string, 0, len(nsSet))
	for ns := range nsSet {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	var total int
	n, err := createMany(ctx, c, len(namespaces), workers, func(i int) client.Object {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}
	})
	total += n
	if err != nil {
		return total, err
	}
	nns := len(sc.Namespaces)
	builders := []struct {
		n     int
		build func(i int) client.Object
	}{
		{len(sc.Prometheuses), func(i int) client.Object { return newPrometheus(sc.Prometheuses[i], sc.allNamespaces) }},
		{nns * sc.MonitorsPerNamespace, func(i int) client.Object {
			return newServiceMonitor(sc.Namespaces[i%nns], fmt.Sprintf("sm-%03d", i/nns))
		}},
		{sc.Secrets, func(i int) client.Object {
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: sc.Namespaces[i%nns], Name: fmt.Sprintf("noise-%05d", i)},
				Data:       map[string][]byte{"password": []byte(fmt.Sprintf("secret-%d", i))},
			}
			if sc.Secrets > 0 && i%(sc.Secrets/max(sc.BigSecrets, 1)) == 0 && sc.BigSecrets > 0 {
				// Like a Helm release Secret: ~1 MiB of incompressible data.
				release := make([]byte, 1000*1000)
				_, _ = rand.Read(release)
				s.Name = fmt.Sprintf("sh.helm.release.v1.noise-%05d.v1", i)
				s.Type = "helm.sh/release.v1"
				s.Labels = map[string]string{"owner": "helm", "name": fmt.Sprintf("noise-%05d", i)}
				s.Data = map[string][]byte{"release": release}
			}
			return s
		}},
		{sc.ConfigMaps, func(i int) client.Object {
			return &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: sc.Namespaces[i%nns], Name: fmt.Sprintf("noise-%05d", i)},
				Data:       map[string]string{"app.properties": strings.Repeat(fmt.Sprintf("key%d=value\n", i), 20)},
			}
		}},
	}
	for _, b := range builders {
		n, err := createMany(ctx, c, b.n, workers, b.build)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// createMany creates build(0..n-1) from workers goroutines, retrying
// transient errors of an overloaded apiserver.
func createMany(ctx context.Context, c client.Client, n, workers int, build func(i int) client.Object) (int, error) {
	var (
		next    atomic.Int64
		created atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				obj := build(i)
				var err error
				for attempt := 0; attempt < 10; attempt++ {
					err = c.Create(ctx, obj)
					if err == nil || apierrors.IsAlreadyExists(err) {
						err = nil
						break
					}
					if !transient(err) {
						break
					}
					obj.SetResourceVersion("")
					time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("create %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
					}
					mu.Unlock()
					next.Store(int64(n))
					return
				}
				created.Add(1)
			}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return int(created.Load()), first
}

func transient(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || errors.Is(err, context.DeadlineExceeded)
}

func numCPU() int { return runtime.NumCPU() }

// phaseText is "gather 1.2, render 3.4, ..." in ms, in reconcile order.
func phaseText(m map[string]float64) string {
	var parts []string
	for _, phase := range []string{"gather", "render", "config", "apply", "bindings"} {
		if v, ok := m[phase]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f", phase, v))
		}
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ") + " ms"
}
