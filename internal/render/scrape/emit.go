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
	"encoding"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v2"
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

// scalarStyle is how yaml.v2 writes a string.
type scalarStyle uint8

const (
	stylePlain scalarStyle = iota
	styleSingle
	styleDouble
	styleLiteral // "|"
)

// scalarFacts is what yaml.v2's emitter notices in a string before choosing its style.
type scalarFacts struct {
	invalid    bool // not UTF-8
	special    bool // a character yaml.v2 does not print as is
	breaks     bool // \n, \r, NEL, LS or PS
	leadSpace  bool
	leadBreak  bool
	trailSpace bool
	trailBreak bool
	breakSpace bool // a space right after a break
	spaceBreak bool // a break right after a space
	indicator  bool // something that forbids a plain scalar in block context
	spaces     bool
	width      int // in characters
}

// printable is yaml.v2's set of characters written as they are (it uses a UTF-8 output).
func printable(r rune) bool {
	return r == '\n' || r >= 0x20 && r <= 0x7e || r >= 0xa0 && r <= 0xd7ff ||
		r >= 0xe000 && r <= 0xfffd && r != 0xfeff
}

func isBreak(r rune) bool {
	return r == '\n' || r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029
}

// analyze finds in s what yaml.v2's emitter looks at to choose a style, with its own
// definitions (a blank is a space or a tab; "#" is a comment after a blank, a break or NUL).
func analyze(s string) scalarFacts {
	if f, ok := analyzeWord(s); ok {
		return f
	}
	var f scalarFacts
	if len(s) >= 3 && (s[:3] == "---" || s[:3] == "...") {
		f.indicator = true
	}
	prevBlank, prevSpace, prevBreak := true, false, false
	for i := 0; i < len(s); {
		c := s[i]
		r, w := rune(c), 1
		if c >= utf8.RuneSelf {
			r, w = utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && w == 1 {
				f.invalid = true
				return f
			}
		}
		next := i + w
		nextBlank := next >= len(s) || s[next] == ' ' || s[next] == '\t'
		if i == 0 {
			switch c {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				f.indicator = true
			case '?', ':', '-':
				if nextBlank {
					f.indicator = true
				}
			}
		} else {
			switch c {
			case ':':
				if nextBlank {
					f.indicator = true
				}
			case '#':
				if prevBlank {
					f.indicator = true
				}
			}
		}
		if !printable(r) {
			f.special = true
		}
		brk := isBreak(r)
		switch {
		case c == ' ':
			f.spaces = true
			f.leadSpace = f.leadSpace || i == 0
			f.trailSpace = next == len(s)
			f.breakSpace = f.breakSpace || prevBreak
			prevSpace, prevBreak = true, false
		case brk:
			f.breaks = true
			f.leadBreak = f.leadBreak || i == 0
			f.trailBreak = next == len(s)
			f.spaceBreak = f.spaceBreak || prevSpace
			prevSpace, prevBreak = false, true
		default:
			prevSpace, prevBreak = false, false
		}
		prevBlank = c == ' ' || c == '\t' || c == 0 || brk
		f.width++
		i = next
	}
	return f
}

// analyzeWord is analyze for the common case, printable ASCII without spaces: no character
// then is special or a break, a '#' is never after a blank and a ':' or a lone '?' or '-' is
// followed by one only at the end.
func analyzeWord(s string) (scalarFacts, bool) {
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return scalarFacts{}, false
		}
	}
	f := scalarFacts{width: len(s)}
	if s == "" {
		return f, true
	}
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		f.indicator = true
	case '?', '-':
		f.indicator = len(s) == 1
	}
	if s[len(s)-1] == ':' || len(s) >= 3 && (s[:3] == "---" || s[:3] == "...") {
		f.indicator = true
	}
	return f, true
}

