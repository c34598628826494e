package controller

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestApplyStagesKeepsTheOrderThatMatters: within a namespace and from one API group to
// the next the order is kept; namespaces of one group overlap.
func TestApplyStagesKeepsTheOrderThatMatters(t *testing.T) {
	obj := func(o client.Object, kind, apiVersion, ns, name string) client.Object {
		o.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
		o.SetNamespace(ns)
		o.SetName(name)
		return o
	}
	objs := []client.Object{
		obj(&corev1.Secret{}, "Secret", "v1", "mon", "piece-0"),
		obj(&corev1.Secret{}, "Secret", "v1", "mon", "config"),
		obj(&corev1.ServiceAccount{}, "ServiceAccount", "v1", "mon", "sa"),
	}
	const namespaces = 40
	for i := range namespaces {
		ns := string(rune('a'+i%26)) + string(rune('a'+i/26))
		objs = append(objs,
			obj(&rbacv1.Role{}, "Role", "rbac.authorization.k8s.io/v1", ns, "r"),
			obj(&rbacv1.RoleBinding{}, "RoleBinding", "rbac.authorization.k8s.io/v1", ns, "r"))
	}
	objs = append(objs, obj(&corev1.Service{}, "Service", "v1", "mon", "svc"))

	// The Roles of the first applyParallelism namespaces wait until all of them are in
	// flight: with fewer workers they would wait forever, hence the deadline.
	var mu sync.Mutex
	var done []int
	entered := 0
	full := make(chan struct{})
	applyStages(objs, nil, nil, func(i int) {
		if i >= 3 && i < 3+2*applyParallelism && (i-3)%2 == 0 {
			mu.Lock()
			if entered++; entered == applyParallelism {
				close(full)
			}
			mu.Unlock()
			select {
			case <-full:
			case <-time.After(30 * time.Second):
				t.Errorf("object %d waited 30 s for %d objects to be applied at once", i, applyParallelism)
			}
		}
		mu.Lock()
		done = append(done, i)
		mu.Unlock()
	})
	if len(done) != len(objs) {
		t.Fatalf("applied %d of %d objects", len(done), len(objs))
	}
	at := make([]int, len(objs))
	for pos, i := range done {
		at[i] = pos
	}
	if !(at[0] < at[1] && at[1] < at[2]) {
		t.Errorf("the config objects were not applied in order: %v", done[:3])
	}
	for i := 3; i < 3+2*namespaces; i += 2 {
		if at[i] <= at[2] {
			t.Errorf("%s/%s was applied before the stage before it ended", objs[i].GetNamespace(), objs[i].GetName())
		}
		if at[i] > at[i+1] {
			t.Errorf("the RoleBinding in %s came before its Role", objs[i].GetNamespace())
		}
		if at[i+1] > at[len(objs)-1] {
			t.Errorf("the Service came before the RBAC stage ended")
		}
	}
}

// TestApplyStagesYieldsOnlyAfterTheConfiguration: a newer change stops the apply between
// namespaces, never before the first stage (the configuration) is written.
func TestApplyStagesYieldsOnlyAfterTheConfiguration(t *testing.T) {
	var objs []client.Object
	for i, kind := range []string{"Secret", "Secret", "Role", "Role", "Role", "StatefulSet"} {
		apiVersion := map[string]string{"Secret": "v1", "Role": "rbac.authorization.k8s.io/v1", "StatefulSet": "apps/v1"}[kind]
		o := &corev1.Secret{}
		o.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
		o.SetNamespace("mon")
		if kind == "Role" {
			o.SetNamespace(string(rune('a' + i)))
		}
		objs = append(objs, o)
	}
	var mu sync.Mutex
	var applied []int
	record := func(i int) {
		mu.Lock()
		defer mu.Unlock()
		applied = append(applied, i)
	}
	yielded := applyStages(objs, nil, &yielding{newer: func() bool { return true }}, record)
	if !yielded || len(applied) != 2 {
		t.Errorf("yield always true: applied %v (yielded %v), want the two config Secrets only", applied, yielded)
	}
	applied = nil
	var calls atomic.Int32
	y := &yielding{newer: func() bool { return calls.Add(1) > 1 }}
	yielded = applyStages(objs, nil, y, record)
	if y.left != nil {
		y.left.Wait() // the Role started before the yield finishes on its own
	}
	if !yielded || len(applied) != 3 {
		t.Errorf("yield after one namespace: applied %v (yielded %v), want the config and one Role", applied, yielded)
	}
	applied = nil
	if applyStages(objs, nil, &yielding{newer: func() bool { return false }}, record) || len(applied) != len(objs) {
		t.Errorf("no newer change: applied %v of %d", applied, len(objs))
	}
}

