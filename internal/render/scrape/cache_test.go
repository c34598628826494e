package scrape

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cachedWorld is a cluster as the controller sees it: objects with UIDs, generations and
// resourceVersions, changed step by step.
type cachedWorld struct {
	prom    *monitoringv1.Prometheus
	sms     []*monitoringv1.ServiceMonitor
	secrets []*corev1.Secret
	extra   []byte
	// The additional alertmanager configs.
	alertmanagers []byte
	// delta is given to renders with a cache.
	delta *Delta
	next  int // numbers new objects
}

func (w *cachedWorld) input(c *Cache) Input {
	in := newInput(w.prom, w.sms, w.secrets...)
	in.AdditionalScrapeConfigs = w.extra
	in.AdditionalAlertManagerConfigs = w.alertmanagers
	in.Cache = c
	if c != nil {
		in.Delta = w.delta
	}
	return in
}

func newCachedWorld(n int) *cachedWorld {
	w := &cachedWorld{prom: newPrometheus()}
	for i := range n {
		sm := newServiceMonitor(fmt.Sprintf("ns%d", i%7), fmt.Sprintf("app%d", i))
		sm.UID = types.UID(fmt.Sprintf("uid-%d", i))
		w.sms = append(w.sms, sm)
	}
	s := newSecret("ns0", "creds", map[string]string{"user": "u", "pass": "p1"})
	s.ResourceVersion = "100"
	w.secrets = append(w.secrets, s)
	basicAuthFrom("creds", "user", "pass")(&w.sms[0].Spec.Endpoints[0])
	return w
}

// step renders the world with the cache and without, requires the same result, and returns the
// cache's hits and misses.
func (w *cachedWorld) step(t *testing.T, c *Cache) (hits, misses int) {
	t.Helper()
	got, err := Generate(w.input(c))
	if err != nil {
		t.Fatalf("Generate with cache: %v", err)
	}
	want, err := Generate(w.input(nil))
	if err != nil {
		t.Fatalf("Generate without cache: %v", err)
	}
	if !bytes.Equal(got.Config(), want.Config()) {
		t.Fatalf("config with cache differs from config without:\n--- with\n%s\n--- without\n%s", got.Config(), want.Config())
	}
	if !reflect.DeepEqual(got.Verdicts, want.Verdicts) || !reflect.DeepEqual(got.Namespaces, want.Namespaces) ||
		got.AllNamespaces != want.AllNamespaces || !reflect.DeepEqual(got.Groups, want.Groups) {
		t.Fatalf("result with cache differs from result without:\n%+v\n%+v", got.Verdicts, want.Verdicts)
	}
	for _, g := range got.Groups {
		if g.KeyHash != 0 && g.KeyHash != HashKey(g.Key) {
			t.Fatalf("group %s carries the key hash %d, want %d", g.Key, g.KeyHash, HashKey(g.Key))
		}
	}
	mustLoad(t, got.Config())
	return c.Hits, c.Misses
}

func TestCacheRendersOnlyWhatChanged(t *testing.T) {
	w := newCachedWorld(40)
	c := NewCache()
	expect := func(step string, wantHits, wantMisses int) {
		t.Helper()
		if h, m := w.step(t, c); h != wantHits || m != wantMisses {
			t.Fatalf("%s: %d hits, %d misses; want %d, %d", step, h, m, wantHits, wantMisses)
		}
	}
	expect("first render", 0, 40)
	expect("nothing changed", 40, 0)

	w.sms[5].Spec.Endpoints[0].Interval = "7s"
	w.sms[5].Generation++
	expect("one spec changed", 39, 1)

	w.sms = append(w.sms, newServiceMonitor("ns1", "late"))
	w.sms[len(w.sms)-1].UID = "uid-late"
	expect("one monitor added", 40, 1)

	w.secrets[0] = newSecret("ns0", "creds", map[string]string{"user": "u", "pass": "p2"})
	w.secrets[0].ResourceVersion = "101"
	expect("the Secret one monitor reads changed", 40, 1)

	w.secrets = nil
	expect("the Secret is gone", 40, 1)
	w.secrets = []*corev1.Secret{newSecret("ns0", "creds", map[string]string{"user": "u", "pass": "p3"})}
	w.secrets[0].ResourceVersion = "102"
	expect("the Secret is back", 40, 1)

	w.sms[7].Spec.Endpoints[0].RelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("replace", []string{"a"}, "b", "(")}
	w.sms[7].Generation++
	expect("a monitor becomes invalid", 40, 1)
	expect("the invalid monitor is remembered as rejected", 41, 0)

	w.sms = append(w.sms[:3], w.sms[4:]...)
	expect("one monitor deleted", 40, 0)
	if c.Len() != 40 {
		t.Fatalf("cache holds %d monitors after a deletion, want 40", c.Len())
	}

	w.sms[2].UID = "recreated"
	expect("a monitor recreated under the same name", 39, 1)

	w.prom.Spec.ScrapeInterval = "17s"
	expect("the Prometheus spec changed", 0, 40)

	w.extra = []byte("- job_name: extra\n  static_configs:\n  - targets: [a:1]\n")
	expect("additional scrape configs added", 40, 0)
	w.extra = []byte("- job_name: serviceMonitor/ns1/app1/0\n  static_configs:\n  - targets: [a:1]\n")
	if _, err := Generate(w.input(c)); err == nil {
		t.Fatal("an additional job named like a generated one was accepted from the cache")
	}
	if _, err := Generate(w.input(nil)); err == nil {
		t.Fatal("an additional job named like a generated one was accepted")
	}
}

