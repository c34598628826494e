package scrape

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Keys of prometheus.yaml that a Prometheus older than spec.version's minimum refuses, and so
// refuses the whole config over. As the existing operator does, a key the version does not know
// is left out with a warning (Verdict.Message of the accepted monitor, Result.Warnings for the
// global section) instead of being written: one monitor using a v3 field must not freeze the
// config of a v2.53 LTS server.

// keyGate is one key, the version that knows it, and whether the key is written.
type keyGate struct {
	key          string
	major, minor int
	set          bool
	drop         func()
}

// gate leaves out every key set that v does not know, and says which.
func gate(v workload.Version, gates []keyGate) []string {
	var dropped []string
	for _, g := range gates {
		if g.set && !v.AtLeast(g.major, g.minor) {
			g.drop()
			dropped = append(dropped, fmt.Sprintf("%s (needs v%d.%d)", g.key, g.major, g.minor))
		}
	}
	return dropped
}

// promVersion is the version gates compare with: spec.version (or the default). One that does
// not parse gates nothing here; the Prometheus's own renderer refuses it by name.
func promVersion(p *monitoringv1.Prometheus) (workload.Version, bool) {
	v, err := promrender.ParsedVersion(p)
	return v, err == nil
}

// scrapeProtocolsFor drops PrometheusText1.0.0, which Prometheus knows from v3.0.
func scrapeProtocolsFor(v workload.Version, protocols []string) ([]string, []string) {
	if v.AtLeast(3, 0) || !slices.Contains(protocols, string(monitoringv1.PrometheusText1_0_0)) {
		return protocols, nil
	}
	kept := slices.DeleteFunc(slices.Clone(protocols), func(p string) bool { return p == string(monitoringv1.PrometheusText1_0_0) })
	return kept, []string{string(monitoringv1.PrometheusText1_0_0) + " in scrape_protocols (needs v3.0)"}
}

// gateGlobal leaves out of the global section what the version does not know, with the
// existing operator's minimum versions.
func (g *generator) gateGlobal(gc *globalConfig) {
	if !g.versionKnown {
		return
	}
	v := g.version
	var dropped []string
	gc.ScrapeProtocols, dropped = scrapeProtocolsFor(v, gc.ScrapeProtocols)
	dropped = append(dropped, gate(v, []keyGate{
		{"scrape_protocols", 2, 49, len(gc.ScrapeProtocols) > 0, func() { gc.ScrapeProtocols = nil }},
		{"rule_query_offset", 2, 53, gc.RuleQueryOffset != "", func() { gc.RuleQueryOffset = "" }},
		{"body_size_limit", 2, 45, gc.BodySizeLimit != "", func() { gc.BodySizeLimit = "" }},
		{"sample_limit", 2, 45, gc.SampleLimit > 0, func() { gc.SampleLimit = 0 }},
		{"target_limit", 2, 45, gc.TargetLimit > 0, func() { gc.TargetLimit = 0 }},
		{"label_limit", 2, 45, gc.LabelLimit > 0, func() { gc.LabelLimit = 0 }},
		{"label_name_length_limit", 2, 45, gc.LabelNameLengthLimit > 0, func() { gc.LabelNameLengthLimit = 0 }},
		{"label_value_length_limit", 2, 45, gc.LabelValueLengthLimit > 0, func() { gc.LabelValueLengthLimit = 0 }},
		{"keep_dropped_targets", 2, 47, gc.KeepDroppedTargets > 0, func() { gc.KeepDroppedTargets = 0 }},
		{"metric_name_validation_scheme", 3, 0, gc.MetricNameValidationScheme != "", func() { gc.MetricNameValidationScheme = "" }},
		{"metric_name_escaping_scheme", 3, 4, gc.MetricNameEscapingScheme != "", func() { gc.MetricNameEscapingScheme = "" }},
		{"convert_classic_histograms_to_nhcb", 3, 4, gc.ConvertClassicHistogramsToNHCB != nil, func() { gc.ConvertClassicHistogramsToNHCB = nil }},
		{"always_scrape_classic_histograms", 3, 5, gc.AlwaysScrapeClassicHistograms != nil, func() { gc.AlwaysScrapeClassicHistograms = nil }},
		{"scrape_native_histograms", 3, 8, gc.ScrapeNativeHistograms != nil, func() { gc.ScrapeNativeHistograms = nil }},
	})...)
	for _, d := range dropped {
		g.warnings = append(g.warnings, fmt.Sprintf("global %s: left out, Prometheus %s does not know it", d, v.Tag()))
	}
}

