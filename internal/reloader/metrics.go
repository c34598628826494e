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
	compat          compatMetrics
}

// compatMetrics are the series the existing operator's config-reloader (Thanos's reloader
// package) exports, under its names, types and (no) labels, so that alerts and dashboards
// written for it — kube-prometheus' ConfigReloaderSidecarErrors reads
// reloader_last_reload_successful — keep working after a switch. They count what the
// lookout_reloader_* series count, in Thanos's terms: a reload is every attempt, failed
// ones included; a config apply is every time a document's output is brought to a state
// the reloader chose (written, found up to date or removed), failed when that write
// failed; a watch is a polled input file or directory, a watch event a change the
// reloader saw, a watch error a Secret watch that broke off.
type compatMetrics struct {
	reloads, reloadsFailed                prometheus.Counter
	lastReloadSuccessful, lastSuccessTime prometheus.Gauge
	configApplies, configAppliesFailed    prometheus.Counter
	watches                               prometheus.Gauge
	watchEvents, watchErrors              prometheus.Counter
}

func newCompatMetrics() compatMetrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	return compatMetrics{
		reloads:              counter("reloader_reloads_total", "Total number of reload requests."),
		reloadsFailed:        counter("reloader_reloads_failed_total", "Total number of reload requests that failed."),
		lastReloadSuccessful: gauge("reloader_last_reload_successful", "Whether the last reload attempt was successful"),
		lastSuccessTime:      gauge("reloader_last_reload_success_timestamp_seconds", "Timestamp of the last successful reload"),
		configApplies:        counter("reloader_config_apply_operations_total", "Total number of config apply operations."),
		configAppliesFailed:  counter("reloader_config_apply_operations_failed_total", "Total number of config apply operations that failed."),
		watches:              gauge("reloader_watches", "Number of resources watched by the reloader."),
		watchEvents:          counter("reloader_watch_events_total", "Total number of events received by the reloader from the watcher."),
		watchErrors:          counter("reloader_watch_errors_total", "Total number of errors received by the reloader from the watcher."),
	}
}

func (c compatMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.reloads, c.reloadsFailed, c.lastReloadSuccessful, c.lastSuccessTime,
		c.configApplies, c.configAppliesFailed, c.watches, c.watchEvents, c.watchErrors}
}

// newMetrics registers the metrics for the named documents; watched is how many inputs
// (files and directories) the sidecar polls. The "document" label is the base name of a
// document's output file; the operator mounts a fixed, small number of pieces (16), so it
// stays far from a cardinality problem.
func newMetrics(documents []string, watched int) *metrics {
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
		compat: newCompatMetrics(),
	}
	// A sidecar that has not needed to reload has not failed; starting at 0 would set off
	// "last reload failed" alerts on every new pod.
	m.lastSuccessful.Set(1)
	m.compat.lastReloadSuccessful.Set(1)
	m.compat.watches.Set(float64(watched))
	// Every series is reported from the start, so a rate() over them is defined.
	for _, doc := range documents {
		m.applies.WithLabelValues(doc, string(SourceFile))
		m.applies.WithLabelValues(doc, string(SourceAPI))
		m.present.WithLabelValues(doc)
	}
	m.registry.MustRegister(m.compat.collectors()...)
	m.registry.MustRegister(
		m.reloads, m.reloadErrors, m.lastSuccessTime, m.lastSuccessful, m.applies, m.present,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) reloadSucceeded(now time.Time) {
	seconds := float64(now.UnixNano()) / 1e9
	m.reloads.Inc()
	m.lastSuccessful.Set(1)
	m.lastSuccessTime.Set(seconds)
	m.compat.reloads.Inc()
	m.compat.lastReloadSuccessful.Set(1)
	m.compat.lastSuccessTime.Set(seconds)
}

func (m *metrics) reloadFailed() {
	m.reloadErrors.Inc()
	m.lastSuccessful.Set(0)
	m.compat.reloads.Inc()
	m.compat.reloadsFailed.Inc()
	m.compat.lastReloadSuccessful.Set(0)
}

// configApplied counts one attempt to bring a document's output to a chosen state.
func (m *metrics) configApplied(failed bool) {
	m.compat.configApplies.Inc()
	if failed {
		m.compat.configAppliesFailed.Inc()
	}
}

// watchEvent counts a change a source reported; failed when it was a watch that broke off.
func (m *metrics) watchEvent(failed bool) {
	m.compat.watchEvents.Inc()
	if failed {
		m.compat.watchErrors.Inc()
	}
}

func (m *metrics) applied(doc string, s Source) { m.applies.WithLabelValues(doc, string(s)).Inc() }

func (m *metrics) setPresent(doc string, present bool) {
	v := 0.0
	if present {
		v = 1
	}
	m.present.WithLabelValues(doc).Set(v)
}
