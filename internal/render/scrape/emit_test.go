package scrape

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v2"
)

// yamlV2Jobs is the reference emit.go must equal: marshalJobs as it was before it, yaml.v2's
// Marshal of the document cut after "scrape_configs:\n".
func yamlV2Jobs(t testing.TB, jobs []*scrapeJob) []byte {
	t.Helper()
	out, err := yaml.Marshal(&document{ScrapeConfigs: jobs})
	if err != nil {
		t.Fatalf("yaml.v2: %v", err)
	}
	return cutScrapeConfigs(t, out)
}

// yamlV2Items is yamlV2Jobs for a slice of any type.
func yamlV2Items(t testing.TB, items any) []byte {
	t.Helper()
	out, err := yaml.Marshal(yaml.MapSlice{{Key: "global", Value: nil}, {Key: "scrape_configs", Value: items}})
	if err != nil {
		t.Fatalf("yaml.v2: %v", err)
	}
	return cutScrapeConfigs(t, out)
}

func cutScrapeConfigs(t testing.TB, out []byte) []byte {
	t.Helper()
	const head = "global: null\n" + scrapeConfigsKey
	if !bytes.HasPrefix(out, []byte(head)) {
		t.Fatalf("yaml.v2 wrote an unexpected document: %q", out)
	}
	return out[len(head):]
}

// diffAt describes the first line where got and want differ.
func diffAt(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\n got: %q\nwant: %q\nwant, around it:\n%s", i+1, gl, wl, strings.Join(w[lo:min(len(w), i+3)], "\n"))
		}
	}
	return "equal"
}

// ---- What the emitter may leave to yaml.v2 -------------------------------------------------

// needsYAMLv2 reports whether v holds something emit.go is allowed to leave to yaml.v2: a string
// that is not UTF-8; a map key that cannot be a simple key; a map whose keys yaml.v2's order
// ranks in a cycle, or with too many keys to check.
func needsYAMLv2(v reflect.Value) bool {
	return anyValue(v, func(v reflect.Value) bool {
		switch v.Kind() {
		case reflect.String:
			return !utf8.ValidString(v.String())
		case reflect.Map:
			if v.Len() > maxCheckedKeys {
				return true
			}
			keys := mapKeys(v)
			for _, k := range keys {
				if !utf8.ValidString(k) || strings.ContainsAny(k, "\n\r\u0085\u2028\u2029") || len(k) > maxSimpleKey {
					return true
				}
			}
			return cyclicKeys(keys)
		}
		return false
	})
}

// anyCyclicKeys reports a map in v whose keys yaml.v2 orders by the map's iteration order.
func anyCyclicKeys(v reflect.Value) bool {
	return anyValue(v, func(v reflect.Value) bool { return v.Kind() == reflect.Map && cyclicKeys(mapKeys(v)) })
}

// anyValue reports whether found holds for v or for any value in it: what pointers and
// interfaces point to, elements, exported fields and map values.
func anyValue(v reflect.Value, found func(reflect.Value) bool) bool {
	if found(v) {
		return true
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && anyValue(v.Elem(), found)
	case reflect.Slice:
		for i := range v.Len() {
			if anyValue(v.Index(i), found) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && anyValue(v.Field(i), found) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if anyValue(it.Value(), found) {
				return true
			}
		}
	}
	return false
}

// mapKeys lists the string keys of map v.
func mapKeys(v reflect.Value) []string {
	keys := make([]string, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		keys = append(keys, it.Key().String())
	}
	return keys
}

// cyclicKeys reports keys no order agrees with keyLess on (keyLess itself is checked against
// yaml.v2 pair by pair in TestEmitKeyOrder).
func cyclicKeys(keys []string) bool {
	for _, a := range keys {
		for _, b := range keys {
			for _, c := range keys {
				if keyLess(a, b) && keyLess(b, c) && keyLess(c, a) {
					return true
				}
			}
		}
	}
	return false
}

// checkEmit compares the emitter with yaml.v2 on jobs, and marshalJobs with both. It returns why
// the emitter gave up, "" when it wrote the jobs.
func checkEmit(t testing.TB, jobs []*scrapeJob) string {
	t.Helper()
	got, why := emitSequence(reflect.ValueOf(jobs))
	if why != "" {
		if !needsYAMLv2(reflect.ValueOf(jobs)) {
			t.Errorf("the emitter left to yaml.v2 (%s) jobs it must write itself:\n%s", why, yamlV2Jobs(t, jobs))
		}
		if anyCyclicKeys(reflect.ValueOf(jobs)) {
			return why // yaml.v2's own output depends on the map's iteration order
		}
		got = nil
	}
	want := yamlV2Jobs(t, jobs)
	if got != nil && !bytes.Equal(got, want) {
		t.Errorf("emitter and yaml.v2 differ at %s", diffAt(got, want))
		return why
	}
	if out, err := marshalJobs(jobs); err != nil || !bytes.Equal(out, want) {
		t.Errorf("marshalJobs (err %v) differs from yaml.v2 at %s", err, diffAt(out, want))
	}
	return why
}

