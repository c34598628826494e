package scrape

// What yaml.v2 reads a plain scalar back as (YAML 1.1 nulls, bools, numbers, timestamps), and
// the order in which it sorts map keys.

import (
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

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
