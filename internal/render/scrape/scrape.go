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
	"errors"
	"fmt"
	"slices"
	"sort"
	"unsafe"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// a YAML list of scrape configs. Its jobs are written after all generated ones as given,
	// except that with several shards a job without a hashmod relabeling of its own gets the
	// sharding rules (neither the enforced namespace label nor limits are added; $(SHARD) is
	// substituted in them too). Kubernetes discovery they use is not in
	// Result.Namespaces. When they do not parse or Prometheus refuses them, Generate returns an
	// *AdditionalConfigError.
	AdditionalScrapeConfigs []byte
	// AdditionalAlertManagerConfigs and AdditionalAlertRelabelConfigs are the contents of the
	// Secret keys spec.additionalAlertManagerConfigs and spec.additionalAlertRelabelConfigs name,
	// read by the caller: YAML lists of alertmanager configs and of relabel configs, appended as
	// given to alerting.alertmanagers and alerting.alert_relabel_configs. When they do not parse
	// or Prometheus refuses them, Generate returns an *AlertingError.
	AdditionalAlertManagerConfigs []byte
	AdditionalAlertRelabelConfigs []byte
	// NodeLocal makes every PodMonitor discover only the pods of the node the server runs on
	// (a PrometheusAgent in DaemonSet mode): a field selector on $(NODE_NAME), which the
	// reloader substitutes in each pod.
	NodeLocal bool
	// Cache, when given, carries work over from the previous Generate for the same Prometheus;
	// see Cache. The output is the same without it.
	Cache *Cache
	// MoreVerdicts is how many verdicts the caller appends to Result.Verdicts (the rules'):
	// room for them is made up front, so that thousands are not copied to append a few.
	MoreVerdicts int
	// Delta, when given, says how the monitors differ from those of an earlier Input (see
	// Delta). The output is the same without it.
	Delta *Delta
}

// Delta is how the monitors of an Input differ from those of an earlier one, by object
// identity: every monitor of the earlier Input that is not in Gone is in this one as the
// same object (the same pointer, unchanged), and Came are the monitors of this one that
// were not in the earlier. An informer's store replaces an object when it changes, so a
// caller that keeps the objects it selected can tell this without reading them.
//
// From and To number the earlier Input and this one, as the caller counts them (0: none).
// A render whose Cache's last complete render was given the Input numbered From takes
// that render's order and puts the few changes into it, instead of placing thousands of
// monitors again; any other render ignores the Delta.
type Delta struct {
	From, To   uint64
	Gone, Came []metav1.Object
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
	// UID is the object's: a verdict names one object, not whatever has its name now
	// (the bindings writer compares verdicts to know what it already wrote).
	UID types.UID
}

// Result is the rendered prometheus.yaml plus what the caller needs to report and to grant.
type Result struct {
	// Head is the part of the config before scrape_configs (global, rule_files); Groups are the
	// items of scrape_configs, one per accepted monitor with jobs plus the additional scrape
	// configs, in the config's order; Tail is what follows scrape_configs (alerting, remote_write,
	// remote_read), empty when nothing does. Config() puts them together.
	//
	// With a Cache, Groups is an array of the Cache's that the next Generate with it reuses:
	// Groups, and Config, are valid until then (a change among thousands of monitors would
	// otherwise allocate the list anew each time).
	Head   []byte
	Groups []Group
	Tail   []byte
	// Size is the length of Config().
	Size int
	// Exactly one per input monitor, sorted by kind (ServiceMonitor, PodMonitor, Probe,
	// ScrapeConfig), then by namespace/name. Made anew by every Generate and never changed
	// once returned: a caller may keep it.
	Verdicts []Verdict
	// Namespaces Prometheus must run Kubernetes discovery in (sorted, unique), for RBAC: those of
	// accepted ServiceMonitors (endpoints or endpointslice role), PodMonitors (pod role), Probes
	// with ingress targets (ingress role) and ScrapeConfigs' kubernetesSDConfigs without an
	// apiServer (their namespaces.names, and the Prometheus's own namespace with ownNamespace),
	// and those spec.alerting discovers alertmanagers in. AllNamespaces is true when some accepted monitor uses namespaceSelector.any, or a
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
// additional scrape configs give an *AdditionalConfigError, an alerting section that cannot
// be rendered an *AlertingError, and remote write or read that cannot a *RemoteError, returned
// as they are.
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
		if ae, ok := err.(*AlertingError); ok {
			return nil, ae
		}
		if re, ok := err.(*RemoteError); ok {
			return nil, re
		}
		return nil, fmt.Errorf("render scrape config for Prometheus %s: %w", key, err)
	}
	return res, nil
}