func TestCacheKeepsTheAlertingSectionCurrent(t *testing.T) {
	w := newCachedWorld(10)
	amSecret := func(pass, version string) *corev1.Secret {
		s := newSecret("monitoring", "am", map[string]string{"user": "u", "pass": pass})
		s.ResourceVersion = version
		return s
	}
	w.secrets = append(w.secrets, amSecret("first-pass", "1"))
	withAlertmanagers(alertmanagerEndpoints("alertmanager-main", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
		am.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("am", "user"), Password: secretRef("am", "pass")}
	}))(w.prom)
	c := NewCache()
	expect := func(step string, wantHits, wantMisses int, inConfig string) {
		t.Helper()
		if h, m := w.step(t, c); h != wantHits || m != wantMisses {
			t.Fatalf("%s: %d hits, %d misses; want %d, %d", step, h, m, wantHits, wantMisses)
		}
		res, err := Generate(w.input(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(res.Tail, []byte(inConfig)) {
			t.Fatalf("%s: the alerting section lacks %q:\n%s", step, inConfig, res.Tail)
		}
	}
	expect("first render", 0, 10, "first-pass")
	expect("nothing changed", 10, 0, "first-pass")
	w.secrets[1] = amSecret("second-pass", "2")
	expect("the alerting Secret changed: the monitors stay cached", 10, 0, "second-pass")
	w.alertmanagers = []byte("- static_configs: [{targets: ['am.example.com:9093']}]\n")
	expect("additional alertmanager configs added", 10, 0, "am.example.com:9093")
	good := w.alertmanagers
	w.alertmanagers = []byte("- timeout: banana\n")
	for _, cache := range []*Cache{c, nil} {
		if _, err := Generate(w.input(cache)); err == nil {
			t.Fatal("refused additional alertmanager configs were accepted")
		}
	}
	w.alertmanagers = good
	expect("the additional alertmanager configs fixed", 10, 0, "am.example.com:9093")
}

func TestCacheSkipsObjectsWithoutVersions(t *testing.T) {
	w := newCachedWorld(3)
	w.sms[1].UID = ""
	w.sms[2].Generation = 0
	c := NewCache()
	w.step(t, c)
	if h, m := w.step(t, c); h != 1 || m != 2 {
		t.Fatalf("%d hits, %d misses; want 1, 2 (objects without UID or generation are not cached)", h, m)
	}
	// A Secret without a resourceVersion (read from a file) can change without notice.
	w.secrets[0].ResourceVersion = ""
	w.step(t, c)
	w.secrets[0].Data["pass"] = []byte("changed")
	if h, m := w.step(t, c); h != 0 || m != 3 {
		t.Fatalf("%d hits, %d misses; want 0, 3", h, m)
	}
}

func TestCompareKeysOrdersLikeTheJoinedString(t *testing.T) {
	parts := []string{"", "a", "a-b", "a.b", "ab", "a/b", "b", "a0", "z", "a-", "aa"}
	for _, nsA := range parts {
		for _, nA := range parts {
			for _, nsB := range parts {
				for _, nB := range parts {
					want := strings.Compare(nsA+"/"+nA, nsB+"/"+nB)
					if got := compareKeys(nsA, nA, nsB, nB); got != want {
						t.Fatalf("compareKeys(%q, %q, %q, %q) = %d, want %d", nsA, nA, nsB, nB, got, want)
					}
				}
			}
		}
	}
}

// TestTheLastOrderOnlySpeedsTheSort: whatever a cache remembers of the last order (new,
// removed, duplicated and renamed objects, positions out of range or from an older render,
// kinds mixed), sortMonitors gives what a sort without it gives, and each monitor found in the
// cache with its own entry; the scratch it works in, reused from round to round, changes
// nothing either.
func TestTheLastOrderOnlySpeedsTheSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var in []monitor
	for i := range 300 {
		sm := newServiceMonitor(fmt.Sprintf("ns%d", r.IntN(20)), fmt.Sprintf("app%d", r.IntN(100)))
		sm.UID, sm.ResourceVersion = types.UID(fmt.Sprintf("uid-%d", i)), fmt.Sprint(r.IntN(3))
		m := monitor{obj: sm, rank: serviceMonitorRank}
		if i%3 == 0 { // the same namespace/name under another kind
			m.rank = probeRank
		}
		in = append(in, m)
	}
	in = append(in, in[3], in[10]) // the same object given twice
	want := slices.Clone(sortMonitors(slices.Clone(in), NewCache()))
	if !slices.IsSortedFunc(want, compareMonitors) || len(want) != len(in) {
		t.Fatal("without a cache, the monitors are not sorted")
	}
	if want[0].rank != serviceMonitorRank || want[len(want)-1].rank != probeRank {
		t.Fatal("the kinds are not in the config's order")
	}
	c := NewCache()
	c.ordered = 5
	for round := range 60 {
		clear(c.entries)
		c.monitors = r.IntN(400)
		consistent := round%3 > 0
		entry := func(m monitor) *cacheEntry {
			// Positions that are not one render's order come from an older render (a failed
			// render moved some, or they are left from before).
			e := &cacheEntry{kind: m.kind(), ns: m.obj.GetNamespace(), name: m.obj.GetName(), at: r.IntN(450), epoch: c.ordered - 1}
			if consistent && r.IntN(5) > 0 {
				e.epoch = c.ordered
			}
			if r.IntN(10) == 0 { // renamed since
				e.name += "-old"
			}
			return e
		}
		for _, m := range in {
			if r.IntN(4) > 0 {
				c.entries[m.obj.GetUID()] = entry(m)
			}
		}
		if consistent { // the last order itself, with some of the monitors new to it
			for i, m := range want {
				if e := c.entries[m.obj.GetUID()]; e != nil {
					e.at = i
				}
			}
			c.monitors = len(want)
		}
		shuffled := slices.Clone(in)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got := sortMonitors(shuffled, c)
		if !slices.EqualFunc(got, want, func(a, b monitor) bool { return a.obj == b.obj && a.rank == b.rank }) {
			t.Fatalf("round %d: the order depends on the cache", round)
		}
		for _, m := range got {
			if m.cached != nil && m.cached != c.entries[m.obj.GetUID()] {
				t.Fatalf("round %d: %s/%s comes with another object's entry", round, m.obj.GetNamespace(), m.obj.GetName())
			}
		}
		c.scratch.release()
	}
}

