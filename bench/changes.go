package main

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
