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
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v2"
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

// monitor is one input object of any kind, in the order its jobs are written. It is kept
// small: a render of thousands of monitors sorts and copies the list.
type monitor struct {
	obj    metav1.Object
	cached *cacheEntry // the cache's entry for its UID, when sortMonitors found one
	rank   kindRank
	// came: put in by patchOrder, where every other monitor is the same object as in the
	// last complete render, with the entry it took there as cached.
	came bool
}

// kindRank is a monitor kind's place in the config: ServiceMonitors' jobs first, then
// PodMonitors', Probes' and ScrapeConfigs'.
type kindRank uint8

const (
	serviceMonitorRank kindRank = iota
	podMonitorRank
	probeRank
	scrapeConfigRank
)

var rankKinds = [...]string{serviceMonitorKind, podMonitorKind, probeKind, scrapeConfigKind}

// kind is the monitor's kind, as verdicts name it.
func (m monitor) kind() string { return rankKinds[m.rank] }

// endpoints is the field listing the monitor's endpoints (see candidate.endpoints), for
// the kinds that have one.
func (m monitor) endpoints() string {
	switch m.rank {
	case serviceMonitorRank:
		return "endpoints"
	case podMonitorRank:
		return "podMetricsEndpoints"
	}
	return ""
}

// jobs builds m's jobs with g. It is a method of the generator and not of the monitor: the
// workers of a start each build with a copy of the generator, which records what its
// monitors read.
func (g *generator) jobs(m monitor) ([]*scrapeJob, discovery, *rejection) {
	switch o := m.obj.(type) {
	case *monitoringv1.ServiceMonitor:
		return g.serviceMonitorJobs(o)
	case *monitoringv1.PodMonitor:
		return g.podMonitorJobs(o)
	case *monitoringv1.Probe:
		return g.probeJobs(o)
	case *monitoringv1alpha1.ScrapeConfig:
		return g.scrapeConfigJobs(o)
	}
	panic(fmt.Sprintf("no jobs for a %T", m.obj)) // monitors makes only the kinds above
}

// A Delta is put into the last order when it changes at most 1/patchMaxShare of its
// monitors, or patchMin: each change costs two binary searches, and a relist, which
// replaces every object, is placed faster as a new order.
const patchMaxShare, patchMin = 4, 16