// TestAStartRemembersWhatEachMonitorRead: the monitors of a start are built on every core;
// each must still record the Secrets it read, or a credential changed after a start would
// never reach the configuration.
func TestAStartRemembersWhatEachMonitorRead(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	w := newCachedWorld(4 * parallelBuildMin)
	c := NewCache()
	if _, misses := w.step(t, c); misses != len(w.sms) {
		t.Fatalf("the start built %d monitors, want all %d", misses, len(w.sms))
	}
	w.secrets[0] = newSecret("ns0", "creds", map[string]string{"user": "u", "pass": "rotated"})
	w.secrets[0].ResourceVersion = "101"
	if _, misses := w.step(t, c); misses != 1 {
		t.Fatalf("after the Secret changed, %d monitors were built again, want the 1 that reads it", misses)
	}
}

// TestCacheFollowsRandomChurn: renders with one cache through random churn (monitors added,
// deleted, changed, recreated under their name, renamed with their UID, given twice, input
// order shuffled, a Secret one reads rotated) and
// renders that fail halfway, each compared with a render without the cache: the order the
// cache remembers is only ever trusted when a whole render made it.
func TestCacheFollowsRandomChurn(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	w := newCachedWorld(30)
	c := NewCache()
	for step := range 150 {
		w.churn(t, r, c, step)
		w.step(t, c)
	}
}

