package scrape

import (
	"crypto/tls"
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// The top-level sections a Prometheus spec sets besides global: runtime, storage, tracing and
// otlp. They are written after rule_files, in the main config when it is split, and checked
// with the global section by Prometheus's loader.

type runtimeConfig struct {
	GoGC *int32 `yaml:"gogc,omitempty"`
}

type storageConfig struct {
	TSDB      *tsdbConfig      `yaml:"tsdb,omitempty"`
	Exemplars *exemplarsConfig `yaml:"exemplars,omitempty"`
}

type tsdbConfig struct {
	OutOfOrderTimeWindow           string               `yaml:"out_of_order_time_window,omitempty"`
	StaleSeriesCompactionThreshold *float64             `yaml:"stale_series_compaction_threshold,omitempty"`
	ChunkEncoding                  *chunkEncodingConfig `yaml:"chunk_encoding,omitempty"`
}

type chunkEncodingConfig struct {
	Floats string `yaml:"floats,omitempty"`
}

type exemplarsConfig struct {
	// Zero and below turn the storage off, as the API documents; written as given.
	MaxExemplars int64 `yaml:"max_exemplars"`
}

type tracingConfig struct {
	ClientType       string            `yaml:"client_type,omitempty"`
	Endpoint         string            `yaml:"endpoint"`
	SamplingFraction *float64          `yaml:"sampling_fraction,omitempty"`
	Insecure         *bool             `yaml:"insecure,omitempty"`
	TLSConfig        *tlsConfig        `yaml:"tls_config,omitempty"`
	Headers          map[string]string `yaml:"headers,omitempty"`
	Compression      string            `yaml:"compression,omitempty"`
	Timeout          string            `yaml:"timeout,omitempty"`
}

type otlpConfig struct {
	PromoteAllResourceAttributes         *bool    `yaml:"promote_all_resource_attributes,omitempty"`
	PromoteResourceAttributes            []string `yaml:"promote_resource_attributes,omitempty"`
	IgnoreResourceAttributes             []string `yaml:"ignore_resource_attributes,omitempty"`
	TranslationStrategy                  string   `yaml:"translation_strategy,omitempty"`
	KeepIdentifyingResourceAttributes    *bool    `yaml:"keep_identifying_resource_attributes,omitempty"`
	ConvertHistogramsToNHCB              *bool    `yaml:"convert_histograms_to_nhcb,omitempty"`
	PromoteScopeMetadata                 *bool    `yaml:"promote_scope_metadata,omitempty"`
	LabelNameUnderscoreSanitization      *bool    `yaml:"label_name_underscore_sanitization,omitempty"`
	LabelNamePreserveMultipleUnderscores *bool    `yaml:"label_name_preserve_multiple_underscores,omitempty"`
}

// specGate is a spec field (a path under spec) Prometheus knows from major.minor on.
type specGate struct {
	field        string
	set          bool
	major, minor int
}

// gateSpec refuses the first field set that the Prometheus of spec.version does not know:
// written, it would make the running Prometheus refuse the whole config; left out, it would
// be silently ignored. The version is only read when some field is set.
func (g *generator) gateSpec(gates []specGate) *workload.SpecError {
	var v workload.Version
	parsed := false
	for _, gt := range gates {
		if !gt.set {
			continue
		}
		if !parsed {
			var err error
			if v, err = promrender.ParsedVersion(g.prom); err != nil {
				return workload.Invalid("spec.version", "%v", err)
			}
			parsed = true
		}
		if gt.set && !v.AtLeast(gt.major, gt.minor) {
			return &workload.SpecError{Field: gt.field, Reason: workload.ReasonUnsupportedField,
				Message: fmt.Sprintf("%s: requires Prometheus v%d.%d.0 or later, spec.version is %s", gt.field, gt.major, gt.minor, v.Tag())}
		}
	}
	return nil
}

// sections renders spec.runtime, spec.tsdb, spec.exemplars, spec.tracingConfig, spec.otlp and
// the two log files into doc and gc.
func (g *generator) sections(doc *globalDocument, gc *globalConfig) *workload.SpecError {
	spec := &g.prom.Spec
	ts, ex, tr, ot := spec.TSDB, spec.Exemplars, spec.TracingConfig, spec.OTLP
	if se := g.gateSpec([]specGate{
		{"spec.runtime.goGC", spec.Runtime != nil && spec.Runtime.GoGC != nil, 2, 53},
		{"spec.tsdb.outOfOrderTimeWindow", ts != nil && ts.OutOfOrderTimeWindow != nil, 2, 39},
		{"spec.tsdb.staleSeriesCompactionThreshold", ts != nil && ts.StaleSeriesCompactionThreshold != nil, 3, 10},
		{"spec.tsdb.chunkEncoding", ts != nil && ts.ChunkEncoding != nil && ts.ChunkEncoding.Floats != nil, 3, 13},
		{"spec.exemplars.maxSize", ex != nil && ex.MaxSize != nil, 2, 30},
		{"spec.tracingConfig", tr != nil, 2, 34},
		{"spec.otlp", ot != nil, 2, 55},
		{"spec.otlp.translationStrategy", ot != nil && ot.TranslationStrategy != nil, 3, 0},
		{"spec.otlp.keepIdentifyingResourceAttributes", ot != nil && ot.KeepIdentifyingResourceAttributes != nil, 3, 1},
		{"spec.otlp.convertHistogramsToNHCB", ot != nil && ot.ConvertHistogramsToNHCB != nil, 3, 4},
		{"spec.otlp.promoteAllResourceAttributes", ot != nil && ot.PromoteAllResourceAttributes != nil, 3, 5},
		{"spec.otlp.ignoreResourceAttributes", ot != nil && len(ot.IgnoreResourceAttributes) > 0, 3, 5},
		{"spec.otlp.promoteScopeMetadata", ot != nil && ot.PromoteScopeMetadata != nil, 3, 6},
		{"spec.otlp.labelNameUnderscoreSanitization", ot != nil && ot.LabelNameUnderscoreSanitization != nil, 3, 8},
		{"spec.otlp.labelNamePreserveMultipleUnderscores", ot != nil && ot.LabelNamePreserveMultipleUnderscores != nil, 3, 8},
		{"spec.queryLogFile", spec.QueryLogFile != "", 2, 16},
		{"spec.scrapeFailureLogFile", spec.ScrapeFailureLogFile != nil && *spec.ScrapeFailureLogFile != "", 2, 55},
	}); se != nil {
		return se
	}

	if spec.Runtime != nil && spec.Runtime.GoGC != nil {
		if *spec.Runtime.GoGC < -1 {
			return workload.Invalid("spec.runtime.goGC", "must be -1 (off) or more, got %d", *spec.Runtime.GoGC)
		}
		doc.Runtime = &runtimeConfig{GoGC: spec.Runtime.GoGC}
	}
	storage := &storageConfig{}
	if ts != nil {
		t := &tsdbConfig{}
		if d := ts.OutOfOrderTimeWindow; d != nil && *d != "" {
			if _, err := parseDuration(string(*d)); err != nil {
				return workload.Invalid("spec.tsdb.outOfOrderTimeWindow", "%v", err)
			}
			t.OutOfOrderTimeWindow = string(*d)
		}
		if q := ts.StaleSeriesCompactionThreshold; q != nil {
			f := q.AsApproximateFloat64()
			if f < 0 || f > 1 {
				return workload.Invalid("spec.tsdb.staleSeriesCompactionThreshold", "must be between 0 and 1, got %s", q.String())
			}
			t.StaleSeriesCompactionThreshold = &f
		}
		if ce := ts.ChunkEncoding; ce != nil && ce.Floats != nil {
			switch *ce.Floats {
			case monitoringv1.ChunkEncodingFloatsXor, monitoringv1.ChunkEncodingFloatsXor2:
				t.ChunkEncoding = &chunkEncodingConfig{Floats: strings.ToLower(string(*ce.Floats))}
			default:
				return workload.Invalid("spec.tsdb.chunkEncoding.floats", "%q is neither Xor nor Xor2", *ce.Floats)
			}
		}
		if *t != (tsdbConfig{}) {
			storage.TSDB = t
		}
	}
	if ex != nil && ex.MaxSize != nil {
		storage.Exemplars = &exemplarsConfig{MaxExemplars: *ex.MaxSize}
	}
	if *storage != (storageConfig{}) {
		doc.Storage = storage
	}
	if tr != nil {
		out, se := g.tracing(tr)
		if se != nil {
			return se
		}
		doc.Tracing = out
	}
	if ot != nil {
		out, se := otlp(ot)
		if se != nil {
			return se
		}
		doc.OTLP = out
	}
	if se := g.checkWebTLS(); se != nil {
		return se
	}
	if f := spec.QueryLogFile; f != "" {
		gc.QueryLogFile = promrender.LogFilePath(f)
	}
	if f := spec.ScrapeFailureLogFile; f != nil && *f != "" {
		gc.ScrapeFailureLogFile = promrender.LogFilePath(*f)
	}
	return nil
}

// tracing renders spec.tracingConfig; its TLS material is read in the Prometheus's namespace.
func (g *generator) tracing(tr *monitoringv1.TracingConfig) (*tracingConfig, *workload.SpecError) {
	const field = "spec.tracingConfig"
	if tr.Endpoint == "" {
		return nil, workload.Invalid(field+".endpoint", "is required")
	}
	out := &tracingConfig{Endpoint: tr.Endpoint, Insecure: tr.Insecure, Headers: tr.Headers}
	if c := tr.ClientType; c != nil && *c != "" {
		switch strings.ToLower(*c) {
		case "http", "grpc":
			out.ClientType = strings.ToLower(*c)
		default:
			return nil, workload.Invalid(field+".clientType", "%q is neither HTTP nor GRPC", *c)
		}
	}
	if c := tr.Compression; c != nil && *c != "" {
		if strings.ToLower(*c) != "gzip" {
			return nil, workload.Invalid(field+".compression", "%q is not Gzip, the only compression Prometheus knows", *c)
		}
		out.Compression = "gzip"
	}
	if q := tr.SamplingFraction; q != nil {
		f := q.AsApproximateFloat64()
		if f < 0 || f > 1 {
			return nil, workload.Invalid(field+".samplingFraction", "must be between 0 and 1, got %s", q.String())
		}
		out.SamplingFraction = &f
	}
	if d := tr.Timeout; d != nil && *d != "" {
		if _, err := parseDuration(string(*d)); err != nil {
			return nil, workload.Invalid(field+".timeout", "%v", err)
		}
		out.Timeout = string(*d)
	}
	if tr.TLSConfig != nil {
		if err := tr.TLSConfig.Validate(); err != nil {
			return nil, workload.Invalid(field+".tlsConfig", "%v", err)
		}
		var rej *rejection
		if out.TLSConfig, rej = g.endpointTLS(g.prom.Namespace, field+".tlsConfig", tr.TLSConfig, nil); rej != nil {
			return nil, rejectionSpecError(field+".tlsConfig", rej)
		}
	}
	return out, nil
}

// otlp renders spec.otlp.
func otlp(o *monitoringv1.OTLPConfig) (*otlpConfig, *workload.SpecError) {
	if err := o.Validate(); err != nil {
		return nil, workload.Invalid("spec.otlp", "%v", err)
	}
	out := &otlpConfig{
		PromoteAllResourceAttributes:         o.PromoteAllResourceAttributes,
		PromoteResourceAttributes:            o.PromoteResourceAttributes,
		IgnoreResourceAttributes:             o.IgnoreResourceAttributes,
		KeepIdentifyingResourceAttributes:    o.KeepIdentifyingResourceAttributes,
		ConvertHistogramsToNHCB:              o.ConvertHistogramsToNHCB,
		PromoteScopeMetadata:                 o.PromoteScopeMetadata,
		LabelNameUnderscoreSanitization:      o.LabelNameUnderscoreSanitization,
		LabelNamePreserveMultipleUnderscores: o.LabelNamePreserveMultipleUnderscores,
	}
	if ts := o.TranslationStrategy; ts != nil {
		switch *ts {
		case monitoringv1.NoUTF8EscapingWithSuffixes, monitoringv1.UnderscoreEscapingWithSuffixes,
			monitoringv1.NoTranslation, monitoringv1.UnderscoreEscapingWithoutSuffixes:
			out.TranslationStrategy = string(*ts)
		default:
			return nil, workload.Invalid("spec.otlp.translationStrategy", "unknown strategy %q", *ts)
		}
	}
	return out, nil
}

// rejectionSpecError turns the rejection of a Prometheus-level reference (a missing Secret or
// key) into a spec error; the message names the field already.
func rejectionSpecError(field string, rej *rejection) *workload.SpecError {
	return &workload.SpecError{Field: field, Reason: rej.reason, Message: rej.message}
}

// checkWebTLS checks that the Secrets and ConfigMaps spec.web.tlsConfig names hold the
// certificate and key, and that they make a key pair: the pod mounts them, and a missing one
// would leave it stuck in ContainerCreating with nothing on the Prometheus's status.
func (g *generator) checkWebTLS() *workload.SpecError {
	w := g.prom.Spec.Web
	if w == nil || w.TLSConfig == nil {
		return nil
	}
	const field = "spec.web.tlsConfig"
	t, ns := w.TLSConfig, g.prom.Namespace
	var cert, key string
	var rej *rejection
	if t.CertFile == nil || *t.CertFile == "" {
		if cert, rej = g.secretOrConfigMapValue(ns, field+".cert", &t.Cert); rej != nil {
			return rejectionSpecError(field+".cert", rej)
		}
	}
	if t.KeyFile == nil || *t.KeyFile == "" {
		if key, rej = g.secretValue(ns, field+".keySecret", &t.KeySecret); rej != nil {
			return rejectionSpecError(field+".keySecret", rej)
		}
	}
	if t.ClientCAFile == nil || *t.ClientCAFile == "" {
		if _, rej = g.secretOrConfigMapValue(ns, field+".client_ca", &t.ClientCA); rej != nil {
			return rejectionSpecError(field+".client_ca", rej)
		}
	}
	if cert != "" && key != "" {
		if _, err := tls.X509KeyPair([]byte(cert), []byte(key)); err != nil {
			return workload.Invalid(field, "the certificate and key do not make a key pair: %v", err)
		}
	}
	return nil
}