// style is the style yaml.v2 writes s in, given its facts, as a block value or as a simple key.
func (f *scalarFacts) style(s string, key bool) scalarStyle {
	var st scalarStyle
	switch {
	case strings.Contains(s, "\n"):
		st = styleLiteral
	case plainIsString(s):
		st = stylePlain
	default:
		st = styleDouble
	}
	if s == "" {
		return st // double-quoted: "" reads as null
	}
	if key && f.breaks {
		st = styleDouble
	}
	if st == stylePlain && (f.leadSpace || f.leadBreak || f.trailSpace || f.trailBreak || f.breakSpace ||
		f.spaceBreak || f.special || f.breaks || f.indicator) {
		st = styleSingle
	}
	if st == styleSingle && (f.breakSpace || f.spaceBreak || f.special) {
		st = styleDouble
	}
	if st == styleLiteral && (key || f.trailSpace || f.spaceBreak || f.special) {
		st = styleDouble
	}
	return st
}

// valueString writes a string after "key:" or "-"; foldIndent indents the lines it folds into.
func (e *emitter) valueString(s string, foldIndent int) bool {
	f := analyze(s)
	if f.invalid {
		return e.giveUp("a string that is not UTF-8 (a !!binary for yaml.v2)")
	}
	st := f.style(s, false)
	if st == styleLiteral {
		e.literal(s, foldIndent)
		return true
	}
	e.indicator(' ')
	e.scalar(s, &f, st, foldIndent, true)
	return true
}

// keyString writes a map key at the start of its line.
func (e *emitter) keyString(s string) bool {
	f := analyze(s)
	switch {
	case f.invalid:
		return e.giveUp("a map key that is not UTF-8")
	case f.breaks || len(s) > maxSimpleKey:
		return e.giveUp("a map key that cannot be a simple key")
	}
	e.scalar(s, &f, f.style(s, true), 0, false)
	return true
}

// scalar writes s in style st. Where fold is set, a space found past column 80 becomes a line
// break indented to foldIndent, as in yaml.v2 (which folds neither keys nor short scalars).
func (e *emitter) scalar(s string, f *scalarFacts, st scalarStyle, foldIndent int, fold bool) {
	fold = fold && f.spaces
	// Only a space past the width folds. Doubled quotes and escapes aside, the last character
	// lands at column e.col+f.width (after an opening quote): below the width, none can.
	short := !fold || e.col+f.width+1 <= foldWidth
	switch st {
	case stylePlain:
		if short {
			e.buf = append(e.buf, s...)
			e.col += f.width
			return
		}
		e.plainFolded(s, foldIndent)
	case styleSingle:
		e.indicator('\'')
		if short && !f.breaks && strings.IndexByte(s, '\'') < 0 {
			e.buf = append(e.buf, s...)
			e.col += f.width
		} else {
			e.singleBody(s, foldIndent, fold)
		}
		e.indicator('\'')
	case styleDouble:
		e.indicator('"')
		e.doubleBody(s, foldIndent, fold)
		e.indicator('"')
	default:
		panic("scrape: a literal block is written by literal")
	}
}

// plainFolded writes a plain scalar that may fold: at a space past the width that neither
// follows nor precedes another space.
func (e *emitter) plainFolded(s string, foldIndent int) {
	afterSpace := false
	for i := 0; i < len(s); {
		_, w := utf8.DecodeRuneInString(s[i:])
		if s[i] == ' ' {
			if !afterSpace && e.col > foldWidth && !(i+1 < len(s) && s[i+1] == ' ') {
				e.newline(foldIndent)
			} else {
				e.indicator(' ')
			}
			afterSpace = true
		} else {
			e.buf = append(e.buf, s[i:i+w]...)
			e.col++
			afterSpace = false
		}
		i += w
	}
}