// ---- Random values -------------------------------------------------------------------------

// nastyStrings are strings yaml.v2 writes in every style, or that the emitter leaves to it.
var nastyStrings = []string{
	"", " ", "  ", "a", "A", "_", "x",
	// YAML 1.1 bools, nulls, numbers, timestamps and base 60.
	"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
	"true", "True", "TRUE", "false", "False", "FALSE", "tRUE", "yEs", "o", "t", "f", "nO",
	"~", "null", "Null", "NULL", "nULL", "~a", "<<", "<", "=",
	"0", "1", "-1", "+1", "-0", "+0", "007", "08", "0x1F", "0X1f", "-0x1F", "0o17", "0O17", "0b101", "-0b101", "+0b1",
	"0b", "0b2", "0x", "0o", "0xG", "1_000", "1__0", "_1", "1_", "0x_1F", "0b_1", "-0b_1", "-0b", "0b1111111111111111111111111111111111111111111111111111111111111111",
	"-0b1111111111111111111111111111111111111111111111111111111111111111", "1e3", "1E-3", "1e", "e1", "1e+", "-1.5", ".5", "+.5", "-.5", "1.", "1.e5",
	"12e", "._5", ".e5", ".1e5", ".1_0", ".5x", "1.2.3", "0.1", "00.1", "1f", "0x1p-2", "inf", "Infinity", "nan",
	".inf", "-.inf", "+.Inf", "+.INF", ".NaN", ".nan", ".NAN", ".", "..", "...", "....", "---", "--- a", "---a", "-", "- a", "-a", "--", "-.", "+", "+-",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "18446744073709551616", "1e400", "-1e400", "0x8000000000000000", "0xFFFFFFFFFFFFFFFF",
	"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14T21:59:43.10Z", "2001-12-14 21:59:43.10",
	"2001-12-14 21:59:43.10 -5", "2001-1-1", "2001-13-45", "2001-12-14x", "20011-12-14", "200-12-14", "2001-", "2001",
	"1:30", "-1:30:00", "+1:30", "1:70", "190:20:30.15", "1:2:3.4_5", "1_0:20", "1:", ":1", "a:1",
	// What the operator writes.
	"30s", "1m", "5m30s", "10MB", "1h", "0s", "1y", "1d", "100ms", "1.5s", "2h45m", "1KB", "0B",
	"(.+)", "(.*)", "(.+);(.+)", ".+;.+", "$(SHARD);|.+;.+", "Node;(.*)", "(Failed|Succeeded)", "${1}", "$1", "${1}:${2}",
	"__meta_kubernetes_pod_label_app_kubernetes_io_name", "__address__", "__tmp_hash", "serviceMonitor/default/app/0",
	"https://example.com/metrics?x=1&y=2#frag", "http://[::1]:9090", "a=b", "a.b.c", "/metrics", "default", "kube-system",
	"endpoints", "node", "namespace", "true;true", "labeldrop", "keep", "hashmod", "http", "https", "Bearer", "/etc/prometheus/secrets/x",
	"PrometheusProto", "OpenMetricsText1.0.0", "utf8", "legacy", "allow-utf-8", "underscores",
	// Indicators.
	"a: b", "a:b", "a:", ":", ": a", ":a", "a :b", "a::b", "a:\tb", "a #b", "a#b", "#a", "#", "a\t#b", "?", "? a", "?a", "a ?", "a?",
	"&a", "*a", "!a", "|", "|a", ">", ">a", "'", "\"", "'a'", "\"a\"", "%a", "@a", "`a", ",a", "a,b", "[a]", "{a}", "a]", "a}", "a{", "a[", "]", "}",
	"!!str", "!!binary", "&anchor a", "*alias", "-1-", "- ", " -", "a -", "a - b", "a: ", "a :",
	// Spaces, tabs and breaks.
	" a", "a ", " a ", "a  b", "a   b", "a\tb", "\ta", "a\t", "\t", "a \tb", "a\rb", "\r", "a\r", "\ra", "a\r\nb", "a\nb", "\n", "a\n", "\na",
	"a \nb", "a\n b", "a\n\nb", "a\n\n", "\n\n", " \n", "a\n\t", "a \n", "a\u0085b", "\u0085", "a \u0085", "a\u2028b", "a\u2029b", " \u2028", "\u2028", "a\u2028",
	// Control characters, Unicode and its odd corners.
	"\x00", "a\x00b", "\x01", "\x07\x08\x0b\x0c\x1b", "\x1f", "\x7f", "a\x7f", "\u0080", "\u009f", "\u00a0", "a\u00a0b", "\u00a0a",
	"é", "naïve café", "日本語", "Ünïcødé", "\ufeff", "\ufeffabc", "\ufeff a", "a\ufeffb", "\ufffe", "\uffff", "\ufffd", "\ud7ff", "\ue000",
	"😀", "a😀b", "\U0010ffff", "\U00010000", "👍🏽 ok", "١٢٣", "٣a",
	"\\", "a\\b", "\\n", "\"quoted\"", "it's", "'''", "a'b", "''", "\"\"", "a\"b",
	// Invalid UTF-8.
	"\xff", "a\xffb", "\xc3", "\xe2\x82", "\xed\xa0\x80",
}