func generate(in Input) (*Result, error) {
	g, err := newGenerator(in)
	if err != nil {
		return nil, err
	}
	// A shard kept after a scale-down (shardRetentionPolicy.whenScaled: Retain) loads this
	// config too, with a shard number the hash never yields: with the sharding rules, even
	// for one shard, it scrapes none of the additional jobs' targets either.
	extra, aerr := additionalJobs(in.AdditionalScrapeConfigs, g.shards, g.shards > 1 || g.retainsShards())
	if aerr != nil {
		return nil, aerr
	}
	cache := in.Cache
	if cache == nil {
		cache = NewCache()
	}
	if cache.entries == nil {
		cache.entries = map[types.UID]*cacheEntry{}
	}
	// The last complete render's order, which a Delta from its input leads from. Only a
	// render that completes leaves one, and only under the same generator: its entries
	// are the ones the order carries.
	order, lastOrder := cache.order, cache.order
	if in.Delta == nil || in.Delta.From == 0 || in.Delta.From != cache.input {
		order = nil
	}
	cache.order, cache.input = nil, 0
	if key, ok := generatorKey(g); !ok || key != cache.generator {
		cache.generator, cache.additional, cache.alerting, cache.remote = key, [32]byte{}, [32]byte{}, [32]byte{}
		clear(cache.entries)
		order = nil
	}
	cache.Hits, cache.Misses, cache.Patched = 0, 0, false
	cache.epoch++
	tail, alertingNamespaces, alertErr := g.alerting(in, cache)
	if alertErr != nil {
		return nil, alertErr
	}
	remote, remoteErr := g.remote(cache)
	if remoteErr != nil {
		return nil, remoteErr
	}
	tail = append(tail, remote...)

	monitors := g.monitors(in, cache, order)
	cache.monitors = len(monitors)
	res := &Result{Verdicts: make([]Verdict, 0, len(monitors)+in.MoreVerdicts), Groups: slices.Grow(cache.scratch.groups[:0], len(monitors)+1), Head: g.globalYAML, Tail: tail}
	defer func() { cache.scratch.groups = res.Groups[:0] }()
	chosen := cache.scratch.chosen[:0] // by verdict; nil for duplicates
	defer func() {
		cache.scratch.chosen = chosen // the array it grew into, if it did
		cache.scratch.release()
	}()
	var misses []miss
	used := 0

	for i, m := range monitors {
		if e := m.cached; cache.Patched && e != nil && !m.came && (i == 0 || !monitors[i-1].came) && e.refsCurrent(g) {
			// The same object as in the last render, which took e for it, after the same
			// monitor as there or one that went: not a duplicate (the one before it in that
			// order had another name, and anything between went or is of the name too, which
			// would have made this one a duplicate there), and e serves it if what it read
			// is as it was. Its verdict is e's, without reading the object.
			res.Verdicts = append(res.Verdicts, Verdict{Kind: e.kind, Namespace: e.ns, Name: e.name, Generation: e.generation, UID: e.uid})
			cache.Hits++
			e.epoch, e.at = cache.epoch, i
			used++
			chosen = append(chosen, e)
			continue
		}
		ns, name := m.obj.GetNamespace(), m.obj.GetName()
		res.Verdicts = append(res.Verdicts, Verdict{Kind: m.kind(), Namespace: ns, Name: name, Generation: m.obj.GetGeneration(), UID: m.obj.GetUID()})
		// Each kind is sorted by namespace/name: the same object given twice comes twice in a row.
		if prev := monitors[max(i-1, 0)]; i > 0 && prev.rank == m.rank && prev.obj.GetNamespace() == ns && prev.obj.GetName() == name {
			v := &res.Verdicts[len(res.Verdicts)-1]
			v.Reason = ReasonDuplicate
			v.Message = fmt.Sprintf("%s %s/%s was given more than once; only the first is used", m.kind(), ns, name)
			chosen = append(chosen, nil)
			continue
		}

		uid, generation := m.obj.GetUID(), m.obj.GetGeneration()
		e := m.cached
		if e == nil {
			e = cache.entries[uid]
		}
		if e != nil && uid != "" && e.kind == m.kind() && e.ns == ns && e.name == name && e.usable(uid, generation, g) {
			cache.Hits++
			e.epoch, e.at = cache.epoch, i
			// The object's own strings from now on: an informer replaces an object on every
			// update (a status write too), and comparing the same string data is a pointer
			// comparison where different copies are a memory comparison. Assigning to the
			// map stores the new key's string too (Go's maps update a string key on
			// assignment): only a performance matter, if that ever changed.
			if unsafe.StringData(string(e.uid)) != unsafe.StringData(string(uid)) {
				cache.entries[uid] = e
			}
			e.uid, e.ns, e.name = uid, ns, name
			used++
			chosen = append(chosen, e)
			continue
		}
		cache.Misses++
		misses = append(misses, miss{at: len(chosen), monitor: m})
		chosen = append(chosen, nil) // built below
	}
	if err := g.buildAll(misses); err != nil {
		return nil, err
	}
	for _, ms := range misses {
		e := ms.entry
		if e.cacheable {
			e.epoch, e.at = cache.epoch, ms.at
			cache.entries[e.uid] = e
			used++
		}
		chosen[ms.at] = e
	}

	// Forget the monitors this render did not use.
	if len(cache.entries) > used {
		for uid, e := range cache.entries {
			if e.epoch != cache.epoch {
				delete(cache.entries, uid)
			}
		}
	}

	namespaces := map[string]struct{}{}
	lastNamespace := ""
	var names map[string]struct{}
	if extra != nil {
		names = map[string]struct{}{}
	}
	size := len(g.globalYAML) + len(scrapeConfigsKey) + len(tail)
	for i, e := range chosen {
		if e == nil {
			continue
		}
		v := &res.Verdicts[i]
		if e.rej != nil {
			v.Reason, v.Message = e.rej.reason, e.rej.message
			continue
		}
		v.Accepted = true
		size += e.size
		if e.size > 0 {
			res.Groups = append(res.Groups, Group{Key: e.key, Packed: e.packed, Size: e.size, CRC: e.crc, KeyHash: e.keyHash})
		}
		if e.discovery.all {
			res.AllNamespaces = true
		}
		if e.discovery.nodes {
			res.DiscoverNodes = true
		}
		for _, ns := range e.discovery.namespaces {
			if ns != lastNamespace { // monitors come sorted by namespace
				namespaces[ns] = struct{}{}
				lastNamespace = ns
			}
		}
		for _, n := range e.jobNames {
			if names != nil {
				names[n] = struct{}{}
			}
		}
	}
	if extra != nil {
		if err := g.checkAdditional(cache, extra, names); err != nil {
			return nil, err
		}
		res.Groups = append(res.Groups, Group{Key: AdditionalGroupKey, YAML: extra.shipped, Size: len(extra.shipped)})
		size += len(extra.shipped)
	}
	for _, ns := range alertingNamespaces {
		namespaces[ns] = struct{}{}
	}
	res.Namespaces = sortedKeys(namespaces)
	res.Size = size
	if len(res.Groups) == 0 {
		res.Size += len(emptyScrapeConfigs) - len(scrapeConfigsKey)
	}
	cache.ordered = cache.epoch // every entry left is at its place in this render's order
	if in.Delta != nil && in.Delta.To != 0 {
		// This order, each monitor with the entry it took, is where the next Delta leads
		// from. The scratch takes the last order's array.
		for i := range monitors {
			monitors[i].cached, monitors[i].came = nil, false
			if e := chosen[i]; e != nil && e.cacheable {
				monitors[i].cached = e
			}
		}
		clear(lastOrder)
		cache.order, cache.input, cache.scratch.out = monitors, in.Delta.To, lastOrder[:0]
	}
	return res, nil
}

// Config is the whole prometheus.yaml, deterministic: same input → same bytes. It is assembled
// on each call; a caller that only ships pieces of it never pays for the copy.
func (r *Result) Config() []byte { return append(assemble(r.Head, r.Groups, r.Size), r.Tail...) }

// AdditionalGroupKey is the Group of the additional scrape configs.
const AdditionalGroupKey = "additionalScrapeConfigs"

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// retainsShards says whether shards removed by a scale-down keep running
// (shardRetentionPolicy.whenScaled: Retain), with this config and a shard number the
// current count never yields.
func (g *generator) retainsShards() bool {
	pol := g.prom.Spec.ShardRetentionPolicy
	return pol != nil && pol.WhenScaled != nil && *pol.WhenScaled == monitoringv1.RetainWhenScaledRetentionType
}