// singleBody writes the inside of a single-quoted scalar: quotes doubled, folded at a space past
// the width that is neither the first nor the last character nor followed by a space. A line
// or paragraph separator is written as it is and ends the line; the next character is indented.
func (e *emitter) singleBody(s string, foldIndent int, fold bool) {
	afterSpace, afterBreak := false, false
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == ' ':
			if fold && !afterSpace && e.col > foldWidth && i > 0 && i < len(s)-1 && s[i+1] != ' ' {
				e.newline(foldIndent)
			} else {
				e.indicator(' ')
			}
			afterSpace = true
		case isBreak(r):
			if r == '\n' {
				if !afterBreak {
					e.buf = append(e.buf, '\n') // a line feed is folded: it takes an empty line
				}
				e.buf = append(e.buf, '\n')
			} else {
				e.buf = append(e.buf, s[i:i+w]...)
			}
			e.col = 0
			afterBreak = true
		default:
			if afterBreak {
				e.pad(foldIndent)
			}
			if r == '\'' {
				e.buf = append(e.buf, '\'')
				e.col++
			}
			e.buf = append(e.buf, s[i:i+w]...)
			e.col++
			afterSpace, afterBreak = false, false
		}
		i += w
	}
}

// literal writes a literal block ("|"): an indentation hint when the first line starts with a
// space or a break, "-" to strip a missing final break, "+" to keep more than one; then every
// line as it is, indented, empty lines left empty.
func (e *emitter) literal(s string, indent int) {
	e.buf = append(e.buf, " |"...)
	e.col += 2
	if first, _ := utf8.DecodeRuneInString(s); first == ' ' || isBreak(first) {
		e.indicator('2')
	}
	last, w := utf8.DecodeLastRuneInString(s)
	switch {
	case !isBreak(last):
		e.indicator('-')
	case w == len(s):
		e.indicator('+')
	default:
		if prev, _ := utf8.DecodeLastRuneInString(s[:len(s)-w]); isBreak(prev) {
			e.indicator('+')
		}
	}
	e.buf = append(e.buf, '\n')
	e.col = 0
	afterBreak := true
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if isBreak(r) {
			e.buf = append(e.buf, s[i:i+w]...)
			e.col = 0
			afterBreak = true
		} else {
			if afterBreak {
				e.pad(indent)
			}
			e.buf = append(e.buf, s[i:i+w]...)
			e.col++
			afterBreak = false
		}
		i += w
	}
	e.lineDone = afterBreak
}

const hexDigits = "0123456789ABCDEF"

// doubleBody writes the inside of a double-quoted scalar with yaml.v2's escapes, folded at a
// space past the width that is neither the first nor the last character; a space right after
// the fold is kept by a backslash.
func (e *emitter) doubleBody(s string, foldIndent int, fold bool) {
	bom := strings.HasPrefix(s, "\ufeff") // yaml.v2 then escapes every character
	afterSpace := false
	for i := 0; i < len(s); {
		r, w := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case bom || !printable(r) || isBreak(r) || r == '"' || r == '\\':
			n := len(e.buf)
			e.buf = appendEscape(e.buf, r)
			e.col += len(e.buf) - n
			afterSpace = false
		case r == ' ':
			if fold && !afterSpace && e.col > foldWidth && i > 0 && i < len(s)-1 {
				e.newline(foldIndent)
				if s[i+1] == ' ' {
					e.indicator('\\')
				}
			} else {
				e.indicator(' ')
			}
			afterSpace = true
		default:
			e.buf = append(e.buf, s[i:i+w]...)
			e.col++
			afterSpace = false
		}
		i += w
	}
}

// shortEscapes are the characters yaml.v2 writes as a backslash and one character.
var shortEscapes = map[rune]byte{
	0: '0', 0x07: 'a', 0x08: 'b', '\t': 't', '\n': 'n', 0x0b: 'v', 0x0c: 'f', '\r': 'r',
	0x1b: 'e', '"': '"', '\\': '\\', 0x85: 'N', 0xa0: '_', 0x2028: 'L', 0x2029: 'P',
}

func appendEscape(b []byte, r rune) []byte {
	b = append(b, '\\')
	if c, ok := shortEscapes[r]; ok {
		return append(b, c)
	}
	digits := 8
	switch {
	case r <= 0xff:
		b, digits = append(b, 'x'), 2
	case r <= 0xffff:
		b, digits = append(b, 'u'), 4
	default:
		b = append(b, 'U')
	}
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[(r>>shift)&0xf])
	}
	return b
}

