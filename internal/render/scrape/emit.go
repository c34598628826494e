package scrape

// An emitter of block YAML that writes the generated jobs straight into a byte slice, giving
// the very bytes go.yaml.in/yaml/v2's Marshal gives for them. yaml.v2's emitter keeps an event
// per node: marshalling the jobs with it was the largest cost of a cold render.
//
// It is driven by reflection: each Go type gets a plan (its kind, its fields in order with their
// keys, omitempty and inlined structs flattened) computed once and cached, so a field added to
// job.go is written like any other without touching this file. A type the plan cannot describe
// exactly (an interface, a custom marshaller, a flow or inline-map tag, ...) makes the plan fail:
// emitJobs then leaves the jobs to yaml.v2, and emit_test.go fails on it.
//
// Scalars follow yaml.v2's choices. A string is written plain when yaml.v2 would read it back as
// a string and nothing in it is an indicator; single-quoted when only an indicator, a leading or
// trailing space or a line separator forbids plain; double-quoted when it would resolve to
// something else (a bool, a number, null, a timestamp) or holds a character that needs escaping;
// as a literal block ("|") when it has a line feed and nothing that forbids one (a PEM
// certificate). Long quoted and plain scalars are folded at a space past column 80, as yaml.v2
// does. What this emitter does not write itself is left to yaml.v2 for the whole monitor:
// invalid UTF-8 (a !!binary), a map key that cannot be a simple key (multi-line or over 128
// bytes), and map keys that yaml.v2's key order ranks in a cycle (yaml.v2's own output then
// depends on the map's iteration order) or too many of them to check.

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
)

const (
	// yaml.v2 folds a scalar at a space once the column is past this width.
	foldWidth = 80
	// The longest key yaml.v2 writes as a simple key ("key: value").
	maxSimpleKey = 128
	// Map keys beyond this many are left to yaml.v2 rather than checked pair by pair.
	maxCheckedKeys = 128
)

// emitJobs writes jobs as the items of the top-level scrape_configs sequence, as marshalJobs
// returns them. ok is false when the jobs hold something this emitter leaves to yaml.v2.
func emitJobs(jobs []*scrapeJob) (out []byte, ok bool) {
	out, why := emitSequence(reflect.ValueOf(jobs))
	return out, why == ""
}

