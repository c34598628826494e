package controller

import (
	"runtime/debug"
	"testing"
)

// TestRelaxGCRaisesTheTargetWhileAnyRenderNeedsIt: overlapping first renders share one
// raise, the last one out restores the target, and a higher target is left alone.
func TestRelaxGCRaisesTheTargetWhileAnyRenderNeedsIt(t *testing.T) {
	current := func() int {
		v := debug.SetGCPercent(100)
		debug.SetGCPercent(v)
		return v
	}
	defer debug.SetGCPercent(debug.SetGCPercent(40))

	a := relaxGC()
	b := relaxGC()
	if got := current(); got != startGCPercent {
		t.Fatalf("while two renders relax it: GC percent %d, want %d", got, startGCPercent)
	}
	a()
	if got := current(); got != startGCPercent {
		t.Fatalf("while one render still relaxes it: GC percent %d, want %d", got, startGCPercent)
	}
	b()
	if got := current(); got != 40 {
		t.Fatalf("after the renders: GC percent %d, want the 40 from before", got)
	}

	debug.SetGCPercent(150) // GOGC=150 from the user
	c := relaxGC()
	if got := current(); got != 150 {
		t.Fatalf("with a higher target set: GC percent %d, want 150 kept", got)
	}
	c()
	if got := current(); got != 150 {
		t.Fatalf("after: GC percent %d, want 150", got)
	}
}
