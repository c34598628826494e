package scrape

import (
	"crypto/sha256"
	"encoding/json"

	"k8s.io/apimachinery/pkg/types"
)

// Cache remembers, between renders of one Prometheus, what each monitor rendered to: its jobs
// as YAML, whether Prometheus's loader accepted them, and what it discovers. A render that is
// given the Cache of the previous one builds and loads only the monitors that changed, so a
// change among thousands of monitors costs about as much as a config with one monitor. Given a
// Delta from the input of its last complete render as well, a render also takes that render's
// order and, for every monitor that is the same object as there, its entry and verdict, without
// reading the object.
//
// The output never depends on the Cache: the same Input gives the same bytes with a fresh Cache,
// a warm one, or none. An entry is used only when all of these are as they were when it was made:
//   - the monitor's UID and metadata.generation (the API server bumps the generation on every
//     spec change; the jobs depend on the spec, the namespace and the name only);
//   - the resourceVersion of every Secret and ConfigMap the monitor read, or their absence;
//   - the generator: the Prometheus (namespace, name, spec) and the global section, which every
//     job is loaded under. Any change there empties the Cache.
//
// Objects without a UID, a generation or (for what they read) a resourceVersion, as read from
// files by the CLI, are never cached.
//
// A Cache is not safe for concurrent use: keep one per Prometheus (reconciles of one object never
// run concurrently).
type Cache struct {
	generator [sha256.Size]byte
	entries   map[types.UID]*cacheEntry
	epoch     uint64 // counts renders; an entry used by the current one carries it
	ordered   uint64 // the epoch of the last render that completed: its entries' positions are one order
	monitors  int    // how many monitors the last render was given: the positions of its order
	// The additional scrape configs last accepted under this generator, by content.
	additional [sha256.Size]byte
	// The alerting section last accepted under this generator, by content.
	alerting [sha256.Size]byte
	// The remote_write and remote_read sections last accepted under this generator, by content.
	remote [sha256.Size]byte

	// order is the last complete render's monitors in order, each with the entry it took,
	// and input the number its Delta gave that render's input (see Delta); nil and 0 when
	// that render was given none.
	order []monitor
	input uint64

	// scratch is what a render works in and drops once done, kept for the next one.
	scratch scratch

	// Hits and Misses count the monitors of the last Generate call taken from the Cache and
	// rendered; for tests and metrics. Patched says that it took its order from a Delta.
	Hits, Misses int
	Patched      bool
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{entries: map[types.UID]*cacheEntry{}} }

// Len is the number of monitors remembered.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	return len(c.entries)
}

// scratch holds the lists a render of thousands of monitors would otherwise allocate anew
// each time (the monitors, sorted, and the entry chosen for each). A render returns them
// empty, so that they keep no object alive; only the arrays stay.
type scratch struct {
	in, last, others, out []monitor
	chosen                []*cacheEntry
	groups                []Group // the last Result's Groups, which the next one reuses
}

// release empties the lists, keeping the arrays, once a render is done with them.
func (s *scratch) release() {
	for _, l := range []*[]monitor{&s.in, &s.last, &s.others, &s.out} {
		clear(*l)
		*l = (*l)[:0]
	}
	clear(s.chosen)
	s.chosen = s.chosen[:0]
}

type cacheEntry struct {
	uid        types.UID
	generation int64
	refs       []refVersion
	cacheable  bool // false when something it depends on has no version to compare
	// Which monitor it is, and its "<kind>/<namespace>/<name>"; the render that used it last.
	kind, ns, name, key string
	keyHash             uint32 // HashKey(key)
	epoch               uint64
	at                  int // the monitor's position in the order of the render that used it last
	// What the monitor rendered to: either a rejection, or its jobs (fragment, names) and
	// discovery, already accepted by the loader.
	rej       *rejection
	warning   string // accepted: what its jobs leave out for the Prometheus's version
	fragment  []byte // until checked
	packed    []byte // the fragment, packed, once accepted
	size      int    // its unpacked length
	crc       uint32 // its CRC-32
	jobNames  []string
	discovery discovery
}

// refVersion is one Secret or ConfigMap a monitor read: "S/<ns>/<name>" or "C/<ns>/<name>",
// and its resourceVersion ("" when it did not exist).
type refVersion struct {
	key, version string
}

// usable says whether an entry made for an object can serve it now.
func (e *cacheEntry) usable(uid types.UID, generation int64, g *generator) bool {
	return e.uid == uid && e.generation == generation && e.refsCurrent(g)
}

// refsCurrent says whether every Secret and ConfigMap the entry read is as it was.
func (e *cacheEntry) refsCurrent(g *generator) bool {
	for _, r := range e.refs {
		v, ok := g.refVersion(r.key)
		if !ok || v != r.version {
			return false
		}
	}
	return true
}

// refVersion is the current version of a tracked reference, and whether it can be cached.
func (g *generator) refVersion(key string) (string, bool) {
	name := key[2:]
	switch key[0] {
	case 'S':
		s := g.secrets[name]
		if s == nil {
			return "", true
		}
		return s.ResourceVersion, s.ResourceVersion != ""
	default:
		cm := g.configMaps[name]
		if cm == nil {
			return "", true
		}
		return cm.ResourceVersion, cm.ResourceVersion != ""
	}
}

// track records that the monitor being built read a Secret ("S") or ConfigMap ("C").
func (g *generator) track(kind byte, nsName string) {
	if g.reads != nil {
		*g.reads = append(*g.reads, string(kind)+"/"+nsName)
	}
}

// generatorKey identifies everything besides the monitor and what it reads that its jobs and
// their validity depend on.
func generatorKey(g *generator) ([sha256.Size]byte, bool) {
	spec, err := json.Marshal(&g.prom.Spec)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	h := sha256.New()
	h.Write([]byte(g.prom.Namespace + "/" + g.prom.Name + "\x00"))
	h.Write(spec)
	h.Write([]byte{0})
	h.Write(g.globalYAML)
	h.Write([]byte{0})
	h.Write(g.apiServerYAML)
	if g.nodeLocal {
		h.Write([]byte("\x00node-local"))
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out, true
}