// emitSequence writes the items of slice v as yaml.v2 writes them under a top-level key
// ("scrape_configs:\n" and what follows it), or tells why it leaves them to yaml.v2.
func emitSequence(v reflect.Value) ([]byte, string) {
	p, err := planOf(v.Type())
	if err != nil {
		return nil, "plan: " + err.Error()
	}
	if p.kind != kindSlice || v.Len() == 0 {
		return nil, "not a sequence with items" // yaml.v2 writes "key: []" on the key's line
	}
	// The emitter lives on the stack (its buffer is pooled): appending to it then needs no write
	// barrier.
	pooled := bufPool.Get().(*[]byte)
	e := emitter{buf: (*pooled)[:0]}
	for i := range v.Len() {
		if i > 0 {
			e.newline(0)
		}
		e.indicator('-')
		if !e.node(p.elem, v.Index(i), true, 0) {
			putBuf(pooled, e.buf)
			return nil, e.why
		}
	}
	if !e.lineDone {
		e.buf = append(e.buf, '\n')
	}
	out := make([]byte, len(e.buf))
	copy(out, e.buf)
	putBuf(pooled, e.buf)
	return out, ""
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func putBuf(p *[]byte, b []byte) {
	if cap(b) <= 1<<20 { // one huge monitor does not keep its buffer in the pool
		*p = b
		bufPool.Put(p)
	}
}

// emitter writes block YAML. col counts the characters on the current line the way yaml.v2
// counts its column, which decides where it folds long scalars.
type emitter struct {
	buf []byte
	col int
	// A literal block ending in a line break has ended its line: yaml.v2 starts the next key or
	// item on the line after it, without writing a break of its own.
	lineDone bool
	why      string // set when giving up: what yaml.v2 must write instead
}

func (e *emitter) giveUp(why string) bool {
	e.why = why
	return false
}

const spaces = "                                                                                "

// newline starts a line indented by indent spaces.
func (e *emitter) newline(indent int) {
	if e.lineDone {
		e.lineDone = false
	} else {
		e.buf = append(e.buf, '\n')
		e.col = 0
	}
	e.pad(indent)
}

// pad writes spaces up to column indent.
func (e *emitter) pad(indent int) {
	for e.col < indent {
		n := min(indent-e.col, len(spaces))
		e.buf = append(e.buf, spaces[:n]...)
		e.col += n
	}
}

func (e *emitter) indicator(c byte) {
	e.buf = append(e.buf, c)
	e.col++
}

// word writes a space and an ASCII plain scalar that cannot fold (no spaces in it).
func (e *emitter) word(s string) {
	e.buf = append(e.buf, ' ')
	e.buf = append(e.buf, s...)
	e.col += 1 + len(s)
}

// node writes v after a "key:" (item false) or a "-" (item true). indent is the indentation of
// the mapping holding the key, or of the sequence holding the item.
func (e *emitter) node(p *typePlan, v reflect.Value, item bool, indent int) bool {
	for p.kind == kindPtr {
		if v.IsNil() {
			e.word("null")
			return true
		}
		p, v = p.elem, v.Elem()
	}
	switch p.kind {
	case kindString:
		return e.valueString(v.String(), indent+2)
	case kindBool:
		if v.Bool() {
			e.word("true")
		} else {
			e.word("false")
		}
	case kindInt:
		e.buf = append(e.buf, ' ')
		n := len(e.buf)
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
		e.col += 1 + len(e.buf) - n
	case kindUint:
		e.buf = append(e.buf, ' ')
		n := len(e.buf)
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
		e.col += 1 + len(e.buf) - n
	case kindFloat:
		e.word(formatFloat(v.Float(), p.bits))
	case kindSlice:
		return e.sequence(p, v, item, indent)
	case kindMap:
		return e.mapping(p, v, item, indent)
	case kindStruct:
		return e.structure(p, v, item, indent)
	default:
		panic(fmt.Sprintf("scrape: emitter plan of kind %d", p.kind))
	}
	return true
}

// formatFloat writes a float as yaml.v2 does.
func formatFloat(f float64, bits int) string {
	s := strconv.FormatFloat(f, 'g', -1, bits)
	switch s {
	case "+Inf":
		return ".inf"
	case "-Inf":
		return "-.inf"
	case "NaN":
		return ".nan"
	}
	return s
}

// flow writes an empty collection in flow style, " []" or " {}".
func (e *emitter) flow(s string) {
	e.buf = append(e.buf, s...)
	e.col += len(s)
}

// sequence writes a block sequence: under a key it is not indented ("key:\n- a"); as an item of
// another sequence its first item starts on the same line ("- - a").
func (e *emitter) sequence(p *typePlan, v reflect.Value, item bool, indent int) bool {
	n := v.Len()
	if n == 0 {
		e.flow(" []")
		return true
	}
	if item {
		indent += 2
	}
	for i := range n {
		e.startEntry(indent, item && i == 0)
		e.indicator('-')
		if !e.node(p.elem, v.Index(i), true, indent) {
			return false
		}
	}
	return true
}

// startEntry moves to where the next key or item of a collection at indent begins: the first of
// one that is itself an item goes on the line of its "-".
func (e *emitter) startEntry(indent int, sameLine bool) {
	if sameLine {
		e.pad(indent)
	} else {
		e.newline(indent)
	}
}

func (e *emitter) structure(p *typePlan, v reflect.Value, item bool, indent int) bool {
	inner := indent + 2
	first := true
	for i := range p.fields {
		f := &p.fields[i]
		fv := v.Field(f.index[0])
		for _, x := range f.index[1:] {
			fv = fv.Field(x)
		}
		if f.omitEmpty && isZero(f.plan, fv) {
			continue
		}
		e.startEntry(inner, item && first)
		first = false
		e.buf = append(e.buf, f.key...)
		e.col += f.keyWidth
		e.indicator(':')
		if !e.node(f.plan, fv, false, inner) {
			return false
		}
	}
	if first {
		e.flow(" {}")
	}
	return true
}

func (e *emitter) mapping(p *typePlan, v reflect.Value, item bool, indent int) bool {
	n := v.Len()
	if n == 0 {
		e.flow(" {}")
		return true
	}
	if n > maxCheckedKeys {
		return e.giveUp("a map of more than " + strconv.Itoa(maxCheckedKeys) + " keys")
	}
	keys := v.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int {
		switch x, y := a.String(), b.String(); {
		case keyLess(x, y):
			return -1
		case keyLess(y, x):
			return 1
		}
		return 0
	})
	// yaml.v2 sorts with a comparison that is not transitive for every set of keys (it compares
	// runs of digits as numbers); on such a set its order depends on the map's iteration order.
	// Every pair must agree with the order found for it to be the one yaml.v2 finds.
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if !keyLess(keys[i].String(), keys[j].String()) {
				return e.giveUp("map keys yaml.v2 does not order consistently")
			}
		}
	}
	inner := indent + 2
	for i, k := range keys {
		e.startEntry(inner, item && i == 0)
		if !e.keyString(k.String()) {
			return false
		}
		e.indicator(':')
		if !e.node(p.elem, v.MapIndex(k), false, inner) {
			return false
		}
	}
	return true
}