// TestAYieldedApplyLeavesItsObjectsInFlightToTheNextOne: the apply that yields does not
// wait for the objects it started; the next apply writes its configuration at once and
// waits for them before it applies anything else, so no object is applied twice at once.
func TestAYieldedApplyLeavesItsObjectsInFlightToTheNextOne(t *testing.T) {
	var objs []client.Object
	add := func(kind, apiVersion, ns string) {
		o := &corev1.Secret{}
		o.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
		o.SetNamespace(ns)
		objs = append(objs, o)
	}
	add("Secret", "v1", "mon")
	add("Role", "rbac.authorization.k8s.io/v1", "a")
	add("Role", "rbac.authorization.k8s.io/v1", "b")

	slow := make(chan struct{})
	started := make(chan struct{})
	var newer atomic.Bool
	first := &yielding{newer: newer.Load}
	var mu sync.Mutex
	var events []string
	note := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	done := make(chan bool)
	go func() {
		done <- applyStages(objs, nil, first, func(i int) {
			if i == 1 {
				newer.Store(true) // a change arrives while Role a is in flight
				close(started)
				<-slow
				note("first: Role a")
			}
		})
	}()
	<-started
	if !<-done {
		t.Fatal("the first apply did not yield")
	}
	if first.left == nil {
		t.Fatal("the first apply left no objects in flight")
	}
	// Role a finishes only once the second apply has written its configuration.
	second := &yielding{previous: first.left, configWritten: func() {
		note("second: config")
		close(slow)
	}}
	applyStages(objs, nil, second, func(i int) {
		if i > 0 {
			note("second: Role")
		}
	})
	want := []string{"second: config", "first: Role a", "second: Role", "second: Role"}
	if !slices.Equal(events, want) {
		t.Errorf("events %v, want %v", events, want)
	}
}

// TestApplyStagesAppliesPeersSideBySide: consecutive peers of one namespace (the pieces of a
// configuration) are in flight together, and what follows them waits for all of them, in a
// stage of one namespace and in one of several.
func TestApplyStagesAppliesPeersSideBySide(t *testing.T) {
	secret := func(ns, name string) client.Object {
		s := &corev1.Secret{}
		s.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		s.SetNamespace(ns)
		s.SetName(name)
		return s
	}
	for _, other := range []string{"", "elsewhere"} {
		objs := []client.Object{secret("mon", "before")}
		for i := range 5 {
			objs = append(objs, secret("mon", "piece-"+string(rune('0'+i))))
		}
		objs = append(objs, secret("mon", "config"))
		if other != "" {
			objs = append(objs, secret(other, "x"))
		}
		peers := func(o client.Object) bool { return strings.HasPrefix(o.GetName(), "piece-") }

		var mu sync.Mutex
		var done []string
		inFlight := 0
		all := make(chan struct{})
		applyStages(objs, peers, nil, func(i int) {
			name := objs[i].GetName()
			if peers(objs[i]) {
				mu.Lock()
				if inFlight++; inFlight == 5 {
					close(all)
				}
				mu.Unlock()
				select {
				case <-all:
				case <-time.After(30 * time.Second):
					t.Errorf("%s waited 30 s for the five pieces to be in flight together", name)
				}
			}
			mu.Lock()
			done = append(done, name)
			mu.Unlock()
		})
		mine := slices.DeleteFunc(slices.Clone(done), func(n string) bool { return n == "x" })
		if len(done) != len(objs) || mine[0] != "before" || mine[len(mine)-1] != "config" {
			t.Fatalf("with %q: applied %v; want before, the pieces in any order, then config", other, done)
		}
	}
}