// monitors lists the input in the existing operator's order: ServiceMonitors, PodMonitors,
// Probes, then ScrapeConfigs, each kind sorted by namespace/name (see sortMonitors). The list
// is the cache's scratch: valid until the next render with the same cache (a nil cache is an
// empty one).
//
// order, when not nil, is the last complete render's order, which in.Delta leads from: the
// list is then that order with the Delta's changes put in (see patchOrder).
func (g *generator) monitors(in Input, cache *Cache, order []monitor) []monitor {
	if cache == nil {
		cache = &Cache{}
	}
	if order != nil && in.Delta != nil && len(in.Delta.Gone)+len(in.Delta.Came) <= max(len(order)/patchMaxShare, patchMin) {
		if out, ok := patchOrder(order, in.Delta, &cache.scratch); ok {
			cache.Patched = true
			return out
		}
	}
	all := appendMonitors(cache.scratch.in[:0], in.ServiceMonitors, serviceMonitorRank)
	all = appendMonitors(all, in.PodMonitors, podMonitorRank)
	all = appendMonitors(all, in.Probes, probeRank)
	all = appendMonitors(all, in.ScrapeConfigs, scrapeConfigRank)
	cache.scratch.in = all
	return sortMonitors(all, cache)
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

// miss is a monitor the cache could not answer for: built by buildAll into entry, which
// goes to chosen[at].
type miss struct {
	at      int
	monitor monitor
	entry   *cacheEntry
}

// parallelBuildMin is the number of monitors to build below which one goroutine does it
// all: a change builds one, a start thousands.
const parallelBuildMin = 64

// buildAll builds and checks the misses. Each monitor's entry depends on that monitor and
// the generator alone, so on a start (every monitor a miss) the work is split into one
// contiguous share per core, each built by a copy of the generator with the loader's
// checks batched within the share. The result is the same whatever the split.
func (g *generator) buildAll(misses []miss) error {
	workers := min(runtime.GOMAXPROCS(0), len(misses)/parallelBuildMin)
	if workers <= 1 {
		return g.buildShare(misses)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		share := misses[w*len(misses)/workers : (w+1)*len(misses)/workers]
		own := *g // its own reads; everything else is only read
		wg.Go(func() { errs[w] = own.buildShare(share) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// buildShare builds the monitors of misses one after the other and checks their jobs with
// Prometheus's loader.
//
// Every monitor's jobs must pass the loader on their own. A job's validity depends only on
// itself and the global section (and on job names being unique, which they are by
// construction: kind, namespace and name are in every name and duplicates are refused
// before), so monitors are loaded in batches, and only a batch that fails is loaded
// monitor by monitor to find whose fault it is. A batch is checked as soon as it is full,
// so that the jobs built for it are garbage before the next are built.
func (g *generator) buildShare(misses []miss) error {
	var pending []*candidate
	pendingBytes := 0
	for i := range misses {
		ms := &misses[i]
		m := ms.monitor
		ns, name := m.obj.GetNamespace(), m.obj.GetName()
		e, c, err := g.build(m, m.obj.GetUID(), m.obj.GetGeneration())
		if err != nil {
			return err
		}
		e.kind, e.ns, e.name, e.key = m.kind(), ns, name, m.kind()+"/"+ns+"/"+name
		e.keyHash = HashKey(e.key)
		ms.entry = e
		if c != nil {
			pending = append(pending, c)
			pendingBytes += len(e.fragment)
		}
		if pendingBytes >= checkBatchBytes {
			g.check(pending)
			pending, pendingBytes = pending[:0], 0
		}
	}
	g.check(pending)
	return nil
}

// candidate is a monitor whose jobs were built and now wait for the loader's word.
type candidate struct {
	entry     *cacheEntry
	endpoints string // the field listing the monitor's endpoints, one job each; "" for one job per monitor
	jobs      []*scrapeJob
}

// build renders one monitor. The entry it returns carries the rejection, or the jobs still to be
// checked by the loader through the candidate.
func (g *generator) build(m monitor, uid types.UID, generation int64) (*cacheEntry, *candidate, error) {
	var reads []string
	g.reads = &reads
	jobs, disc, rej := g.jobs(m)
	g.reads = nil

	e := &cacheEntry{uid: uid, generation: generation, rej: rej, cacheable: uid != "" && generation != 0}
	sort.Strings(reads)
	for i, k := range reads {
		if i > 0 && reads[i-1] == k {
			continue
		}
		v, ok := g.refVersion(k)
		if !ok {
			e.cacheable = false
		}
		e.refs = append(e.refs, refVersion{key: k, version: v})
	}
	if rej != nil {
		return e, nil, nil
	}
	fragment, err := marshalJobs(jobs)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal jobs of %s %s/%s: %w", m.kind(), m.obj.GetNamespace(), m.obj.GetName(), err)
	}
	e.fragment, e.discovery = fragment, disc
	e.jobNames = make([]string, len(jobs))
	for i, j := range jobs {
		e.jobNames[i] = j.JobName
	}
	return e, &candidate{entry: e, endpoints: m.endpoints(), jobs: jobs}, nil
}

// checkBatchBytes bounds the YAML loaded at once: big enough that the loader's fixed cost is
// spread, small enough that the parsed batch (compiled regexes and all) stays a few MiB.
const checkBatchBytes = 256 << 10

// check loads the candidates' jobs under the global section, in batches, and rejects those the
// loader refuses.
func (g *generator) check(pending []*candidate) {
	defer func(all []*candidate) {
		for _, c := range all {
			c.jobs = nil // built for the loader's word only
			// Kept for as long as the monitor is selected: packed.
			if e := c.entry; e.rej == nil {
				e.size, e.packed, e.crc = len(e.fragment), pack(e.fragment), crc32.ChecksumIEEE(e.fragment)
			}
			c.entry.fragment = nil
		}
	}(pending)
	for len(pending) > 0 {
		n, size := 0, 0
		for n < len(pending) && (n == 0 || size+len(pending[n].entry.fragment) <= checkBatchBytes) {
			size += len(pending[n].entry.fragment)
			n++
		}
		batch := pending[:n]
		pending = pending[n:]
		doc := make([]byte, 0, len(g.globalYAML)+len(scrapeConfigsKey)+size)
		doc = append(append(doc, g.globalYAML...), scrapeConfigsKey...)
		for _, c := range batch {
			doc = append(doc, c.entry.fragment...)
		}
		if _, err := config.Load(string(doc), discardLogger); err == nil {
			continue
		}
		for _, c := range batch {
			if rej := g.loadJobs(c); rej != nil {
				c.entry.rej = rej
				c.entry.fragment, c.entry.jobNames, c.entry.discovery = nil, nil, discovery{}
			}
		}
	}
}

// checkAdditional loads the additional scrape configs under the global section (once per
// content while the generator stays the same) and refuses a job name a generated job has.
func (g *generator) checkAdditional(cache *Cache, extra *additional, generated map[string]struct{}) *AdditionalConfigError {
	sum := sha256.Sum256(extra.check)
	if sum != cache.additional {
		if err := g.load(extra.check); err != nil {
			return g.refused(extra, err)
		}
		cache.additional = sum
	}
	for _, j := range extra.jobs {
		if _, ok := generated[j.name]; ok {
			return additionalError("Prometheus refuses the configuration with them: found multiple scrape configs with job name %q", j.name)
		}
	}
	return nil
}

var discardLogger = slog.New(slog.DiscardHandler)

const (
	scrapeConfigsKey   = "scrape_configs:\n"
	emptyScrapeConfigs = "scrape_configs: []\n"
)

// marshalJobs renders jobs as the items of a top-level YAML sequence. Marshalling each
// monitor once and concatenating the pieces gives the same bytes as marshalling the whole
// list, at half the cost of doing both. The emitter of emit.go writes yaml.v2's bytes itself;
// the jobs it leaves to yaml.v2 (a string that is not UTF-8, say) are marshalled by it as before.
func marshalJobs(jobs []*scrapeJob) ([]byte, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	if out, ok := emitJobs(jobs); ok {
		return out, nil
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

// assemble writes the whole prometheus.yaml: the global section, then every group's jobs.
func assemble(head []byte, groups []Group, size int) []byte {
	out := make([]byte, 0, size)
	out = append(out, head...)
	if len(groups) == 0 {
		return append(out, emptyScrapeConfigs...)
	}
	out = append(out, scrapeConfigsKey...)
	for _, gr := range groups {
		out = gr.AppendTo(out)
	}
	return out
}

// loadJobs loads one monitor's jobs under the same global section. When it fails, the
// message names the endpoint whose job fails alone.
func (g *generator) loadJobs(c *candidate) *rejection {
	err := g.load(c.entry.fragment)
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

// appendMonitors appends the non-nil objects of one kind to all.
func appendMonitors[PT interface {
	comparable
	metav1.Object
}](all []monitor, objs []PT, rank kindRank) []monitor {
	var none PT
	for _, o := range objs {
		if o != none {
			all = append(all, monitor{obj: o, rank: rank})
		}
	}
	return all
}

// sortMonitors orders monitors by kind (rank), then by "namespace/name", the order the
// existing operator writes jobs in. Ties (the same object given twice) are broken by UID and
// resourceVersion so that the one kept does not depend on the input order.
//
// A monitor the last completed render placed (its cache entry is from that render and names
// the same kind, namespace and name) goes back to its place in that render's order, with the
// entry: the render then needs no second lookup, and these monitors are in order without
// being compared. Only the others (new, renamed, or the cache lost track) are sorted, and
// each is inserted where a binary search puts it: a change among thousands of monitors costs
// one pass and a few comparisons instead of n·log n comparisons of names. The lists it works
// in and the one it returns are the cache's scratch, which every render reuses instead of
// allocating a few hundred kilobytes per thousand monitors.
func sortMonitors(in []monitor, c *Cache) []monitor {
	s := &c.scratch
	var last []monitor // by position in the last completed render's order
	if len(c.entries) > 0 {
		last = slices.Grow(s.last[:0], c.monitors)[:c.monitors]
		clear(last)
	}
	others := s.others[:0]
	for _, m := range in {
		if last != nil {
			if e := c.entries[m.obj.GetUID()]; e != nil && e.epoch == c.ordered && e.at < len(last) && last[e.at].obj == nil &&
				e.kind == m.kind() && e.ns == m.obj.GetNamespace() && e.name == m.obj.GetName() {
				m.cached = e
				last[e.at] = m
				continue
			}
		}
		others = append(others, m)
	}
	known := last[:0] // the placed ones, compacted in place: in order
	for _, m := range last {
		if m.obj != nil {
			known = append(known, m)
		}
	}
	slices.SortFunc(others, compareMonitors)
	out := mergeMonitors(s.out[:0], known, others)
	s.last, s.others, s.out = last, others, out
	return out
}

// mergeMonitors appends to out the monitors of known and others, both in order, in order:
// each of others goes where a binary search in what is left of known puts it.
func mergeMonitors(out, known, others []monitor) []monitor {
	for _, m := range others {
		at, _ := slices.BinarySearchFunc(known, m, compareMonitors)
		out = append(append(out, known[:at]...), m)
		known = known[at:]
	}
	return append(out, known...)
}

// patchOrder is order (the last complete render's monitors, in order) with d's changes: the
// monitors gone taken out, found by a binary search each and checked to be the same object,
// and those that came put in by another. Nothing else is read: a change among thousands of
// monitors touches the few that changed. It reports false when a monitor gone is not in
// order, or one that came is of no monitor kind, and the caller sorts as usual. The lists
// are the scratch's.
func patchOrder(order []monitor, d *Delta, s *scratch) ([]monitor, bool) {
	gone, ok := deltaMonitors(s.last[:0], d.Gone)
	s.last = gone
	if !ok {
		return nil, false
	}
	came, ok := deltaMonitors(s.others[:0], d.Came)
	s.others = came
	if !ok {
		return nil, false
	}
	slices.SortFunc(gone, compareMonitors)
	slices.SortFunc(came, compareMonitors)
	kept := s.in[:0]
	from := 0
	for _, m := range gone {
		at, found := slices.BinarySearchFunc(order[from:], m, compareMonitors)
		at += from
		if !found || order[at].obj != m.obj {
			s.in = kept
			return nil, false
		}
		kept = append(kept, order[from:at]...)
		from = at + 1
	}
	kept = append(kept, order[from:]...)
	s.in = kept
	s.out = mergeMonitors(s.out[:0], kept, came)
	return s.out, true
}

// deltaMonitors appends objs to out as monitors; false when one is of no monitor kind.
func deltaMonitors(out []monitor, objs []metav1.Object) ([]monitor, bool) {
	for _, o := range objs {
		var rank kindRank
		switch o.(type) {
		case *monitoringv1.ServiceMonitor:
			rank = serviceMonitorRank
		case *monitoringv1.PodMonitor:
			rank = podMonitorRank
		case *monitoringv1.Probe:
			rank = probeRank
		case *monitoringv1alpha1.ScrapeConfig:
			rank = scrapeConfigRank
		default:
			return out, false
		}
		out = append(out, monitor{obj: o, rank: rank, came: true})
	}
	return out, true
}

// compareMonitors orders by kind, namespace/name, then UID and resourceVersion: ties are
// broken completely, so there is one order.
func compareMonitors(a, b monitor) int {
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c
	}
	if c := compareKeys(a.obj.GetNamespace(), a.obj.GetName(), b.obj.GetNamespace(), b.obj.GetName()); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.obj.GetUID()), string(b.obj.GetUID())); c != 0 {
		return c
	}
	return strings.Compare(a.obj.GetResourceVersion(), b.obj.GetResourceVersion())
}

// compareKeys compares "nsA/nameA" with "nsB/nameB" as strings, without
// building them.
func compareKeys(nsA, nameA, nsB, nameB string) int {
	if nsA == nsB {
		return strings.Compare(nameA, nameB)
	}
	// The namespaces differ; where one is a prefix of the other, the
	// shorter continues with '/'.
	n := min(len(nsA), len(nsB))
	if nsA[:n] != nsB[:n] {
		return strings.Compare(nsA[:n], nsB[:n])
	}
	var c int
	if len(nsA) == n {
		c = cmp.Compare(byte('/'), nsB[n])
	} else {
		c = cmp.Compare(nsA[n], byte('/'))
	}
	if c != 0 {
		return c
	}
	// A '/' in a namespace (never in Kubernetes, possible in files): compare
	// the strings themselves.
	return strings.Compare(nsA+"/"+nameA, nsB+"/"+nameB)
}

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