// filler sets every field of a value to random contents: zero, nil and empty ones included.
type filler struct {
	r     *rand.Rand
	extra []string        // strings a fuzzer gave: drawn often
	set   map[string]bool // Type.Field given a non-zero value
	depth int
	full  bool // no zero, nil or empty values
}

func newFiller(seed uint64, extra ...string) *filler {
	return &filler{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), extra: extra, set: map[string]bool{}}
}

const fillAlphabet = "aZ0159_.-+:#? \t'\"\\,[]{}&*!|>%@`=/$()exobXO"

var fillRunes = []string{"é", "\u00a0", "\ufeff", "😀", "日", "\u0085", "\x00", "\x7f", "\r", "\u0663", "\ufffd"}

// str is a random string. One in 30 of those that make the emitter leave the value to yaml.v2
// (invalid UTF-8) is kept, so that most random jobs test the emitter.
func (f *filler) str() string {
	for {
		s := f.anyStr()
		if utf8.ValidString(s) || f.r.IntN(30) == 0 {
			return s
		}
	}
}

func (f *filler) anyStr() string {
	r := f.r
	if len(f.extra) > 0 && r.IntN(3) == 0 {
		return f.extra[r.IntN(len(f.extra))]
	}
	switch r.IntN(11) {
	case 0, 1, 2:
		return nastyStrings[r.IntN(len(nastyStrings))]
	case 3: // a label name
		return f.ident(1 + r.IntN(40))
	case 4: // words, long lines
		var b strings.Builder
		for i := range 1 + r.IntN(40) {
			if i > 0 {
				b.WriteString(strings.Repeat(" ", 1+r.IntN(2)*r.IntN(3)))
			}
			b.WriteString(f.ident(1 + r.IntN(12)))
			if r.IntN(8) == 0 {
				b.WriteString(nastyStrings[r.IntN(len(nastyStrings))])
			}
		}
		return b.String()
	case 5: // random characters
		var b strings.Builder
		for range r.IntN(250) {
			if r.IntN(12) == 0 {
				b.WriteString(fillRunes[r.IntN(len(fillRunes))])
			} else {
				b.WriteByte(fillAlphabet[r.IntN(len(fillAlphabet))])
			}
		}
		return b.String()
	case 6: // pieces put together
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(nastyStrings[r.IntN(len(nastyStrings))])
		}
		return b.String()
	case 7: // long without spaces
		return strings.Repeat(string(rune('a'+r.IntN(26))), 50+r.IntN(200))
	case 8: // number-like
		const digits = "0123456789_.:+-eEbxo"
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteByte(digits[r.IntN(len(digits))])
		}
		return b.String()
	case 9: // 200 characters with spaces in odd places, quotes and escapes
		var b strings.Builder
		for b.Len() < 200 {
			switch r.IntN(9) {
			case 0:
				b.WriteString("  ")
			case 1:
				b.WriteByte(' ')
			case 2:
				b.WriteString([]string{"'", "\"", "\\", "\t", "é", "😀", ": ", " #"}[r.IntN(8)])
			default:
				b.WriteString(f.ident(1 + r.IntN(6)))
			}
		}
		s := b.String()
		if r.IntN(2) == 0 {
			s = nastyStrings[r.IntN(len(nastyStrings))] + s
		}
		return s
	default:
		return fmt.Sprintf("%s/%s/%s/%d", f.ident(3+r.IntN(10)), f.ident(3+r.IntN(20)), f.ident(3+r.IntN(20)), r.IntN(10))
	}
}

// length is how many elements a slice or map gets (up to most), and false when it stays
// nil; a full filler always gives at least one.
func (f *filler) length(most int) (int, bool) {
	n := 1 + f.r.IntN(most)
	if !f.full {
		switch f.r.IntN(6) {
		case 0:
			return 0, false
		case 1:
			n = 0
		}
	}
	return n, true
}

func (f *filler) ident(n int) string {
	const first = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
	const rest = first + "0123456789"
	b := make([]byte, n)
	b[0] = first[f.r.IntN(len(first))]
	for i := 1; i < n; i++ {
		b[i] = rest[f.r.IntN(len(rest))]
	}
	return string(b)
}

