package scrape

// The monitors in the order their jobs are written (the existing operator's: by kind, then by
// namespace/name), made anew or patched from the last render's order with a Delta.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
