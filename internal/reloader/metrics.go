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
}

func newMetrics() *metrics {
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
			Help: "Configurations written to the output file, by the source that delivered them.",
		}, []string{"source"}),
	}
	// A sidecar that has not needed to reload has not failed; starting at 0 would set off
	// "last reload failed" alerts on every new pod.
	m.lastSuccessful.Set(1)
	// Both sources are reported from the start, so a rate() over them is defined.
	m.applies.WithLabelValues(string(SourceFile))
	m.applies.WithLabelValues(string(SourceAPI))
	m.registry.MustRegister(
		m.reloads, m.reloadErrors, m.lastSuccessTime, m.lastSuccessful, m.applies,
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

func (m *metrics) applied(s Source) { m.applies.WithLabelValues(string(s)).Inc() }
