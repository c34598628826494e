package apply

import "testing"

func TestContains(t *testing.T) {
	cases := []struct {
		name          string
		desired, live map[string]any
		want          bool
	}{
		{"a field the server defaulted is not drift",
			map[string]any{"spec": map[string]any{"replicas": int64(1)}},
			map[string]any{"spec": map[string]any{"replicas": int64(1), "revisionHistoryLimit": int64(10)}}, true},
		{"a changed value is drift",
			map[string]any{"spec": map[string]any{"replicas": int64(1)}},
			map[string]any{"spec": map[string]any{"replicas": int64(5)}}, false},
		{"a canonicalised quantity is not drift",
			map[string]any{"cpu": "0.5"}, map[string]any{"cpu": "500m"}, true},
		{"a list with an extra element is drift",
			map[string]any{"args": []any{"a"}}, map[string]any{"args": []any{"a", "b"}}, false},
		{"a missing empty value is not drift",
			map[string]any{"spec": map[string]any{"selector": map[string]any{}}}, map[string]any{"spec": map[string]any{}}, true},
		{"other owners' references are not drift",
			map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{"uid": "a", "kind": "Prometheus"}}}},
			map[string]any{"metadata": map[string]any{"ownerReferences": []any{
				map[string]any{"uid": "b", "kind": "Prometheus"}, map[string]any{"uid": "a", "kind": "Prometheus"}}}}, true},
		{"a lost owner reference is drift",
			map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{"uid": "a"}}}},
			map[string]any{"metadata": map[string]any{}}, false},
		{"metadata the server sets is ignored",
			map[string]any{"metadata": map[string]any{"name": "x", "labels": map[string]any{"a": "b"}}},
			map[string]any{"metadata": map[string]any{"name": "x", "uid": "u", "labels": map[string]any{"a": "b", "c": "d"}}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := contains(tc.desired, tc.live, ""); got != tc.want {
				t.Errorf("contains = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPruneNilRemovesUnsetFields(t *testing.T) {
	m := map[string]any{"metadata": map[string]any{"creationTimestamp": nil, "name": "x"},
		"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"creationTimestamp": nil}}}}
	pruneNil(m)
	if _, ok := m["metadata"].(map[string]any)["creationTimestamp"]; ok {
		t.Error("creationTimestamp: null was kept")
	}
	if _, ok := m["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["creationTimestamp"]; ok {
		t.Error("nested creationTimestamp: null was kept")
	}
}
