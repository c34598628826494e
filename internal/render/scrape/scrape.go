// Package scrape renders the prometheus.yaml of one Prometheus from the monitors it selects
// (ServiceMonitors, PodMonitors, Probes and ScrapeConfigs) and its additional scrape configs.
//
// It is pure: the same Input always gives the same bytes, and nothing here talks to a cluster.
// A monitor that cannot be rendered, or whose jobs Prometheus's own config loader refuses, is
// left out alone and reported through its Verdict; the rest of the config still ships.
// Credentials, certificates and keys are read from the Secrets and ConfigMaps given and inlined:
// the config is stored in a Secret, and nothing needs mounting into the Prometheus pod.
package scrape

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Input is what the generator needs for one Prometheus.
type Input struct {
	Prometheus *monitoringv1.Prometheus
	// The monitors the Prometheus selects, already selected by the caller; any order.
	ServiceMonitors []*monitoringv1.ServiceMonitor
	PodMonitors     []*monitoringv1.PodMonitor
	Probes          []*monitoringv1.Probe
	ScrapeConfigs   []*monitoringv1alpha1.ScrapeConfig
	// Secrets referenced by monitors, keyed "namespace/name". A missing key means the Secret does not exist.
	Secrets map[string]*corev1.Secret
	// ConfigMaps referenced by monitors (TLS CAs and client certificates, OAuth2 client IDs),
	// keyed "namespace/name". A missing key means the ConfigMap does not exist.
	ConfigMaps map[string]*corev1.ConfigMap
	// RuleFiles are the rule_files patterns, written after the global section.
	RuleFiles []string
	// AdditionalScrapeConfigs is the content of the Secret key the Prometheus's
	// spec.additionalScrapeConfigs names, read by the caller; nil or empty means none. It must be
	// a YAML list of scrape configs. Its jobs are written after all generated ones as given:
	// nothing is added to them, neither sharding nor the enforced namespace label or limits, so
	// with several shards every shard scrapes all their targets unless they shard themselves
	// ($(SHARD) is substituted in them too). Kubernetes discovery they use is not in
	// Result.Namespaces. When they do not parse or Prometheus refuses them, Generate returns an
	// *AdditionalConfigError.
	AdditionalScrapeConfigs []byte
}

// Verdict says whether one input object made it into the config.
type Verdict struct {
	Kind       string // "ServiceMonitor", "PodMonitor", "Probe" or "ScrapeConfig"
	Namespace  string
	Name       string
	Generation int64
	Accepted   bool
	Reason     string // CamelCase machine reason when rejected, see the Reason* constants
	Message    string // human sentence naming the endpoint index and the field
}

// Result is the rendered prometheus.yaml plus what the caller needs to report and to grant.
type Result struct {
	Config []byte // the whole prometheus.yaml, deterministic: same input → same bytes
	// Exactly one per input monitor, sorted by kind (ServiceMonitor, PodMonitor, Probe,
	// ScrapeConfig), then by namespace/name.
	Verdicts []Verdict
	// Namespaces Prometheus must run Kubernetes discovery in (sorted, unique), for RBAC: those of
	// accepted ServiceMonitors (endpoints or endpointslice role), PodMonitors (pod role), Probes
	// with ingress targets (ingress role) and ScrapeConfigs' kubernetesSDConfigs without an
	// apiServer (their namespaces.names, and the Prometheus's own namespace with ownNamespace).
	// AllNamespaces is true when some accepted monitor uses namespaceSelector.any, or a
	// ScrapeConfig's kubernetesSDConfigs entry lists no namespace.
	Namespaces    []string
	AllNamespaces bool
	// DiscoverNodes is true when Prometheus must read Nodes: an accepted ScrapeConfig discovers
	// them (role Node), or a monitor attaches node metadata to its targets (attachMetadata.node).
	DiscoverNodes bool
}

