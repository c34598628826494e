package prometheus

import (
	"reflect"
	"testing"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

func TestRBACCacheHandsBackTheSameObjectsUntilAnInputChanges(t *testing.T) {
	p := newPrometheus()
	cache := &RBACCache{}
	render := func(o Options) []workload.Object {
		t.Helper()
		objs, err := Objects(p, o)
		if err != nil {
			t.Fatal(err)
		}
		uncached, err := Objects(p, func() Options { o.RBAC = nil; return o }())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(objs, uncached) {
			t.Fatal("objects rendered with the RBAC cache differ from objects rendered without it")
		}
		return objs
	}
	rbacOf := func(objs []workload.Object) map[string]workload.Object {
		out := map[string]workload.Object{}
		for _, o := range objs {
			if k := o.GetObjectKind().GroupVersionKind().Kind; k == "Role" || k == "RoleBinding" {
				out[k+"/"+o.GetNamespace()] = o
			}
		}
		return out
	}
	o := newOptions(discoveringIn("monitoring", "a", "b"))
	o.RBAC = cache
	first := rbacOf(render(o))
	again := rbacOf(render(o))
	if len(first) != 6 {
		t.Fatalf("%d RBAC objects, want 6", len(first))
	}
	for k, obj := range first {
		if again[k] != obj {
			t.Errorf("%s built again although nothing changed", k)
		}
	}
	o.DiscoveryNamespaces = []string{"monitoring", "a", "b", "c"}
	more := rbacOf(render(o))
	if len(more) != 8 || more["Role/a"] == first["Role/a"] {
		t.Errorf("a new namespace: %d objects, rebuilt %v", len(more), more["Role/a"] != first["Role/a"])
	}
	p.UID = "another"
	if rbacOf(render(o))["Role/monitoring"] == more["Role/monitoring"] {
		t.Error("a new UID (owner references) did not rebuild the objects")
	}
}