// key is a map key: mostly label-like, sometimes something yaml.v2 orders oddly.
func (f *filler) key() string {
	switch f.r.IntN(6) {
	case 0:
		k := f.str()
		for f.r.IntN(30) != 0 && (len(k) > maxSimpleKey || strings.ContainsAny(k, "\n\r\u0085\u2028\u2029")) {
			k = f.str()
		}
		return k
	case 1: // digits and letters: numbers compared as such, cycles
		const alphabet = "0123a9bZ_-.é٣"
		var b strings.Builder
		for range 1 + f.r.IntN(5) {
			b.WriteString(string([]rune(alphabet)[f.r.IntN(utf8.RuneCountInString(alphabet))]))
		}
		return b.String()
	case 2:
		return "__meta_kubernetes_" + f.ident(1+f.r.IntN(10))
	default:
		return f.ident(1 + f.r.IntN(30))
	}
}

func (f *filler) fill(v reflect.Value) {
	r := f.r
	t := v.Type()
	switch t.Kind() {
	case reflect.String:
		v.SetString(f.str())
	case reflect.Bool:
		v.SetBool(f.full || r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		lim := int64(1)<<(t.Bits()-1) - 1
		v.SetInt([]int64{0, 1, -1, 9090, lim, -lim - 1, r.Int64N(lim) - r.Int64N(lim)}[r.IntN(7)])
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		lim := uint64(1)<<(t.Bits()-1) - 1 + uint64(1)<<(t.Bits()-1)
		v.SetUint([]uint64{0, 1, 100000, lim, r.Uint64() & lim}[r.IntN(5)])
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 2, 1e21, 1e20, 1e-7, 123456789.125, math.MaxFloat64,
			math.SmallestNonzeroFloat64, math.MaxFloat32, math.Inf(1), math.Inf(-1), math.NaN(), r.NormFloat64() * 1e6}[r.IntN(17)])
	case reflect.Pointer:
		if !f.full && (r.IntN(4) == 0 || f.depth > 4) {
			return
		}
		p := reflect.New(t.Elem())
		f.depth++
		f.fill(p.Elem())
		f.depth--
		v.Set(p)
	case reflect.Slice:
		n, ok := f.length(4)
		if !ok {
			return // nil
		}
		if f.depth > 4 {
			n = 0
		}
		s := reflect.MakeSlice(t, n, n)
		f.depth++
		for i := range n {
			f.fill(s.Index(i))
		}
		f.depth--
		v.Set(s)
	case reflect.Map:
		n, ok := f.length(6)
		if !ok {
			return // nil
		}
		m := reflect.MakeMap(t)
		f.depth++
		for range n {
			k := reflect.New(t.Key()).Elem()
			k.SetString(f.key())
			e := reflect.New(t.Elem()).Elem()
			f.fill(e)
			m.SetMapIndex(k, e)
		}
		f.depth--
		v.Set(m)
	case reflect.Struct:
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() || !f.full && r.IntN(3) == 0 {
				continue
			}
			f.fill(v.Field(i))
			if !v.Field(i).IsZero() {
				f.set[t.Name()+"."+sf.Name] = true
			}
		}
	default:
		panic("filler: " + t.String())
	}
}

func (f *filler) job() *scrapeJob {
	j := &scrapeJob{}
	f.fill(reflect.ValueOf(j).Elem())
	return j
}

// ---- Tests ---------------------------------------------------------------------------------

// TestEmitGoldenJobs: the jobs of every golden input are written by the emitter itself, and
// as yaml.v2 writes them.
func TestEmitGoldenJobs(t *testing.T) {
	n := 0
	for name, in := range goldenCases() {
		g, err := newGenerator(in)
		if err != nil {
			continue
		}
		for _, m := range g.monitors(in, nil, nil) {
			jobs, _, rej := g.jobs(m)
			if rej != nil || len(jobs) == 0 {
				continue
			}
			n += len(jobs)
			if why := checkEmit(t, jobs); why != "" {
				t.Errorf("%s: %s/%s left to yaml.v2: %s", name, m.obj.GetNamespace(), m.obj.GetName(), why)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d golden jobs", n)
	}
}

// TestEmitRandomJobs: random jobs, every field reachable set to random values (zero, nil,
// empty and nasty ones included), are written exactly as yaml.v2 writes them.
func TestEmitRandomJobs(t *testing.T) {
	runs := 4000
	if testing.Short() {
		runs = 500
	}
	f := newFiller(1)
	gaveUp := map[string]int{}
	for i := range runs {
		jobs := []*scrapeJob{f.job()}
		if i%5 == 0 {
			jobs = append(jobs, f.job(), nil, f.job())
		}
		if why := checkEmit(t, jobs); why != "" {
			gaveUp[why]++
		}
		if t.Failed() {
			t.Fatalf("run %d failed", i)
		}
	}
	t.Logf("left to yaml.v2: %v of %d", gaveUp, runs)
	total := 0
	for _, n := range gaveUp {
		total += n
	}
	if total > runs/2 {
		t.Errorf("the emitter gave up on %d of %d random runs: the test checks too little", total, runs)
	}
	// Every field got a value other than its zero at least once.
	for _, p := range fieldPaths(reflect.TypeFor[scrapeJob]()) {
		if !f.set[p] {
			t.Errorf("no random job set %s", p)
		}
	}
}

// fieldPaths lists Type.Field for every exported field of the structs t reaches.
func fieldPaths(t reflect.Type) []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice:
			walk(t.Elem())
		case reflect.Map:
			walk(t.Key())
			walk(t.Elem())
		case reflect.Struct:
			if seen[t] {
				return
			}
			seen[t] = true
			for i := range t.NumField() {
				if sf := t.Field(i); sf.IsExported() {
					out = append(out, t.Name()+"."+sf.Name)
					walk(sf.Type)
				}
			}
		}
	}
	walk(t)
	return out
}

