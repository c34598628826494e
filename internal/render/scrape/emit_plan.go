package scrape

// The emitter's plans: how each Go type is written (its kind, its fields and keys in order,
// omitempty), computed once per type by reflection and cached.

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v2"
)

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