// churn makes one random change to w (see TestCacheFollowsRandomChurn); a render that is to
// fail is made with c.
func (w *cachedWorld) churn(t *testing.T, r *rand.Rand, c *Cache, step int) {
	t.Helper()
	switch op := r.IntN(8); {
	case op == 0:
		sm := newServiceMonitor(fmt.Sprintf("ns%d", r.IntN(9)), fmt.Sprintf("new%d", w.next))
		sm.UID = types.UID(fmt.Sprintf("new-%d", w.next))
		w.next++
		w.sms = append(w.sms, sm)
	case op == 1 && len(w.sms) > 1:
		i := r.IntN(len(w.sms))
		w.sms = append(w.sms[:i:i], w.sms[i+1:]...)
	case op == 2:
		sm := w.sms[r.IntN(len(w.sms))].DeepCopy()
		sm.Spec.Endpoints[0].Interval = monitoringv1.Duration(fmt.Sprintf("%ds", 1+r.IntN(50)))
		sm.Generation++
		w.sms = append(slices.Clone(w.sms), sm)
		w.sms = slices.DeleteFunc(w.sms, func(o *monitoringv1.ServiceMonitor) bool { return o.UID == sm.UID && o != sm })
	case op == 3:
		i := r.IntN(len(w.sms))
		sm := w.sms[i].DeepCopy()
		sm.UID = types.UID(fmt.Sprintf("recreated-%d", w.next))
		w.next++
		w.sms = append(slices.Clone(w.sms[:i]), append([]*monitoringv1.ServiceMonitor{sm}, w.sms[i+1:]...)...)
	case op == 4:
		w.sms = append(slices.Clone(w.sms), w.sms[r.IntN(len(w.sms))])
	case op == 6:
		// Renamed with its UID kept (files can do this; the apiserver cannot).
		i := r.IntN(len(w.sms))
		sm := w.sms[i].DeepCopy()
		sm.Name = fmt.Sprintf("renamed%d", r.IntN(1000))
		w.sms = append(slices.Clone(w.sms[:i]), append([]*monitoringv1.ServiceMonitor{sm}, w.sms[i+1:]...)...)
	case op == 7:
		// The Secret the first monitor reads is rotated.
		w.next++
		w.secrets[0] = newSecret("ns0", "creds", map[string]string{"user": "u", "pass": fmt.Sprintf("p%d", w.next)})
		w.secrets[0].ResourceVersion = fmt.Sprint(1000 + w.next)
	case op == 5:
		// A render that fails after the monitors were sorted and the cache consulted.
		sm := w.sms[r.IntN(len(w.sms))]
		w.extra = []byte(fmt.Sprintf("- job_name: serviceMonitor/%s/%s/0\n  static_configs:\n  - targets: [a:1]\n", sm.Namespace, sm.Name))
		if _, err := Generate(w.input(c)); err == nil {
			t.Fatalf("step %d: an additional job named like a generated one was accepted", step)
		}
		w.extra = nil
	}
	r.Shuffle(len(w.sms), func(i, j int) { w.sms[i], w.sms[j] = w.sms[j], w.sms[i] })
}

// TestDeltasFollowRandomChurn: the churn of TestCacheFollowsRandomChurn, each render given
// the Delta from the monitors of the input before it (failed renders included), now and then a Delta from an input the cache never
// rendered or none: the same output as without the cache every time, and most renders
// take their order from the Delta.
func TestDeltasFollowRandomChurn(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	w := newCachedWorld(30)
	c := NewCache()
	var seq uint64
	var last []*monitoringv1.ServiceMonitor
	patched := 0
	for step := range 200 {
		w.churn(t, r, c, step)
		seq++
		d := &Delta{From: seq - 1, To: seq}
		d.Gone, d.Came = pointerDelta(last, w.sms)
		switch r.IntN(10) {
		case 0:
			d.From += 1000 // from an input this cache never rendered
		case 1:
			d = nil
		}
		w.delta = d
		w.step(t, c)
		if c.Patched {
			patched++
		}
		last = slices.Clone(w.sms)
	}
	if patched < 100 {
		t.Fatalf("%d of 200 renders took their order from the Delta; want most", patched)
	}
}

// pointerDelta is the Delta from the monitors prev to now, by identity.
func pointerDelta(prev, now []*monitoringv1.ServiceMonitor) (gone, came []metav1.Object) {
	left := map[*monitoringv1.ServiceMonitor]int{}
	for _, o := range prev {
		left[o]++
	}
	for _, o := range now {
		if left[o] > 0 {
			left[o]--
			continue
		}
		came = append(came, o)
	}
	for o, n := range left {
		for range n {
			gone = append(gone, o)
		}
	}
	return gone, came
}