// TestEmitFullJob: a job with every field set, none empty.
func TestEmitFullJob(t *testing.T) {
	for seed := range uint64(50) {
		f := newFiller(seed, "value")
		f.full = true
		j := f.job()
		if why := checkEmit(t, []*scrapeJob{j}); why != "" && !needsYAMLv2(reflect.ValueOf(j)) {
			t.Fatalf("gave up: %s", why)
		}
	}
}

// placements put one string where it is written in a different context: values at several
// depths and columns, sequence items, map keys and values.
var placements = []struct {
	name string
	set  func(j *scrapeJob, s string)
}{
	{"job_name", func(j *scrapeJob, s string) { j.JobName = s }},
	{"metrics_path", func(j *scrapeJob, s string) { j.MetricsPath = s }},
	{"regex", func(j *scrapeJob, s string) { j.RelabelConfigs = []*relabelRule{{Regex: &s, Action: "keep"}} }},
	{"source_labels", func(j *scrapeJob, s string) { j.RelabelConfigs = []*relabelRule{{SourceLabels: []string{"a", s}}} }},
	{"label value", func(j *scrapeJob, s string) {
		j.StaticConfigs = []staticConfig{{Targets: []string{s}, Labels: map[string]string{"a": s}}}
	}},
	{"label key", func(j *scrapeJob, s string) {
		j.StaticConfigs = []staticConfig{{Labels: map[string]string{s: "v", "b": s}}}
	}},
	{"params", func(j *scrapeJob, s string) { j.Params = map[string][]string{s: {s}, "module": {s, "x"}} }},
	{"deep", func(j *scrapeJob, s string) {
		j.KubernetesSDConfigs = []kubernetesSDConfig{{Role: "pod", HTTPClient: httpClientConfig{
			OAuth2: &oauth2Config{ClientID: s, TLSConfig: &tlsConfig{CA: s}, EndpointParams: map[string]string{s: s},
				Proxy: proxyConfig{ProxyConnectHeader: map[string][]string{s: {s}}}},
		}}}
	}},
}

// TestEmitStrings: each nasty and random string in every placement, and after keys of every
// length so that it starts at every column around the width yaml.v2 folds at.
func TestEmitStrings(t *testing.T) {
	f := newFiller(2)
	strs := slices.Clone(nastyStrings)
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		strs = append(strs, f.str())
	}
	gaveUp := 0
	for _, s := range strs {
		for _, p := range placements {
			j := &scrapeJob{}
			p.set(j, s)
			if why := checkEmit(t, []*scrapeJob{j}); why != "" {
				gaveUp++
			}
			if t.Failed() {
				t.Fatalf("%s: %q", p.name, s)
			}
		}
	}
	long := []string{strings.Repeat("word ", 40), strings.Repeat("a ", 100) + "b", " " + strings.Repeat("ab  ", 50),
		strings.Repeat("x", 100) + " " + strings.Repeat("y", 100), strings.Repeat("it's ", 40), strings.Repeat("\"q\" ", 50),
		strings.Repeat("\t ", 60), strings.Repeat("é ", 60), strings.Repeat("😀 ", 60), "true " + strings.Repeat("z ", 60),
		strings.Repeat("a: b ", 30), strings.Repeat(" ", 90), "x" + strings.Repeat(" ", 90) + "x", strings.Repeat("\ufeff ", 50)}
	for range 100 {
		if s := f.str(); len(s) > 60 && strings.Contains(s, " ") {
			long = append(long, s)
		}
	}
	for _, s := range long {
		for width := range 100 {
			k := strings.Repeat("k", width)
			for _, j := range []*scrapeJob{
				{StaticConfigs: []staticConfig{{Labels: map[string]string{k: s}}}},
				{JobName: k + s},
				{ScrapeProtocols: []string{k + s}},
			} {
				checkEmit(t, []*scrapeJob{j})
				if t.Failed() {
					t.Fatalf("%d: %q", width, s)
				}
			}
		}
	}
	t.Logf("%d strings × %d placements, %d left to yaml.v2", len(strs), len(placements), gaveUp)
}

