package gather

import (
	"maps"
	"slices"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render/scrape"
)

// Memo is what one Prometheus's gathers carry from one to the next: for every object of
// each selected kind, by identity, whether the selectors took it and which Secrets and
// ConfigMaps it references. An informer's store replaces an object when it changes and
// never changes it in place, so an object seen before is known without being read again,
// and the objects that are not the ones of the last gather are exactly what changed: the
// Delta the render puts into its last order instead of placing every monitor again.
//
// The memo is used only for objects served from the informers' stores; the output of a
// gather is the same without it. Not safe for concurrent use: keep one per Prometheus.
type Memo struct {
	seq uint64 // counts gathers, across resets: a Delta never names a gather twice
	// base is the gather whose selection the memo holds, when every monitor kind of it
	// came from the stores; 0: none.
	base uint64
	// owner is the Prometheus (UID and generation) the selections known were made with.
	owner          string
	serviceMonitor kindMemo[*monitoringv1.ServiceMonitor]
	podMonitor     kindMemo[*monitoringv1.PodMonitor]
	probe          kindMemo[*monitoringv1.Probe]
	scrapeConfig   kindMemo[*monitoringv1alpha1.ScrapeConfig]
	rule           kindMemo[*monitoringv1.PrometheusRule]
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo {
	return &Memo{
		serviceMonitor: kindMemo[*monitoringv1.ServiceMonitor]{references: referencesOf[*monitoringv1.ServiceMonitor]},
		podMonitor:     kindMemo[*monitoringv1.PodMonitor]{references: referencesOf[*monitoringv1.PodMonitor]},
		probe:          kindMemo[*monitoringv1.Probe]{references: referencesOf[*monitoringv1.Probe]},
		scrapeConfig:   kindMemo[*monitoringv1alpha1.ScrapeConfig]{references: referencesOf[*monitoringv1alpha1.ScrapeConfig]},
	}
}

// reset forgets every object: the next gather reads them all, and its Delta leads from
// nothing.
func (m *Memo) reset() {
	m.owner, m.base = "", 0
	m.serviceMonitor.reset()
	m.podMonitor.reset()
	m.probe.reset()
	m.scrapeConfig.reset()
	m.rule.reset()
}

// kindMemo is the memo of one kind.
type kindMemo[PT comparable] struct {
	known map[PT]known
	// used: the last gather walked the kind's store with this memo.
	used bool
	// references lists what an object of the kind references; nil: nothing.
	references func(PT) []string
	// refs counts, for each Secret ("S/<ns>/<name>") and ConfigMap ("C/…") key, the
	// objects selected by the last gather that reference it; refsOf is what each
	// referencing object references. Only monitors reference anything.
	refs   map[string]int
	refsOf map[PT][]string
	// gone and came are what the last gather changed in the selection.
	gone, came []PT
}

// known is one object seen by the last gather.
type known struct {
	selected bool   // the selectors took it
	seen     uint64 // the gather that saw it last
}

func (k *kindMemo[PT]) reset() {
	clear(k.known)
	clear(k.refs)
	clear(k.refsOf)
	k.forgetChanges()
	k.used = false
}

// update records one gather's walk of the objects of the kind (objs), in which the
// selection of each is given by selects. An object seen before keeps its selection when
// keep is set (the selectors, and all they depend on, are those of the last gather).
// It returns the objects selected.
func (k *kindMemo[PT]) update(seq uint64, objs []PT, keep bool, selects func(PT) bool) []PT {
	k.used = true
	if k.known == nil {
		k.known = make(map[PT]known, len(objs))
	}
	k.forgetChanges()
	out := make([]PT, 0, len(objs))
	distinct := 0
	for _, o := range objs {
		was, ok := k.known[o]
		if ok && was.seen == seq {
			continue // given twice
		}
		distinct++
		now := was.selected
		if !ok || !keep {
			now = selects(o)
		}
		switch {
		case now && !was.selected:
			k.came = append(k.came, o)
		case !now && was.selected:
			k.gone = append(k.gone, o)
		}
		k.known[o] = known{selected: now, seen: seq}
		if now {
			out = append(out, o)
		}
	}
	if len(k.known) > distinct {
		// Objects the last gather saw and this one did not: deleted, or replaced by a
		// newer version of themselves.
		for o, was := range k.known {
			if was.seen != seq {
				if was.selected {
					k.gone = append(k.gone, o)
				}
				delete(k.known, o)
			}
		}
	}
	if k.references != nil {
		k.count()
	}
	return out
}

// count brings the reference counts up to the last update: the objects that came add
// theirs, the ones gone take theirs away.
func (k *kindMemo[PT]) count() {
	if k.refs == nil {
		k.refs, k.refsOf = map[string]int{}, map[PT][]string{}
	}
	for _, o := range k.gone {
		for _, key := range k.refsOf[o] {
			if k.refs[key]--; k.refs[key] <= 0 {
				delete(k.refs, key)
			}
		}
		delete(k.refsOf, o)
	}
	for _, o := range k.came {
		keys := k.references(o)
		if len(keys) == 0 {
			continue
		}
		k.refsOf[o] = keys
		for _, key := range keys {
			k.refs[key]++
		}
	}
}

// referencesOf lists what the monitor references, as "S/<ns>/<name>" and "C/<ns>/<name>".
func referencesOf[PT metav1.Object](o PT) []string {
	var in scrape.Input
	switch o := any(o).(type) {
	case *monitoringv1.ServiceMonitor:
		in.ServiceMonitors = []*monitoringv1.ServiceMonitor{o}
	case *monitoringv1.PodMonitor:
		in.PodMonitors = []*monitoringv1.PodMonitor{o}
	case *monitoringv1.Probe:
		in.Probes = []*monitoringv1.Probe{o}
	case *monitoringv1alpha1.ScrapeConfig:
		in.ScrapeConfigs = []*monitoringv1alpha1.ScrapeConfig{o}
	}
	secrets, configMaps := scrape.References(in)
	keys := make([]string, 0, len(secrets)+len(configMaps))
	for _, s := range secrets {
		keys = append(keys, "S/"+s)
	}
	for _, c := range configMaps {
		keys = append(keys, "C/"+c)
	}
	return keys
}

// referenced is every key the selected monitors reference, split into Secrets and
// ConfigMaps ("<ns>/<name>"), sorted.
func (m *Memo) referenced() (secrets, configMaps []string) {
	all := map[string]struct{}{}
	for _, refs := range []map[string]int{m.serviceMonitor.refs, m.podMonitor.refs, m.probe.refs, m.scrapeConfig.refs} {
		for key := range refs {
			all[key] = struct{}{}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(all)) {
		if key[0] == 'S' {
			secrets = append(secrets, key[2:])
		} else {
			configMaps = append(configMaps, key[2:])
		}
	}
	return secrets, configMaps
}

// monitorsKnown: every monitor kind of this gather came from the stores.
func (m *Memo) monitorsKnown() bool {
	return m.serviceMonitor.used && m.podMonitor.used && m.probe.used && m.scrapeConfig.used
}

// delta is what this gather changed among the monitors, from the memo's base.
func (m *Memo) delta() *scrape.Delta {
	d := &scrape.Delta{From: m.base, To: m.seq}
	add := func(gone, came []metav1.Object) { d.Gone, d.Came = append(d.Gone, gone...), append(d.Came, came...) }
	add(objects(m.serviceMonitor.gone), objects(m.serviceMonitor.came))
	add(objects(m.podMonitor.gone), objects(m.podMonitor.came))
	add(objects(m.probe.gone), objects(m.probe.came))
	add(objects(m.scrapeConfig.gone), objects(m.scrapeConfig.came))
	m.forgetChanges()
	return d
}

// forgetChanges empties the lists of what the last gather changed, keeping their arrays:
// the objects gone are often an informer's replaced versions, which the memo must not keep
// alive until the next gather (after a start, every monitor's).
func (m *Memo) forgetChanges() {
	m.serviceMonitor.forgetChanges()
	m.podMonitor.forgetChanges()
	m.probe.forgetChanges()
	m.scrapeConfig.forgetChanges()
	m.rule.forgetChanges()
}

func (k *kindMemo[PT]) forgetChanges() {
	clear(k.gone)
	clear(k.came)
	k.gone, k.came = k.gone[:0], k.came[:0]
}

func objects[PT metav1.Object](objs []PT) []metav1.Object {
	out := make([]metav1.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}