// Reasons a monitor is rejected with (Verdict.Reason).
const (
	ReasonInvalidRegex         = "InvalidRegex"         // a relabeling regex does not compile
	ReasonUnknownRelabelAction = "UnknownRelabelAction" // a relabeling action Prometheus does not know
	ReasonInvalidRelabelConfig = "InvalidRelabelConfig" // a relabeling Prometheus refuses (missing target label, bad label name...)
	ReasonSecretNotFound       = "SecretNotFound"       // a referenced Secret does not exist
	ReasonSecretKeyNotFound    = "SecretKeyNotFound"    // a referenced Secret lacks the key
	ReasonConfigMapNotFound    = "ConfigMapNotFound"    // a referenced ConfigMap does not exist
	ReasonConfigMapKeyNotFound = "ConfigMapKeyNotFound" // a referenced ConfigMap lacks the key
	ReasonInvalidPort          = "InvalidPort"          // no port, or a bad port name or number
	ReasonInvalidDuration      = "InvalidDuration"      // interval or scrapeTimeout unparsable, or timeout > interval
	ReasonInvalidSelector      = "InvalidSelector"      // a label selector (Services, Pods, Ingresses) does not parse
	ReasonScrapeClassNotFound  = "ScrapeClassNotFound"  // scrapeClass names a class the Prometheus lacks
	ReasonFileAccessDenied     = "FileAccessDenied"     // file paths while arbitraryFSAccessThroughSMs.deny is set
	ReasonUnsupported          = "Unsupported"          // a feature Lookout does not render yet
	ReasonDuplicate            = "Duplicate"            // the same namespace/name given twice
	ReasonInvalidConfig        = "InvalidConfig"        // anything else, including what Prometheus's loader refuses
)

const (
	serviceMonitorKind          = monitoringv1.ServiceMonitorsKind
	serviceMonitorJobNamePrefix = "serviceMonitor"
	podMonitorKind              = monitoringv1.PodMonitorsKind
	podMonitorJobNamePrefix     = "podMonitor"
	probeKind                   = monitoringv1.ProbesKind
	probeJobNamePrefix          = "probe"
)

// rejection is why one monitor is left out of the config.
type rejection struct {
	reason  string
	message string
}

func (r *rejection) Error() string { return r.reason + ": " + r.message }

func reject(reason, format string, args ...any) *rejection {
	return &rejection{reason: reason, message: fmt.Sprintf(format, args...)}
}

// Generate renders prometheus.yaml. It returns an error only when the whole config cannot be
// produced (e.g. the Prometheus spec itself is invalid: bad scrapeInterval, bad externalLabels);
// a bad monitor is rejected on its own through its Verdict and the rest still ship. Bad
// additional scrape configs give an *AdditionalConfigError, returned as is.
func Generate(in Input) (*Result, error) {
	if in.Prometheus == nil {
		return nil, errors.New("render scrape config: no Prometheus given")
	}
	key := in.Prometheus.Namespace + "/" + in.Prometheus.Name
	res, err := generate(in)
	if err != nil {
		if ae, ok := err.(*AdditionalConfigError); ok {
			return nil, ae
		}
		return nil, fmt.Errorf("render scrape config for Prometheus %s: %w", key, err)
	}
	return res, nil
}

// candidate is a monitor whose jobs were built and now wait for the loader's word.
type candidate struct {
	verdict   int    // index into Result.Verdicts
	endpoints string // the field listing the monitor's endpoints, one job each; "" for one job per monitor
	jobs      []*scrapeJob
	fragment  []byte // the jobs as YAML sequence items, ready to be appended under scrape_configs
	discovery discovery
	rejected  bool
}

// monitor is one input object of any kind, in the order its jobs are written.
type monitor struct {
	kind      string
	obj       metav1.Object
	endpoints string // see candidate.endpoints
	jobs      func() ([]*scrapeJob, discovery, *rejection)
}