// gateJob leaves out of job what the version does not know, and writes
// scrapeClassicHistograms under the key of the version's major (scrape_classic_histograms
// before v3). What it left out is added to the monitor's warnings.
func (g *generator) gateJob(job *scrapeJob) {
	if !g.versionKnown {
		return
	}
	v := g.version
	if job.AlwaysScrapeClassicHistograms != nil && v.Major < 3 {
		job.ScrapeClassicHistograms, job.AlwaysScrapeClassicHistograms = job.AlwaysScrapeClassicHistograms, nil
	}
	var dropped []string
	job.ScrapeProtocols, dropped = scrapeProtocolsFor(v, job.ScrapeProtocols)
	tls := job.TLSConfig
	dropped = append(dropped, gate(v, []keyGate{
		{"track_timestamps_staleness", 2, 48, job.TrackTimestampsStaleness != nil, func() { job.TrackTimestampsStaleness = nil }},
		{"enable_compression", 2, 49, job.EnableCompression != nil, func() { job.EnableCompression = nil }},
		{"follow_redirects", 2, 26, job.FollowRedirects != nil, func() { job.FollowRedirects = nil }},
		{"enable_http2", 2, 35, job.EnableHTTP2 != nil, func() { job.EnableHTTP2 = nil }},
		{"tls_config.min_version", 2, 35, tls != nil && tls.MinVersion != "", func() { tls.MinVersion = "" }},
		{"tls_config.max_version", 2, 41, tls != nil && tls.MaxVersion != "", func() { tls.MaxVersion = "" }},
		{"target_limit", 2, 21, job.TargetLimit > 0, func() { job.TargetLimit = 0 }},
		{"label_limit", 2, 27, job.LabelLimit > 0, func() { job.LabelLimit = 0 }},
		{"label_name_length_limit", 2, 27, job.LabelNameLengthLimit > 0, func() { job.LabelNameLengthLimit = 0 }},
		{"label_value_length_limit", 2, 27, job.LabelValueLengthLimit > 0, func() { job.LabelValueLengthLimit = 0 }},
		{"keep_dropped_targets", 2, 47, job.KeepDroppedTargets > 0, func() { job.KeepDroppedTargets = 0 }},
		{"scrape_native_histograms", 3, 8, job.ScrapeNativeHistograms != nil, func() { job.ScrapeNativeHistograms = nil }},
		{"native_histogram_bucket_limit", 2, 45, job.NativeHistogramBucketLimit > 0, func() { job.NativeHistogramBucketLimit = 0 }},
		{"native_histogram_min_bucket_factor", 2, 50, job.NativeHistogramMinBucketFactor != 0, func() { job.NativeHistogramMinBucketFactor = 0 }},
		{"scrape_classic_histograms", 2, 45, job.ScrapeClassicHistograms != nil, func() { job.ScrapeClassicHistograms = nil }},
		{"convert_classic_histograms_to_nhcb", 3, 0, job.ConvertClassicHistogramsToNHCB != nil, func() { job.ConvertClassicHistogramsToNHCB = nil }},
		{"scrape_protocols", 2, 49, len(job.ScrapeProtocols) > 0, func() { job.ScrapeProtocols = nil }},
		{"fallback_scrape_protocol", 3, 0, job.FallbackScrapeProtocol != "", func() { job.FallbackScrapeProtocol = "" }},
		{"body_size_limit", 2, 28, job.BodySizeLimit != "", func() { job.BodySizeLimit = "" }},
		{"metric_name_validation_scheme", 3, 0, job.MetricNameValidationScheme != "", func() { job.MetricNameValidationScheme = "" }},
		{"metric_name_escaping_scheme", 3, 4, job.MetricNameEscapingScheme != "", func() { job.MetricNameEscapingScheme = "" }},
	})...)
	if len(dropped) > 0 && g.dropped != nil {
		*g.dropped = append(*g.dropped, job.JobName+": "+strings.Join(dropped, ", "))
	}
}

// droppedMessage is the accepted monitor's warning: what its jobs left out for the version.
func (g *generator) droppedMessage(dropped []string) string {
	if len(dropped) == 0 {
		return ""
	}
	return fmt.Sprintf("accepted without what Prometheus %s does not know (as the existing operator does): %s", g.version.Tag(), strings.Join(dropped, "; "))
}

// forLoader is doc as the loader linked into Lookout (Prometheus v3's) reads it: the jobs of a
// v2 Prometheus carry scrape_classic_histograms, the v2 name of a key v3 renamed, which the v3
// loader refuses under that name.
func (g *generator) forLoader(doc []byte) []byte {
	if !g.versionKnown || g.version.Major >= 3 {
		return doc
	}
	return bytes.ReplaceAll(doc, []byte("\n  scrape_classic_histograms:"), []byte("\n  always_scrape_classic_histograms:"))
}