// TestEmitKeyOrder: keyLess orders every pair of keys as yaml.v2 does.
func TestEmitKeyOrder(t *testing.T) {
	f := newFiller(3)
	keys := []string{"", "a", "b", "A", "_", "a0", "a00", "a1", "a01", "a001", "a10", "a1b", "a1a", "a2", "a9", "a09", "10", "1a", "2", "0", "00",
		"01", "001", "100", "10a", "1", "a-1", "a_1", "a.1", "é", "e", "z", "Z", "٣", "1٣", "a٣", "a 1", ":", ";", "/", "-", "99999999999999999999",
		"999999999999999999999", "18446744073709551616", "a20b", "a100b", "a0100", "a1000", "x0y", "x00y", "9a", "09a", "1.5", "1.10"}
	for range 300 {
		keys = append(keys, f.key())
	}
	for _, a := range keys {
		for _, b := range keys {
			if a == b || !utf8.ValidString(a) || !utf8.ValidString(b) {
				continue
			}
			out, err := yaml.Marshal(map[string]int{a: 0, b: 1})
			if err != nil {
				t.Fatal(err)
			}
			var back yaml.MapSlice
			if err := yaml.Unmarshal(out, &back); err != nil || len(back) != 2 {
				t.Fatalf("read back %q: %v", out, err)
			}
			if want := back[0].Value == 0; keyLess(a, b) != want {
				t.Fatalf("keyLess(%q, %q) = %v, yaml.v2 puts %q first", a, b, !want, back[0].Key)
			}
		}
	}
	// A set yaml.v2 ranks in a cycle is left to it.
	cycle := map[string]string{"10": "a", "1a": "b", "2": "c"}
	if !keyLess("10", "1a") || !keyLess("1a", "2") || !keyLess("2", "10") {
		t.Fatal("10 < 1a < 2 < 10 is no longer a cycle")
	}
	if _, why := emitSequence(reflect.ValueOf([]*scrapeJob{{StaticConfigs: []staticConfig{{Labels: cycle}}}})); !strings.Contains(why, "order") {
		t.Errorf("keys in a cycle: %q", why)
	}
}

// TestEmitLeavesToYAMLv2: what the emitter does not write, it says so rather than writing
// something else, and marshalJobs writes yaml.v2's bytes.
func TestEmitLeavesToYAMLv2(t *testing.T) {
	for _, j := range []*scrapeJob{
		{JobName: "\xff"},
		{ScrapeProtocols: []string{"a", "b\xc3"}},
		{StaticConfigs: []staticConfig{{Labels: map[string]string{"a\rb": "x"}}}},
		{StaticConfigs: []staticConfig{{Labels: map[string]string{"a\nb": "x"}}}},
		{StaticConfigs: []staticConfig{{Labels: map[string]string{"a\u2028b": "x"}}}},
		{StaticConfigs: []staticConfig{{Labels: map[string]string{strings.Repeat("k", maxSimpleKey+1): "x"}}}},
	} {
		if _, why := emitSequence(reflect.ValueOf([]*scrapeJob{j})); why == "" {
			t.Errorf("%+v: written by the emitter", j)
		}
		checkEmit(t, []*scrapeJob{j})
	}
	// Close to those but written: a literal block, a line feed a tab makes double-quoted, a line
	// separator in single quotes, a 128-byte key.
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	for _, j := range []*scrapeJob{
		{JobName: "a\nb"},
		{JobName: "a\n\tb"},
		{JobName: "a \nb"},
		{JobName: "a\n\n"},
		{JobName: "\n"},
		{JobName: " a\nb\n\n\n"},
		{JobName: "a\u2028b"},
		{JobName: "a\u2028"},
		{JobName: "#a\u2029 b"},
		{TLSConfig: &tlsConfig{CA: pem, Cert: pem, Key: pem}, BearerToken: "x"},
		{StaticConfigs: []staticConfig{{Targets: []string{pem, "a\n"}, Labels: map[string]string{"ca": pem, "d": "x"}}}},
		{StaticConfigs: []staticConfig{{Labels: map[string]string{strings.Repeat("k", maxSimpleKey): "x"}}}},
	} {
		if why := checkEmit(t, []*scrapeJob{j, j}); why != "" {
			t.Errorf("%+v: left to yaml.v2: %s", j, why)
		}
	}
}