// monitors lists the input in the order COMPAT.md fixes (kindOrder), each kind sorted by
// namespace/name.
func (g *generator) monitors(in Input) []monitor {
	sms, pms, probes := sortedObjects(in.ServiceMonitors), sortedObjects(in.PodMonitors), sortedObjects(in.Probes)
	scs := sortedObjects(in.ScrapeConfigs)
	out := make([]monitor, 0, len(sms)+len(pms)+len(probes)+len(scs))
	for _, sm := range sms {
		out = append(out, monitor{kind: serviceMonitorKind, obj: sm, endpoints: "endpoints",
			jobs: func() ([]*scrapeJob, discovery, *rejection) { return g.serviceMonitorJobs(sm) }})
	}
	for _, pm := range pms {
		out = append(out, monitor{kind: podMonitorKind, obj: pm, endpoints: "podMetricsEndpoints",
			jobs: func() ([]*scrapeJob, discovery, *rejection) { return g.podMonitorJobs(pm) }})
	}
	for _, p := range probes {
		out = append(out, monitor{kind: probeKind, obj: p,
			jobs: func() ([]*scrapeJob, discovery, *rejection) { return g.probeJobs(p) }})
	}
	for _, sc := range scs {
		out = append(out, monitor{kind: scrapeConfigKind, obj: sc,
			jobs: func() ([]*scrapeJob, discovery, *rejection) { return g.scrapeConfigJobs(sc) }})
	}
	return out
}

func generate(in Input) (*Result, error) {
	g, err := newGenerator(in)
	if err != nil {
		return nil, err
	}
	extra, aerr := additionalJobs(in.AdditionalScrapeConfigs)
	if aerr != nil {
		return nil, aerr
	}
	var additional, additionalCheck []byte
	if extra != nil {
		additional, additionalCheck = extra.shipped, extra.check
	}

	monitors := g.monitors(in)
	res := &Result{Verdicts: make([]Verdict, 0, len(monitors))}
	candidates := make([]*candidate, 0, len(monitors))
	seen := make(map[string]struct{}, len(monitors))

	for _, m := range monitors {
		res.Verdicts = append(res.Verdicts, Verdict{
			Kind:       m.kind,
			Namespace:  m.obj.GetNamespace(),
			Name:       m.obj.GetName(),
			Generation: m.obj.GetGeneration(),
		})
		v := &res.Verdicts[len(res.Verdicts)-1]
		key := m.obj.GetNamespace() + "/" + m.obj.GetName()
		if _, dup := seen[m.kind+"/"+key]; dup {
			v.Reason = ReasonDuplicate
			v.Message = fmt.Sprintf("%s %s was given more than once; only the first is used", m.kind, key)
			continue
		}
		seen[m.kind+"/"+key] = struct{}{}

		jobs, disc, rej := m.jobs()
		if rej != nil {
			v.Reason, v.Message = rej.reason, rej.message
			continue
		}
		fragment, err := marshalJobs(jobs)
		if err != nil {
			return nil, fmt.Errorf("marshal jobs of %s %s: %w", m.kind, key, err)
		}
		candidates = append(candidates, &candidate{
			verdict: len(res.Verdicts) - 1, endpoints: m.endpoints, jobs: jobs, fragment: fragment, discovery: disc,
		})
	}

	// Every monitor's jobs must pass Prometheus's loader on their own. A job's validity depends
	// only on itself and the global section (and job names being unique), so when the whole
	// config loads, each monitor's part does too: load the whole once, and only when it fails
	// find out whose fault it is: the additional jobs', or some monitors', each then loaded
	// alone.
	if _, err := config.Load(string(g.assemble(candidates, additionalCheck)), discardLogger); err != nil {
		if additionalCheck != nil {
			if _, generatedErr := config.Load(string(g.assemble(candidates, nil)), discardLogger); generatedErr == nil {
				return nil, g.refused(extra, err)
			}
		}
		for _, c := range candidates {
			if rej := g.loadJobs(c); rej != nil {
				c.rejected = true
				v := &res.Verdicts[c.verdict]
				v.Reason, v.Message = rej.reason, rej.message
			}
		}
		// Each remaining monitor loaded on its own, so this is a bug here, not bad input.
		if _, err := config.Load(string(g.assemble(candidates, nil)), discardLogger); err != nil {
			return nil, fmt.Errorf("generated prometheus.yaml does not load (bug): %w", err)
		}
		if additionalCheck != nil {
			if _, err := config.Load(string(g.assemble(candidates, additionalCheck)), discardLogger); err != nil {
				return nil, g.refused(extra, err)
			}
		}
	}
	out := g.assemble(candidates, additional)

	namespaces := map[string]struct{}{}
	for _, c := range candidates {
		if c.rejected {
			continue
		}
		res.Verdicts[c.verdict].Accepted = true
		if c.discovery.all {
			res.AllNamespaces = true
		}
		if c.discovery.nodes {
			res.DiscoverNodes = true
		}
		for _, ns := range c.discovery.namespaces {
			namespaces[ns] = struct{}{}
		}
	}
	res.Namespaces = sortedKeys(namespaces)
	res.Config = out
	return res, nil
}

