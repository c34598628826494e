// Package render turns the gathered inputs of one Prometheus into the desired
// cluster state: every object to apply and a verdict for every monitor. It is
// pure: no client, no clock, no randomness; the same Inputs give the same
// bytes, which is what lets `lookout render` match the controller exactly.
package render

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/lookout-operator/lookout/internal/render/workload"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/rules"
	"github.com/lookout-operator/lookout/internal/render/scrape"
)

// Inputs is everything rendering one Prometheus needs.
type Inputs struct {
	Prometheus *monitoringv1.Prometheus
	// ServiceMonitors the Prometheus selects (see package selection).
	ServiceMonitors []*monitoringv1.ServiceMonitor
	PodMonitors     []*monitoringv1.PodMonitor
	Probes          []*monitoringv1.Probe
	ScrapeConfigs   []*monitoringv1alpha1.ScrapeConfig
	// Rules are the PrometheusRules the Prometheus selects.
	Rules []*monitoringv1.PrometheusRule
	// Secrets and ConfigMaps referenced by the monitors, keyed
	// "namespace/name"; a missing key means the object does not exist.
	Secrets    map[string]*corev1.Secret
	ConfigMaps map[string]*corev1.ConfigMap
	// AdditionalScrapeConfigs is the content of spec.additionalScrapeConfigs.
	AdditionalScrapeConfigs []byte
	// AdditionalAlertManagerConfigs and AdditionalAlertRelabelConfigs are the
	// contents of spec.additionalAlertManagerConfigs and
	// spec.additionalAlertRelabelConfigs.
	AdditionalAlertManagerConfigs []byte
	AdditionalAlertRelabelConfigs []byte
	// ServiceAccountExists: spec.serviceAccountName names an existing ServiceAccount.
	ServiceAccountExists bool
	// ReloaderImage is the image of the config-reloader sidecar.
	ReloaderImage string
	// Cache, when given, carries work over from the previous render of the
	// same Prometheus; the output is the same without it.
	Cache *Cache
	// Delta, when given, is how the monitors differ from those of an earlier render's
	// inputs (see scrape.Delta); the output is the same without it.
	Delta *scrape.Delta
	// daemonSet: a PrometheusAgent in DaemonSet mode (set by PrometheusAgent).
	daemonSet bool
}

// Cache is what one Prometheus's renders carry from one to the next: each
// monitor's rendered and validated jobs (see scrape.Cache) and the compressed
// config pieces. Not safe for concurrent use: one per Prometheus.
type Cache struct {
	Scrape *scrape.Cache
	pieces pieceCache
	// The main config last compressed, and its gzip.
	mainConfig, mainGz []byte
	rbac               prometheus.RBACCache
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{Scrape: scrape.NewCache()} }

// Desired is the rendered state of one Prometheus.
type Desired struct {
	// Objects in dependency order.
	Objects []workload.Object
	// Verdicts, one per selected monitor; made anew by every render and never changed once
	// returned, so the controller keeps them as they are.
	Verdicts []scrape.Verdict
	scrape   *scrape.Result
}

// Config is the whole uncompressed prometheus.yaml, before any split into
// pieces (what `lookout render -o config` prints; the config Secret holds the
// same bytes unless the config was split). Assembled on each call; valid until the next
// render with the same Cache.
func (d *Desired) Config() []byte { return d.scrape.Config() }

// SpecError means the Prometheus spec itself cannot be rendered; the user
// must fix it. Nothing is applied, so what is running stays as it is.
type SpecError struct {
	Reason  string
	Message string
}

func (e *SpecError) Error() string { return e.Message }

// The pod mounts a fixed number of rule ConfigMap names; the rules renderer
// must never produce more.
var _ = [1]struct{}{}[rules.MaxConfigMaps-prometheus.RuleConfigMapSlots]

