package apply

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// contains reports whether every field set in desired has the same value in
// live. Lists must have the same length, element by element; fields the
// server defaulted are ignored. Of metadata only labels, annotations and
// ownerReferences are compared.
func contains(desired, live any, path string) bool {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, dv := range d {
			if path == "" && (k == "status" || k == "apiVersion" || k == "kind") {
				continue
			}
			if path == "" && k == "metadata" {
				if !metadataMapContains(dv, l[k]) {
					return false
				}
				continue
			}
			lv, ok := l[k]
			if !ok {
				if isEmpty(dv) {
					continue
				}
				return false
			}
			if !contains(dv, lv, path+"."+k) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(d) {
			return false
		}
		for i := range d {
			if !contains(d[i], l[i], path) {
				return false
			}
		}
		return true
	case string:
		l, ok := live.(string)
		if !ok {
			return false
		}
		if d == l {
			return true
		}
		// Quantities come back canonicalised (0.5 → 500m).
		dq, err1 := resource.ParseQuantity(d)
		lq, err2 := resource.ParseQuantity(l)
		return err1 == nil && err2 == nil && dq.Cmp(lq) == 0
	case int64, float64:
		return numEqual(d, live)
	default:
		return fmt.Sprint(desired) == fmt.Sprint(live)
	}
}

func metadataMapContains(desired, live any) bool {
	d, _ := desired.(map[string]any)
	l, _ := live.(map[string]any)
	for _, k := range []string{"labels", "annotations"} {
		if dv, ok := d[k]; ok {
			if !contains(dv, l[k], ".metadata") {
				return false
			}
		}
	}
	// Owner references are a set keyed by UID: a co-owned object carries
	// other owners' references too.
	dr, _ := d["ownerReferences"].([]any)
	lr, _ := l["ownerReferences"].([]any)
	for _, want := range dr {
		wm, _ := want.(map[string]any)
		found := false
		for _, have := range lr {
			hm, _ := have.(map[string]any)
			if hm["uid"] == wm["uid"] && contains(wm, hm, ".metadata.ownerReferences") {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func metadataContains(desired, live metav1.Object) bool {
	labels, annotations := live.GetLabels(), live.GetAnnotations()
	for k, v := range desired.GetLabels() {
		if labels[k] != v {
			return false
		}
	}
	for k, v := range desired.GetAnnotations() {
		if annotations[k] != v {
			return false
		}
	}
	refs := live.GetOwnerReferences()
	for _, want := range desired.GetOwnerReferences() {
		found := false
		for _, have := range refs {
			if have.UID == want.UID {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case float64:
		return x == 0
	}
	return v == nil
}

func numEqual(a, b any) bool {
	return toFloat(a) == toFloat(b)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case int:
		return float64(x)
	case float64:
		return x
	}
	return -1
}