// plainIsString reports whether yaml.v2 reads s, unquoted, back as a string (and so lets it be
// written plain): not null, a bool, an int, a float, a timestamp, nor a base 60 float, in YAML
// 1.1 as yaml.v2 resolves them.
func plainIsString(s string) bool {
	if s == "" {
		return false
	}
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"true", "True", "TRUE", "false", "False", "FALSE",
		"on", "On", "ON", "off", "Off", "OFF",
		"~", "null", "Null", "NULL",
		".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
		"+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return false
	}
	switch c := s[0]; {
	case c == '.':
		_, err := strconv.ParseFloat(s, 64)
		return err != nil
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		return !isTimestamp(s) && !isNumber(s) && !isBase60(s)
	}
	// Anything else yaml.v2 takes for a string without looking further (so "<<" too).
	return true
}

// Timestamps yaml.v2 recognises (a subset of YAML 1.1's).
var timestampLayouts = [...]string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

func isTimestamp(s string) bool {
	// All of them start with four digits and a dash.
	if len(s) < 5 || s[4] != '-' {
		return false
	}
	for i := range 4 {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	for _, layout := range timestampLayouts {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

var (
	yamlFloat  = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	yamlBase60 = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)
)

// isNumber reports whether yaml.v2 resolves s (starting with a sign or a digit) to an int or a
// float: underscores dropped, an integer in Go's base-prefixed syntax, a YAML float, or 0b/-0b
// binary.
func isNumber(s string) bool {
	// Those only use these characters: "30s", "1m" or "10MB" are strings at once.
	for i := range len(s) {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F',
			c == 'x', c == 'X', c == 'o', c == 'O', c == '_', c == '+', c == '-', c == '.':
		default:
			return false
		}
	}
	plain := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return true
	}
	if yamlFloat.MatchString(plain) {
		if _, err := strconv.ParseFloat(plain, 64); err == nil {
			return true
		}
	}
	if digits, ok := strings.CutPrefix(plain, "0b"); ok {
		if _, err := strconv.ParseInt(digits, 2, 64); err == nil {
			return true
		}
		_, err := strconv.ParseUint(digits, 2, 64)
		return err == nil
	}
	if digits, ok := strings.CutPrefix(plain, "-0b"); ok {
		_, err := strconv.ParseInt("-"+digits, 2, 64)
		return err == nil
	}
	return false
}

// isBase60 reports a YAML 1.1 sexagesimal float ("1:30"), which yaml.v2 quotes.
func isBase60(s string) bool {
	return strings.IndexByte(s, ':') >= 0 && yamlBase60.MatchString(s)
}

// keyLess is the order yaml.v2 writes string map keys in: character by character; at the first
// difference two letters compare as code points and a letter goes after anything else;
// otherwise the runs of digits starting there compare as numbers (a '0' continuing a number
// that already has a non-zero digit counts, leading zeros otherwise do not), then by their
// length, then the two characters as code points. A key that is a prefix of the other goes first.
func keyLess(a, b string) bool {
	nonZero := false // the digits right before the current character include one other than '0'
	for a != "" && b != "" {
		ra, wa := utf8.DecodeRuneInString(a)
		rb, wb := utf8.DecodeRuneInString(b)
		if ra == rb {
			if unicode.IsDigit(ra) {
				nonZero = nonZero || ra != '0'
			} else {
				nonZero = false
			}
			a, b = a[wa:], b[wb:]
			continue
		}
		la, lb := unicode.IsLetter(ra), unicode.IsLetter(rb)
		if la && lb {
			return ra < rb
		}
		if la || lb {
			return lb
		}
		var seed int64
		if nonZero && (ra == '0' || rb == '0') {
			seed = 1
		}
		na, da := digitRun(seed, a)
		nb, db := digitRun(seed, b)
		if na != nb {
			return na < nb
		}
		if da != db {
			return da < db
		}
		return ra < rb
	}
	return utf8.RuneCountInString(a) < utf8.RuneCountInString(b)
}