var discardLogger = slog.New(slog.DiscardHandler)

const scrapeConfigsKey = "scrape_configs:\n"

// marshalJobs renders jobs as the items of a top-level YAML sequence. Marshalling each
// monitor once and concatenating the pieces gives the same bytes as marshalling the whole
// list, at half the cost of doing both.
func marshalJobs(jobs []*scrapeJob) ([]byte, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	out, err := yaml.Marshal(&document{ScrapeConfigs: jobs})
	if err != nil {
		return nil, err
	}
	// document marshals as "global: null" followed by "scrape_configs:" and the items.
	i := bytes.Index(out, []byte(scrapeConfigsKey))
	if i < 0 {
		return nil, fmt.Errorf("unexpected YAML layout for scrape_configs: %q", out)
	}
	return out[i+len(scrapeConfigsKey):], nil
}

// assemble writes the whole prometheus.yaml from the global section, the jobs of the
// candidates not rejected, then the extra jobs (sequence items, as marshalJobs writes them).
func (g *generator) assemble(candidates []*candidate, extra []byte) []byte {
	size := len(g.globalYAML) + len(scrapeConfigsKey) + len(extra)
	for _, c := range candidates {
		size += len(c.fragment)
	}
	out := make([]byte, 0, size)
	out = append(out, g.globalYAML...)
	start := len(out)
	out = append(out, scrapeConfigsKey...)
	for _, c := range candidates {
		if !c.rejected {
			out = append(out, c.fragment...)
		}
	}
	out = append(out, extra...)
	if len(out) == start+len(scrapeConfigsKey) {
		out = append(out[:start], "scrape_configs: []\n"...)
	}
	return out
}

// loadJobs loads one monitor's jobs under the same global section. When it fails, the
// message names the endpoint whose job fails alone.
func (g *generator) loadJobs(c *candidate) *rejection {
	err := g.load(c.fragment)
	if err == nil {
		return nil
	}
	if c.endpoints == "" {
		return reject(ReasonInvalidConfig, "Prometheus refuses the generated job: %v", err)
	}
	if len(c.jobs) == 1 {
		return reject(ReasonInvalidConfig, "%s[0]: Prometheus refuses the generated job: %v", c.endpoints, err)
	}
	for i := range c.jobs {
		fragment, merr := marshalJobs(c.jobs[i : i+1])
		if merr != nil {
			continue
		}
		if jerr := g.load(fragment); jerr != nil {
			return reject(ReasonInvalidConfig, "%s[%d]: Prometheus refuses the generated job: %v", c.endpoints, i, jerr)
		}
	}
	return reject(ReasonInvalidConfig, "Prometheus refuses the generated jobs: %v", err)
}

func (g *generator) load(fragment []byte) error {
	doc := make([]byte, 0, len(g.globalYAML)+len(scrapeConfigsKey)+len(fragment))
	doc = append(doc, g.globalYAML...)
	doc = append(doc, scrapeConfigsKey...)
	doc = append(doc, fragment...)
	_, err := config.Load(string(doc), discardLogger)
	return err
}

// sortedObjects drops nil entries and orders by "namespace/name", the order the existing
// operator writes jobs in. Ties (the same object given twice) are broken by UID and
// resourceVersion so that the one kept does not depend on the input order.
func sortedObjects[T any, PT interface {
	*T
	metav1.Object
}](in []PT) []PT {
	out := make([]PT, 0, len(in))
	for _, o := range in {
		if o != nil {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		ka, kb := a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName()
		if ka != kb {
			return ka < kb
		}
		if a.GetUID() != b.GetUID() {
			return a.GetUID() < b.GetUID()
		}
		return a.GetResourceVersion() < b.GetResourceVersion()
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
