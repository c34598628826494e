package reloader

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// upstreamReloaderMetrics are the series the existing operator's config-reloader exports
// (Thanos's reloader package), with their types; none has a label.
var upstreamReloaderMetrics = map[string]dto.MetricType{
	"reloader_reloads_total":                         dto.MetricType_COUNTER,
	"reloader_reloads_failed_total":                  dto.MetricType_COUNTER,
	"reloader_last_reload_successful":                dto.MetricType_GAUGE,
	"reloader_last_reload_success_timestamp_seconds": dto.MetricType_GAUGE,
	"reloader_config_apply_operations_total":         dto.MetricType_COUNTER,
	"reloader_config_apply_operations_failed_total":  dto.MetricType_COUNTER,
	"reloader_watches":                               dto.MetricType_GAUGE,
	"reloader_watch_events_total":                    dto.MetricType_COUNTER,
	"reloader_watch_errors_total":                    dto.MetricType_COUNTER,
}

// families parses /metrics as Prometheus would scrape it.
func (h *harness) families() map[string]*dto.MetricFamily {
	h.t.Helper()
	_, body := h.scrape("/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		h.t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// upstreamValue is the value of the unlabelled upstream series name, checking its type.
func (h *harness) upstreamValue(name string) float64 {
	h.t.Helper()
	f := h.families()[name]
	if f == nil {
		h.t.Fatalf("/metrics has no %s", name)
	}
	if f.GetType() != upstreamReloaderMetrics[name] {
		h.t.Fatalf("%s is a %v, the existing reloader's is a %v", name, f.GetType(), upstreamReloaderMetrics[name])
	}
	if len(f.Metric) != 1 || len(f.Metric[0].Label) != 0 {
		h.t.Fatalf("%s has %d series or labels %v; the existing reloader's has one series without labels", name, len(f.Metric), f.Metric[0].Label)
	}
	if f.GetType() == dto.MetricType_COUNTER {
		return f.Metric[0].GetCounter().GetValue()
	}
	return f.Metric[0].GetGauge().GetValue()
}

func TestSidecarExportsTheExistingConfigReloadersMetricsToo(t *testing.T) {
	h := newHarness(t)
	h.prom.failFirst.Store(2)
	h.writeConfig("global: {}\n")
	h.start(h.options())
	h.waitForReloads(1)

	for name := range upstreamReloaderMetrics {
		h.upstreamValue(name)
	}
	for name, want := range map[string]float64{
		// Thanos counts every attempt as a reload request, failed ones included.
		"reloader_reloads_total":                        3,
		"reloader_reloads_failed_total":                 2,
		"reloader_last_reload_successful":               1,
		"reloader_watches":                              1, // the one configuration file
		"reloader_config_apply_operations_failed_total": 0,
		"reloader_watch_errors_total":                   0,
	} {
		if got := h.upstreamValue(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := h.upstreamValue("reloader_config_apply_operations_total"); got < 1 {
		t.Errorf("reloader_config_apply_operations_total = %v after the configuration was written", got)
	}
	if got, lookout := h.upstreamValue("reloader_last_reload_success_timestamp_seconds"),
		h.metricValue("lookout_reloader_last_reload_success_timestamp_seconds"); got != lookout || got <= 0 {
		t.Errorf("reloader_last_reload_success_timestamp_seconds = %v, lookout_reloader_last_reload_success_timestamp_seconds = %v", got, lookout)
	}
}

// kube-prometheus alerts on max_over_time(reloader_last_reload_successful[5m]) == 0: the
// gauge must drop to 0 while Prometheus refuses the configuration.
func TestTheExistingReloadersSuccessGaugeDropsWhilePrometheusRefusesTheConfig(t *testing.T) {
	h := newHarness(t)
	h.prom.failFirst.Store(1 << 30)
	h.writeConfig("global: {}\n")
	h.start(h.options())

	eventually(t, "reloader_last_reload_successful is 0", func() bool {
		return h.upstreamValue("reloader_last_reload_successful") == 0 && h.upstreamValue("reloader_reloads_failed_total") >= 2
	})
	if got := h.metricValue("lookout_reloader_last_reload_successful"); got != 0 {
		t.Errorf("lookout_reloader_last_reload_successful = %v while reloads fail", got)
	}
	h.prom.failFirst.Store(0)
	eventually(t, "reloader_last_reload_successful is 1 again", func() bool {
		return h.upstreamValue("reloader_last_reload_successful") == 1
	})
}