// Prometheus renders one Prometheus.
func Prometheus(in Inputs) (*Desired, error) {
	p := in.Prometheus
	if err := prometheus.Validate(p); err != nil {
		return nil, specError(err)
	}
	if err := checkSecretKeys(p.Namespace, prometheus.ThanosSecretKeys(p), in.Secrets); err != nil {
		return nil, err
	}
	ruleRes, err := rules.Generate(rules.Input{Prometheus: p, Rules: in.Rules})
	if err != nil {
		return nil, &SpecError{Reason: "InvalidRules", Message: err.Error()}
	}
	// Always present, so the first rule needs no config change: the
	// reloader sees the new file and reloads. An agent has no rules: no rule
	// files, no rule ConfigMaps.
	ruleFiles := prometheus.RuleFilesGlobs(p.Name)
	if prometheus.FlavourOf(p).Agent {
		ruleFiles, ruleRes.ConfigMaps = nil, nil
	}
	var scrapeCache *scrape.Cache
	var pieces *pieceCache
	if in.Cache != nil {
		scrapeCache, pieces = in.Cache.Scrape, &in.Cache.pieces
	}
	res, err := scrape.Generate(scrape.Input{
		Prometheus: p, ServiceMonitors: in.ServiceMonitors, PodMonitors: in.PodMonitors, Probes: in.Probes,
		ScrapeConfigs: in.ScrapeConfigs, Secrets: in.Secrets, ConfigMaps: in.ConfigMaps,
		AdditionalScrapeConfigs:       in.AdditionalScrapeConfigs,
		AdditionalAlertManagerConfigs: in.AdditionalAlertManagerConfigs,
		AdditionalAlertRelabelConfigs: in.AdditionalAlertRelabelConfigs,
		RuleFiles:                     ruleFiles,
		NodeLocal:                     in.daemonSet,
		Cache:                         scrapeCache,
		MoreVerdicts:                  len(ruleRes.Verdicts),
		Delta:                         in.Delta,
	})
	var additional *scrape.AdditionalConfigError
	if errors.As(err, &additional) {
		return nil, &SpecError{Reason: "InvalidAdditionalScrapeConfigs", Message: "spec.additionalScrapeConfigs: " + additional.Message}
	}
	var alerting *scrape.AlertingError
	if errors.As(err, &alerting) {
		return nil, &SpecError{Reason: alerting.Reason, Message: alerting.Message}
	}
	var remote *scrape.RemoteError
	if errors.As(err, &remote) {
		return nil, &SpecError{Reason: remote.Reason, Message: remote.Message}
	}
	// A spec field the config is made from (spec.tsdb, spec.tracingConfig, ...): its reason
	// and a message naming it.
	var field *workload.SpecError
	if errors.As(err, &field) {
		return nil, &SpecError{Reason: field.Reason, Message: field.Message}
	}
	if err != nil {
		return nil, &SpecError{Reason: "InvalidConfig", Message: err.Error()}
	}
	verdicts := res.Verdicts
	for _, v := range ruleRes.Verdicts {
		verdicts = append(verdicts, scrape.Verdict(v))
	}
	// No 1 MiB ceiling, and small writes: a large config loads its jobs
	// from pieces, each in a Secret of its own.
	mainConfig, pieceGz, err := split(res, pieces)
	if err != nil {
		return nil, &SpecError{Reason: "ConfigTooLarge", Message: err.Error()}
	}
	var gz []byte
	if in.Cache != nil && in.Cache.mainGz != nil && bytes.Equal(in.Cache.mainConfig, mainConfig) {
		gz = in.Cache.mainGz
	} else {
		if gz, err = Gzip(mainConfig); err != nil {
			return nil, err
		}
		if in.Cache != nil {
			in.Cache.mainConfig, in.Cache.mainGz = mainConfig, gz
		}
	}
	objs, err := prometheus.Objects(p, prometheus.Options{
		ConfigGzip:           gz,
		DiscoveryNamespaces:  res.Namespaces,
		AllNamespaces:        res.AllNamespaces,
		DiscoverNodes:        res.DiscoverNodes,
		ServiceAccountExists: in.ServiceAccountExists,
		ReloaderImage:        in.ReloaderImage,
		RuleConfigMaps:       ruleRes.ConfigMaps,
		ConfigPieces:         pieceGz,
		RBAC:                 rbacCache(in.Cache),
		DaemonSet:            in.daemonSet,
	})
	if err != nil {
		return nil, &SpecError{Reason: "InvalidSpec", Message: fmt.Sprintf("render objects: %v", err)}
	}
	return &Desired{Objects: objs, Verdicts: verdicts, scrape: res}, nil
}

// Gzip compresses deterministically: no name, no modification time. The
// default level: on generated configs it compresses as well as the best one
// at about 60% of the time.
func Gzip(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(b)/8 + 64)
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipWriters holds writers for reuse: each holds about a megabyte of compressor state.
var gzipWriters = sync.Pool{New: func() any {
	zw, err := gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression)
	if err != nil {
		panic(err) // only for an invalid level
	}
	return zw
}}

func rbacCache(c *Cache) *prometheus.RBACCache {
	if c == nil {
		return nil
	}
	return &c.rbac
}