// digitRun reads the digits s starts with into n (as yaml.v2 does: any Unicode digit, its
// value taken as its distance from '0', overflowing as int64 does) and counts them.
func digitRun(n int64, s string) (int64, int) {
	count := 0
	for _, r := range s {
		if !unicode.IsDigit(r) {
			break
		}
		n = n*10 + int64(r-'0')
		count++
	}
	return n, count
}

// isZero is yaml.v2's test for omitempty.
func isZero(p *typePlan, v reflect.Value) bool {
	switch p.kind {
	case kindString, kindSlice, kindMap:
		return v.Len() == 0
	case kindBool:
		return !v.Bool()
	case kindInt:
		return v.Int() == 0
	case kindUint:
		return v.Uint() == 0
	case kindFloat:
		return v.Float() == 0
	case kindPtr:
		return v.IsNil()
	case kindStruct:
		for _, f := range p.zero {
			if !isZero(f.plan, v.Field(f.index)) {
				return false
			}
		}
		return true
	}
	panic(fmt.Sprintf("scrape: emitter plan of kind %d", p.kind))
}

type planKind uint8

const (
	kindString planKind = iota + 1
	kindBool
	kindInt
	kindUint
	kindFloat
	kindPtr
	kindSlice
	kindMap
	kindStruct
)

// typePlan is how one Go type is written.
type typePlan struct {
	kind   planKind
	bits   int         // kindFloat: 32 or 64
	elem   *typePlan   // kindPtr: the pointee; kindSlice: an item; kindMap: a value
	fields []fieldPlan // kindStruct: the keys written, in order, inlined structs flattened
	zero   []zeroField // kindStruct used with omitempty: every exported field, as yaml.v2 checks
}

type fieldPlan struct {
	index     []int  // the field, through inlined structs
	key       string // as written at the start of a line
	keyWidth  int
	omitEmpty bool
	plan      *typePlan
}

type zeroField struct {
	index int
	plan  *typePlan
}

type planResult struct {
	plan *typePlan
	err  error
}

var plans sync.Map // reflect.Type → planResult

// planOf returns the plan of t, computed once.
func planOf(t reflect.Type) (*typePlan, error) {
	if r, ok := plans.Load(t); ok {
		return r.(planResult).plan, r.(planResult).err
	}
	b := planBuilder{done: map[reflect.Type]*typePlan{}, zeroDone: map[reflect.Type]bool{}}
	p, err := b.plan(t)
	r, _ := plans.LoadOrStore(t, planResult{plan: p, err: err})
	return r.(planResult).plan, r.(planResult).err
}

