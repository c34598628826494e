package controller

import (
	"strings"
	"time"

	"github.com/go-logr/logr"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// reconcilePhaseSeconds tells where a Prometheus reconcile spends its time.
var reconcilePhaseSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name: "lookout_prometheus_reconcile_phase_seconds",
	Help: "Time a Prometheus reconcile spends in each phase: gather (read the selected objects), " +
		"render (build and check the config and objects), config (write the configuration Secrets and rule ConfigMaps), apply (write the other objects that changed, prune), bindings (hand status.bindings to their queue).",
	Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
}, []string{"phase"})

// renderCacheMonitors counts monitors taken from the render cache and rendered anew.
var renderCacheMonitors = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lookout_render_cache_monitors_total",
	Help: "Monitors whose jobs a render took from the cache (result=hit) or built and checked anew (result=miss).",
}, []string{"result"})

// reconcileErrors counts reconciles that ended with Reconciled=False, by the
// workload kind and the condition's reason (the same reason as on the status
// and the Event), so an alert says what kind of problem, not only that one exists.
var reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lookout_reconcile_errors_total",
	Help: "Reconciles that ended with Reconciled=False, by workload kind and reason.",
}, []string{"kind", "reason"})

// rejections counts objects newly rejected by a workload (a rejection that is
// new or whose reason or message changed; the same rejection on every
// reconcile counts once), by the rejected object's kind and reason.
var rejections = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lookout_rejected_objects_total",
	Help: "Selected objects a workload newly rejected (left out of its configuration), by object kind and reason.",
}, []string{"kind", "reason"})

// configBytes and configPieces tell how close a Prometheus's configuration is
// to one Secret's limit and how many pieces it was split into.
var (
	configBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lookout_prometheus_config_bytes",
		Help: "Bytes of the compressed configuration last written for a Prometheus, its main Secret and every piece together.",
	}, []string{"namespace", "name"})
	configPieces = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "lookout_prometheus_config_pieces",
		Help: "Scrape-config pieces (Secrets besides the main one) the configuration of a Prometheus is split into; 0 when it fits one Secret.",
	}, []string{"namespace", "name"})
)

// reconcileYields counts Prometheus reconciles that stopped after writing the
// configuration because a newer change was waiting (see applyObjects).
var reconcileYields = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "lookout_prometheus_reconcile_yields_total",
	Help: "Prometheus reconciles that wrote the configuration and then left the rest of their apply to the reconcile of a newer change.",
})

// Collectors are the operator's own metrics (controller-runtime's come on
// top); the install tests check the dashboard and alerts against them.
var Collectors = []prometheus.Collector{reconcilePhaseSeconds, renderCacheMonitors, reconcileErrors, rejections, configBytes, configPieces, reconcileYields}

func init() {
	metrics.Registry.MustRegister(Collectors...)
}

// countReconcileError records a reconcile of kind that ends with Reconciled=False.
func countReconcileError(kind string, st *statusUpdate) {
	if st.reconcileErr != nil {
		reconcileErrors.WithLabelValues(kind, st.reconcileErr.Reason).Inc()
	}
}

// phaseTimer observes the phases of one reconcile of a configFirst kind. A nil timer
// observes nothing.
type phaseTimer struct {
	start, last time.Time
	phases      []any // name, milliseconds, ... for the slow-reconcile log
	notes       []any // what the kind adds to that log (its render cache's hits)
}

func startPhases() *phaseTimer {
	now := time.Now()
	return &phaseTimer{start: now, last: now}
}

// done records the time since the previous phase ended as phase.
func (t *phaseTimer) done(phase string) {
	if t == nil {
		return
	}
	now := time.Now()
	took := now.Sub(t.last)
	reconcilePhaseSeconds.WithLabelValues(phase).Observe(took.Seconds())
	t.phases = append(t.phases, phase+"Ms", took.Milliseconds())
	t.last = now
}

// note adds keys and values to the slow-reconcile log.
func (t *phaseTimer) note(kv ...any) {
	if t != nil {
		t.notes = append(t.notes, kv...)
	}
}

// slowReconcile is how long a Prometheus reconcile may take before its phases are logged.
const slowReconcile = 250 * time.Millisecond

// logIfSlow logs the phases of a reconcile that took slowReconcile or more: a change
// waits that long for its configuration, and the log says where the time went.
func (t *phaseTimer) logIfSlow(log logr.Logger, kv ...any) {
	if t == nil {
		return
	}
	kv = append(kv, t.notes...)
	if took := time.Since(t.start); took >= slowReconcile {
		log.Info("Slow reconcile", append(append(kv, "tookMs", took.Milliseconds()), t.phases...)...)
	}
}

// recordConfigSize sets the configuration size metrics of p from the Secrets
// just applied: the main config Secret and the scrape-config pieces.
func recordConfigSize(p *monitoringv1.Prometheus, objs []workload.Object) {
	main := promrender.ConfigSecretName(p.Name)
	piecePrefix := promrender.ConfigPieceSecretName(p.Name, 0)
	piecePrefix = strings.TrimSuffix(piecePrefix, "0")
	var bytes, pieces int
	for _, o := range objs {
		s, ok := o.(*corev1.Secret)
		if !ok {
			continue
		}
		switch {
		case s.Name == main:
		case strings.HasPrefix(s.Name, piecePrefix):
			pieces++
		default:
			continue
		}
		for _, v := range s.Data {
			bytes += len(v)
		}
	}
	configBytes.WithLabelValues(p.Namespace, p.Name).Set(float64(bytes))
	configPieces.WithLabelValues(p.Namespace, p.Name).Set(float64(pieces))
}
