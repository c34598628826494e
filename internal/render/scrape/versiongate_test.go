package scrape

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// v3Fields is a ServiceMonitor endpoint and a Prometheus using keys a v2.53 LTS server refuses.
func v3Fields(version string) Input {
	prom := newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
		s.Version = version
		s.ScrapeClassicHistograms = ptr(true)
		s.NameValidationScheme = ptr(monitoringv1.LegacyNameValidationScheme)
		s.ScrapeProtocols = []monitoringv1.ScrapeProtocol{monitoringv1.PrometheusText1_0_0, monitoringv1.PrometheusProto}
		s.EnforcedKeepDroppedTargets = ptr(int64(7))
	}))
	sm := newServiceMonitor("default", "app", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
		s.ScrapeClassicHistograms = ptr(true)
		s.ConvertClassicHistogramsToNHCB = ptr(true)
		s.FallbackScrapeProtocol = ptr(monitoringv1.PrometheusText0_0_4)
		s.ScrapeProtocols = []monitoringv1.ScrapeProtocol{monitoringv1.PrometheusText1_0_0, monitoringv1.OpenMetricsText1_0_0}
		s.NativeHistogramBucketLimit = ptr(int64(160))
	}))
	return newInput(prom, monitors(sm))
}

func TestKeysTheVersionDoesNotKnowAreLeftOutWithAWarning(t *testing.T) {
	res, err := Generate(v3Fields("v2.53.1"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	// Loaded by a real v2.53 server in test/versions; the loader linked in is v3's.
	cfg := string(res.Config())
	for _, key := range []string{"fallback_scrape_protocol", "convert_classic_histograms_to_nhcb", "always_scrape_classic_histograms", "metric_name_validation_scheme", "PrometheusText1.0.0"} {
		if strings.Contains(cfg, key) {
			t.Errorf("the config of a v2.53.1 Prometheus holds %s, which it refuses:\n%s", key, cfg)
		}
	}
	j := jobNamed(t, parse(t, res.Config()), "serviceMonitor/default/app/0")
	if j.ScrapeClassicHistograms == nil || !*j.ScrapeClassicHistograms {
		t.Errorf("scrapeClassicHistograms is not written as v2's scrape_classic_histograms")
	}
	if !slices.Equal(j.ScrapeProtocols, []string{"OpenMetricsText1.0.0"}) || j.NativeHistogramBucketLimit != 160 {
		t.Errorf("scrape_protocols %v (want OpenMetricsText1.0.0 alone), native_histogram_bucket_limit %d (v2.45: kept)", j.ScrapeProtocols, j.NativeHistogramBucketLimit)
	}
	if !strings.Contains(cfg, "keep_dropped_targets: 7") {
		t.Errorf("the enforced keep_dropped_targets (v2.47) is missing from global:\n%s", cfg)
	}
	v := res.Verdicts[0]
	if !v.Accepted || !strings.Contains(v.Message, "fallback_scrape_protocol (needs v3.0)") || !strings.Contains(v.Message, "convert_classic_histograms_to_nhcb (needs v3.0)") {
		t.Errorf("verdict %+v: want accepted, naming what was left out", v)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "always_scrape_classic_histograms (needs v3.5)") || !strings.Contains(w, "metric_name_validation_scheme (needs v3.0)") {
		t.Errorf("warnings %q: want the global keys left out", res.Warnings)
	}
}

func TestANewEnoughPrometheusGetsEveryKey(t *testing.T) {
	res, err := Generate(v3Fields("v3.15.0"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	cfg := string(res.Config())
	for _, key := range []string{"fallback_scrape_protocol: PrometheusText0.0.4", "convert_classic_histograms_to_nhcb: true", "always_scrape_classic_histograms: true", "metric_name_validation_scheme: legacy", "PrometheusText1.0.0"} {
		if !strings.Contains(cfg, key) {
			t.Errorf("the config of a v3.15.0 Prometheus lacks %s:\n%s", key, cfg)
		}
	}
	if res.Verdicts[0].Message != "" || len(res.Warnings) != 0 {
		t.Errorf("warnings for a Prometheus that knows every key: %q, %q", res.Verdicts[0].Message, res.Warnings)
	}
}

// Without global limits (before v2.45) the enforced limit goes into every job, as with the
// existing operator; from v2.45 global carries it.
func TestEnforcedLimitsGoIntoTheJobsOfAPrometheusWithoutGlobalLimits(t *testing.T) {
	for version, want := range map[string]uint64{"v2.44.0": 100, "v2.45.0": 0} {
		res, err := Generate(newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Version = version
			s.EnforcedSampleLimit = ptr(int64(100))
		})), monitors(newServiceMonitor("default", "app"))))
		if err != nil {
			t.Fatalf("%s: Generate: %v", version, err)
		}
		if got := jobNamed(t, parse(t, res.Config()), "serviceMonitor/default/app/0").SampleLimit; got != want {
			t.Errorf("%s: job sample_limit %d, want %d", version, got, want)
		}
	}
}
