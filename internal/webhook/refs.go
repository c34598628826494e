package webhook

import (
	"reflect"
	"strings"

	monitoringv1beta1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	secretKeySelectorType        = reflect.TypeFor[corev1.SecretKeySelector]()
	configMapKeySelectorType     = reflect.TypeFor[corev1.ConfigMapKeySelector]()
	v1beta1SecretKeySelectorType = reflect.TypeFor[monitoringv1beta1.SecretKeySelector]()
)

// maxRefDepth bounds the walk; the API types are trees far shallower.
const maxRefDepth = 32

// validateKeySelectors finds every Secret and ConfigMap key selector under
// v (a spec) and checks that each names an object and a key. A selector the
// user set through a pointer must be complete; one embedded by value is
// unset when both fields are empty (such fields are optional in the API).
// Walking the types instead of listing fields covers the dozens of places
// (auth, TLS, OAuth2, every service discovery, every receiver) at once, and
// the ones added with the next API version.
func validateKeySelectors(path *field.Path, v any) field.ErrorList {
	var errs field.ErrorList
	walkKeySelectors(path, reflect.ValueOf(v), false, 0, &errs)
	return errs
}

func walkKeySelectors(path *field.Path, v reflect.Value, viaPointer bool, depth int, errs *field.ErrorList) {
	if depth > maxRefDepth {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkKeySelectors(path, v.Elem(), true, depth+1, errs)
		}
		return
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkKeySelectors(path.Index(i), v.Index(i), false, depth+1, errs)
		}
		return
	case reflect.Struct:
	default:
		return
	}

	switch v.Type() {
	case secretKeySelectorType:
		s := v.Interface().(corev1.SecretKeySelector)
		checkKeySelector(path, "Secret", s.Name, s.Key, viaPointer, errs)
		return
	case v1beta1SecretKeySelectorType:
		s := v.Interface().(monitoringv1beta1.SecretKeySelector)
		checkKeySelector(path, "Secret", s.Name, s.Key, viaPointer, errs)
		return
	case configMapKeySelectorType:
		s := v.Interface().(corev1.ConfigMapKeySelector)
		checkKeySelector(path, "ConfigMap", s.Name, s.Key, viaPointer, errs)
		return
	}

	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		child := path
		if name != "" {
			child = path.Child(name)
		} else if !f.Anonymous {
			continue
		}
		walkKeySelectors(child, v.Field(i), false, depth+1, errs)
	}
}

func checkKeySelector(path *field.Path, kind, name, key string, set bool, errs *field.ErrorList) {
	if !set && name == "" && key == "" {
		return
	}
	if name == "" {
		*errs = append(*errs, field.Required(path.Child("name"), "the name of the "+kind))
	} else if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		*errs = append(*errs, field.Invalid(path.Child("name"), name, strings.Join(msgs, "; ")))
	}
	if key == "" {
		*errs = append(*errs, field.Required(path.Child("key"), "the key in the "+kind))
	} else if msgs := validation.IsConfigMapKey(key); len(msgs) > 0 {
		*errs = append(*errs, field.Invalid(path.Child("key"), key, strings.Join(msgs, "; ")))
	}
}

// forEachChild calls fn with a pointer to every field (named by its JSON
// name; an embedded struct keeps the parent's path) or element of v, which
// must be a pointer to a struct or a slice. Nil pointers are skipped.
func forEachChild(p *field.Path, v any, fn func(*field.Path, any)) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return
		}
		rv = rv.Elem()
	}
	child := func(cp *field.Path, f reflect.Value) {
		switch {
		case f.Kind() == reflect.Pointer:
			if !f.IsNil() {
				fn(cp, f.Interface())
			}
		case f.CanAddr():
			fn(cp, f.Addr().Interface())
		default:
			fn(cp, f.Interface())
		}
	}
	switch rv.Kind() {
	case reflect.Struct:
		t := rv.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
			case name != "":
				child(p.Child(name), rv.Field(i))
			case f.Anonymous:
				child(p, rv.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len(); i++ {
			child(p.Index(i), rv.Index(i))
		}
	}
}

// invalid reports a problem of a whole object or of a combination of its
// fields, where no single value is the culprit.
func invalid(path *field.Path, detail string) *field.Error {
	return field.Invalid(path, field.OmitValueType{}, detail)
}