type planBuilder struct {
	done     map[reflect.Type]*typePlan
	zeroDone map[reflect.Type]bool
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	durationType  = reflect.TypeFor[time.Duration]()
	mapItemType   = reflect.TypeFor[yaml.MapItem]()
	yamlMarshaler = reflect.TypeFor[yaml.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	zeroer        = reflect.TypeFor[yaml.IsZeroer]()
	jsonNumber    = reflect.TypeFor[interface {
		Float64() (float64, error)
		Int64() (int64, error)
		String() string
	}]()
)

// special reports a type yaml.v2 writes some other way than by its kind.
func special(t reflect.Type) string {
	switch t {
	case timeType, durationType, mapItemType:
		return "yaml.v2 writes " + t.String() + " its own way"
	}
	for _, x := range []reflect.Type{t, reflect.PointerTo(t)} {
		for _, i := range []reflect.Type{yamlMarshaler, textMarshaler, zeroer, jsonNumber} {
			if x.Implements(i) {
				return x.String() + " implements " + i.String()
			}
		}
	}
	return ""
}

func (b *planBuilder) plan(t reflect.Type) (*typePlan, error) {
	if p, ok := b.done[t]; ok {
		return p, nil
	}
	if why := special(t); why != "" {
		return nil, fmt.Errorf("%s: %s", t, why)
	}
	p := &typePlan{}
	b.done[t] = p
	var err error
	switch t.Kind() {
	case reflect.String:
		p.kind = kindString
	case reflect.Bool:
		p.kind = kindBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		p.kind = kindInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		p.kind = kindUint
	case reflect.Float32, reflect.Float64:
		p.kind, p.bits = kindFloat, t.Bits()
	case reflect.Pointer:
		p.kind = kindPtr
		p.elem, err = b.plan(t.Elem())
	case reflect.Slice:
		p.kind = kindSlice
		p.elem, err = b.plan(t.Elem())
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%s: map keys other than strings", t)
		}
		if why := special(t.Key()); why != "" {
			return nil, fmt.Errorf("%s: %s", t, why)
		}
		p.kind = kindMap
		p.elem, err = b.plan(t.Elem())
	case reflect.Struct:
		p.kind = kindStruct
		p.fields, err = b.fields(t, nil, map[string]bool{})
	default:
		return nil, fmt.Errorf("%s: kind %s is not written by this emitter", t, t.Kind())
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// fields lists the keys of struct t as yaml.v2 does (its field order, inlined structs in place),
// under the index path at.
func (b *planBuilder) fields(t reflect.Type, at []int, keys map[string]bool) ([]fieldPlan, error) {
	var out []fieldPlan
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() && !sf.Anonymous {
			continue
		}
		tag := sf.Tag.Get("yaml")
		if tag == "" && !strings.Contains(string(sf.Tag), ":") {
			tag = string(sf.Tag)
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		var omitEmpty, inline bool
		if opts != "" {
			for o := range strings.SplitSeq(opts, ",") {
				switch o {
				case "omitempty":
					omitEmpty = true
				case "inline":
					inline = true
				default:
					return nil, fmt.Errorf("%s.%s: tag option %q is not written by this emitter", t, sf.Name, o)
				}
			}
		}
		if sf.Anonymous && (!inline || !sf.IsExported()) {
			return nil, fmt.Errorf("%s.%s: embedded fields are written by this emitter only when exported and inlined", t, sf.Name)
		}
		index := append(slices.Clip(at), i)
		if inline {
			if sf.Type.Kind() != reflect.Struct {
				return nil, fmt.Errorf("%s.%s: only structs are inlined by this emitter", t, sf.Name)
			}
			if why := special(sf.Type); why != "" {
				return nil, fmt.Errorf("%s.%s: %s", t, sf.Name, why)
			}
			inner, err := b.fields(sf.Type, index, keys)
			if err != nil {
				return nil, err
			}
			out = append(out, inner...)
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		if keys[name] {
			return nil, fmt.Errorf("%s: duplicated key %q", t, name)
		}
		keys[name] = true
		key, err := renderKey(name)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t, sf.Name, err)
		}
		fp, err := b.plan(sf.Type)
		if err != nil {
			return nil, err
		}
		if omitEmpty && fp.kind == kindStruct {
			if err := b.zeroFields(sf.Type, fp); err != nil {
				return nil, err
			}
		}
		out = append(out, fieldPlan{index: index, key: key, keyWidth: utf8.RuneCountInString(key), omitEmpty: omitEmpty, plan: fp})
	}
	return out, nil
}

// zeroFields prepares struct plan p for omitempty: yaml.v2 finds a struct empty when each of
// its exported fields is.
func (b *planBuilder) zeroFields(t reflect.Type, p *typePlan) error {
	if b.zeroDone[t] {
		return nil
	}
	b.zeroDone[t] = true
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		fp, err := b.plan(sf.Type)
		if err != nil {
			return fmt.Errorf("%s.%s (omitempty): %w", t, sf.Name, err)
		}
		if fp.kind == kindStruct {
			if err := b.zeroFields(sf.Type, fp); err != nil {
				return err
			}
		}
		p.zero = append(p.zero, zeroField{index: i, plan: fp})
	}
	return nil
}

// renderKey writes a struct field's key as yaml.v2 would.
func renderKey(name string) (string, error) {
	e := emitter{}
	if !e.keyString(name) {
		return "", fmt.Errorf("key %q: %s", name, e.why)
	}
	return string(e.buf), nil
}
