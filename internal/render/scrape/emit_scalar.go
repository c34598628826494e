package scrape

// How the emitter writes one string: the style yaml.v2 would choose for it (plain, single-
// or double-quoted, literal) and that style's body, folded as yaml.v2 folds it.

import (
	"strings"
	"unicode/utf8"
)

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