// TestEmitPlanCoversJobTypes walks every type the jobs reach and checks the emitter has a plan
// for it, listing the keys yaml.v2 writes for its structs.
func TestEmitPlanCoversJobTypes(t *testing.T) {
	if _, err := planOf(reflect.TypeFor[[]*scrapeJob]()); err != nil {
		t.Fatalf("no plan for the jobs: %v", err)
	}
	if _, ok := emitJobs([]*scrapeJob{{JobName: "x"}}); !ok {
		t.Fatal("emitJobs left a plain job to yaml.v2")
	}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		p, err := planOf(typ)
		if err != nil {
			t.Errorf("%s (%s): %v", path, typ, err)
			return
		}
		switch typ.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		case reflect.Pointer, reflect.Slice:
			walk(typ.Elem(), path+"[]")
		case reflect.Map:
			if typ.Key().Kind() != reflect.String {
				t.Errorf("%s: map key %s", path, typ.Key())
			}
			walk(typ.Elem(), path+"{}")
		case reflect.Struct:
			var want []string
			var keys func(st reflect.Type)
			keys = func(st reflect.Type) {
				for i := range st.NumField() {
					sf := st.Field(i)
					name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
					if !sf.IsExported() || name == "-" {
						continue
					}
					walk(sf.Type, path+"."+sf.Name)
					if opts == "inline" {
						keys(sf.Type)
						continue
					}
					want = append(want, name)
				}
			}
			keys(typ)
			var got []string
			for _, f := range p.fields {
				got = append(got, f.key)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: plan keys %v, want %v", path, got, want)
			}
		default:
			t.Errorf("%s: %s of kind %s", path, typ, typ.Kind())
		}
	}
	walk(reflect.TypeFor[scrapeJob](), "scrapeJob")
	if len(seen) < 20 {
		t.Errorf("walked only %d types", len(seen))
	}
}

type textKey string

func (k textKey) MarshalText() ([]byte, error) { return []byte("k"), nil }

type zeroable struct{ A int }

func (zeroable) IsZero() bool { return true }

type yamlMarshals struct{ A int }

func (*yamlMarshals) MarshalYAML() (any, error) { return 1, nil }

type EmitEmbedded struct {
	E string `yaml:"e"`
}

// TestEmitRejectsUnsupportedTypes: a field the emitter cannot write exactly makes its plan fail
// (and the jobs go to yaml.v2), rather than being written some other way.
func TestEmitRejectsUnsupportedTypes(t *testing.T) {
	for _, v := range []any{
		[]struct{ X any }{{}},
		[]struct{ D time.Duration }{{}},
		[]struct{ T time.Time }{{}},
		[]struct{ T *time.Time }{{}},
		[]struct {
			X []int `yaml:",flow"`
		}{{}},
		[]struct {
			M map[string]string `yaml:",inline"`
		}{{}},
		[]struct {
			X string `yaml:"x,omitempty,bogus"`
		}{{}},
		[]struct {
			A string `yaml:"a"`
			B string `yaml:"a"`
		}{{}},
		[]struct{ C chan int }{{}},
		[]struct{ A [2]int }{{}},
		[]struct{ F func() }{{}},
		[]struct{ M map[int]string }{{}},
		[]struct{ M map[textKey]string }{{}},
		[]struct{ K textKey }{{}},
		[]struct {
			Z zeroable `yaml:"z,omitempty"`
		}{{}},
		[]struct{ Y yamlMarshals }{{}},
		[]struct{ EmitEmbedded }{{}},
		[]struct {
			K string `yaml:"a\nb"`
		}{{}},
		[]yaml.MapSlice{{}},
		[]any{1},
	} {
		rv := reflect.ValueOf(v)
		if _, err := planOf(rv.Type()); err == nil {
			t.Errorf("%s: planned", rv.Type())
		}
		if out, why := emitSequence(rv); out != nil || !strings.HasPrefix(why, "plan: ") {
			t.Errorf("%s: %q, %q", rv.Type(), out, why)
		}
	}
}

// Types reaching what job.go does not use yet: the emitter must write them as yaml.v2 does too.
type emitName string

type emitLeaf struct {
	I8       int8     `yaml:"i8"`
	I16      int16    `yaml:"i16,omitempty"`
	I64      int64    `yaml:"i64"`
	U8       uint8    `yaml:"u8,omitempty"`
	U        uint     `yaml:"u"`
	F32      float32  `yaml:"f32"`
	F64      float64  `yaml:"f64,omitempty"`
	Name     emitName `yaml:"name"`
	PP       **string `yaml:"pp"`
	Bytes    []byte   `yaml:"bytes,omitempty"`
	Skipped  string   `yaml:"-"`
	hidden   string   // skipped by yaml.v2 and the emitter alike
	Yes      bool     `yaml:"yes"`
	Spaced   string   `yaml:"a b,omitempty"`
	Empty    string   `yaml:""`
	Untagged string
	Names    []emitName `yaml:"names"`
}

type emitInlineDeeper struct {
	D string `yaml:"d,omitempty"`
}

type emitInline struct {
	Deeper emitInlineDeeper `yaml:",inline"`
	X      string           `yaml:"x,omitempty"`
}

