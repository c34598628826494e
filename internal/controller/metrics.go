package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// reconcilePhaseSeconds tells where a Prometheus reconcile spends its time.
var reconcilePhaseSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name: "lookout_prometheus_reconcile_phase_seconds",
	Help: "Time a Prometheus reconcile spends in each phase: gather (read the selected objects), " +
		"render (build and check the config and objects), apply (write what changed, prune), bindings (status.bindings).",
	Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
}, []string{"phase"})

// renderCacheMonitors counts monitors taken from the render cache and rendered anew.
var renderCacheMonitors = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lookout_render_cache_monitors_total",
	Help: "Monitors whose jobs a render took from the cache (result=hit) or built and checked anew (result=miss).",
}, []string{"result"})

func init() {
	metrics.Registry.MustRegister(reconcilePhaseSeconds, renderCacheMonitors)
}

// phaseTimer observes the phases of one reconcile.
type phaseTimer struct{ last time.Time }

func startPhases() *phaseTimer { return &phaseTimer{last: time.Now()} }

// done records the time since the previous phase ended as phase.
func (t *phaseTimer) done(phase string) {
	now := time.Now()
	reconcilePhaseSeconds.WithLabelValues(phase).Observe(now.Sub(t.last).Seconds())
	t.last = now
}
