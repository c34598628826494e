package scrape

// Building a monitor's jobs (in parallel on a start), checking them with Prometheus's own config
// loader in batches, and assembling the checked pieces into one prometheus.yaml.

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"runtime"
	"sort"
	"sync"

	"github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/types"
)

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