type emitNode struct {
	Leaf         emitLeaf                  `yaml:"leaf"`
	OptLeaf      emitLeaf                  `yaml:"opt_leaf,omitempty"`
	Kids         []*emitNode               `yaml:"kids,omitempty"`
	Matrix       [][]string                `yaml:"matrix"`
	Nested       map[string]map[string]int `yaml:"nested"`
	ListOfMaps   []map[string]string       `yaml:"list_of_maps,omitempty"`
	MapOfPtr     map[emitName]*emitLeaf    `yaml:"map_of_ptr"`
	Seqs         map[string][][]bool       `yaml:"seqs,omitempty"`
	Inline       emitInline                `yaml:",inline"`
	EmitEmbedded `yaml:",inline"`
	PtrSeq       *[]string                    `yaml:"ptr_seq"`
	Structs      []emitInlineDeeper           `yaml:"structs"`
	Empty        struct{}                     `yaml:"empty"`
	EmptyOpt     struct{}                     `yaml:"empty_opt,omitempty"`
	Ptrs         map[string]*map[string]*bool `yaml:"ptrs,omitempty"`
}

func TestEmitOtherTypes(t *testing.T) {
	f := newFiller(4)
	for i := range 1500 {
		nodes := make([]*emitNode, 1+i%3)
		for k := range nodes {
			if i%7 != 3 || k != 1 {
				nodes[k] = &emitNode{}
				f.fill(reflect.ValueOf(nodes[k]).Elem())
			}
		}
		got, why := emitSequence(reflect.ValueOf(nodes))
		if why != "" {
			if !needsYAMLv2(reflect.ValueOf(nodes)) {
				t.Fatalf("left to yaml.v2: %s", why)
			}
			continue
		}
		if want := yamlV2Items(t, nodes); !bytes.Equal(got, want) {
			t.Fatalf("emitter and yaml.v2 differ at %s", diffAt(got, want))
		}
	}
	// Sequences of scalars and of sequences at the top.
	for _, v := range []any{[]string{"a", "b c", "", "yes"}, [][]int{{1, 2}, {}, nil, {3}}, []map[string]int{{}, {"a": 1}}, []*int{nil}} {
		got, why := emitSequence(reflect.ValueOf(v))
		if want := yamlV2Items(t, v); why != "" || !bytes.Equal(got, want) {
			t.Errorf("%#v: %q (%s), want %q", v, got, why, want)
		}
	}
}

// FuzzEmitJob: the fuzzer's strings in a random job, in every placement, and as map keys
// starting where the seed says.
func FuzzEmitJob(f *testing.F) {
	for i, s := range nastyStrings {
		f.Add(s, nastyStrings[(i*7+3)%len(nastyStrings)], uint64(i))
	}
	f.Add(strings.Repeat("long words ", 20), "x: y", uint64(77))
	f.Add("a "+strings.Repeat("b", 85)+" c", strings.Repeat(" ", 85)+"\"", uint64(1000))
	f.Fuzz(func(t *testing.T, a, b string, seed uint64) {
		fl := newFiller(seed, a, b)
		j := fl.job()
		j.JobName = a
		j.StaticConfigs = append(j.StaticConfigs, staticConfig{Targets: []string{b, a},
			Labels: map[string]string{a: b, strings.Repeat("k", int(seed%100)): a + b}})
		j.RelabelConfigs = append(j.RelabelConfigs, &relabelRule{Regex: &b, Replacement: &a, SourceLabels: []string{a}})
		checkEmit(t, []*scrapeJob{j})
		for _, p := range placements {
			j := &scrapeJob{}
			p.set(j, a)
			checkEmit(t, []*scrapeJob{j})
		}
	})
}

// typicalJobs are the jobs of one ServiceMonitor of the render benchmark: two endpoints, each
// with an interval and two relabelings.
func typicalJobs(tb testing.TB) []*scrapeJob {
	tb.Helper()
	ep := func(port string) monitoringv1.Endpoint {
		return monitoringv1.Endpoint{Port: port, Interval: "30s", RelabelConfigs: []monitoringv1.RelabelConfig{
			{Action: "labeldrop", Regex: "pod_template_hash"},
			{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_node_name"}, TargetLabel: "node"},
		}}
	}
	in := newInput(newPrometheus(), monitors(newServiceMonitor("team-001", "app-00001", withEndpoints(ep("web"), ep("metrics")))))
	g, err := newGenerator(in)
	if err != nil {
		tb.Fatal(err)
	}
	jobs, _, rej := g.jobs(g.monitors(in, nil, nil)[0])
	if rej != nil || len(jobs) != 2 {
		tb.Fatalf("got %d jobs, rejection %v", len(jobs), rej)
	}
	return jobs
}

func TestEmitTypicalJobs(t *testing.T) {
	if why := checkEmit(t, typicalJobs(t)); why != "" {
		t.Fatal(why)
	}
}

// BenchmarkMarshalJobs: one typical ServiceMonitor's jobs, by yaml.v2 (as marshalJobs did) and
// by marshalJobs now.
func BenchmarkMarshalJobs(b *testing.B) {
	jobs := typicalJobs(b)
	b.Run("yamlv2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			yamlV2Jobs(b, jobs)
		}
	})
	b.Run("emit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalJobs(jobs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
