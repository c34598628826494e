package reloader

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics live in their own registry so the sidecar exposes only what it owns.
type metrics struct {
	registry        *prometheus.Registry
	reloads         prometheus.Counter
	reloadErrors    prometheus.Counter
	lastSuccessTime prometheus.Gauge
	lastSuccessful  prometheus.Gauge
	applies         *prometheus.CounterVec
	present         *prometheus.GaugeVec
}

// newMetrics registers the metrics for the named documents. The "document" label is the
// base name of a document's output file; the operator mounts a fixed, small number of
// pieces (16), so it stays far from a cardinality problem.
func newMetrics(documents []string) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lookout_reloader_reloads_total",
			Help: "Reloads that Prometheus accepted.",
		}),
		reloadErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lookout_reloader_reload_errors_total",
			Help: "Reload attempts that failed (each retry counts).",
		}),
		lastSuccessTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lookout_reloader_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful reload.",
		}),
		lastSuccessful: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lookout_reloader_last_reload_successful",
			Help: "0 when the last reload attempt failed, 1 otherwise (also before the first reload).",
		}),
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lookout_reloader_config_apply_total",
			Help: "Configurations written to a document's output file, by document and by the source that delivered them.",
		}, []string{"document", "source"}),
		present: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lookout_reloader_config_present",
			Help: "1 while a document's output file holds its configuration, 0 before the first write and after an absent piece was removed.",
		}, []string{"document"}),
	}
	// A sidecar that has not needed to reload has not failed; starting at 0 would set off
	// "last reload failed" alerts on every new pod.
	m.lastSuccessful.Set(1)
	// Every series is reported from the start, so a rate() over them is defined.
	for _, doc := range documents {
		m.applies.WithLabelValues(doc, string(SourceFile))
		m.applies.WithLabelValues(doc, string(SourceAPI))
		m.present.WithLabelValues(doc)
	}
	m.registry.MustRegister(
		m.reloads, m.reloadErrors, m.lastSuccessTime, m.lastSuccessful, m.applies, m.present,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) reloadSucceeded(now time.Time) {
	m.reloads.Inc()
	m.lastSuccessful.Set(1)
	m.lastSuccessTime.Set(float64(now.UnixNano()) / 1e9)
}

func (m *metrics) reloadFailed() {
	m.reloadErrors.Inc()
	m.lastSuccessful.Set(0)
}

func (m *metrics) applied(doc string, s Source) { m.applies.WithLabelValues(doc, string(s)).Inc() }

func (m *metrics) setPresent(doc string, present bool) {
	v := 0.0
	if present {
		v = 1
	}
	m.present.WithLabelValues(doc).Set(v)
}
