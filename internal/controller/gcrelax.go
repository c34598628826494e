package controller

import (
	"runtime/debug"
	"sync"
)

// startGCPercent is the collector's target while a Prometheus's first render builds
// thousands of monitors (startRenderMonitors or more): the heap may grow to 1.6 times what
// is live instead of the operator's usual 1.4. That render allocates about a gigabyte of
// short-lived YAML and regexes at S1 (5,000 ServiceMonitors), and at the usual target the
// collector runs dozens of times over the informer caches meanwhile; the render is then
// faster by a quarter, and the heap it reaches stays under what the rest of a start
// reaches anyway (docs/benchmarks.md). A higher GOGC set by the user is kept.
const (
	startGCPercent      = 60
	startRenderMonitors = 1000
)

var gcRelaxed struct {
	sync.Mutex
	n     int // renders relaxing it now
	saved int // the target before the first of them
}

// relaxGC raises the collector's target to startGCPercent until the returned function is
// called; concurrent renders share one raise, and the last one out restores the target.
func relaxGC() (restore func()) {
	gcRelaxed.Lock()
	defer gcRelaxed.Unlock()
	if gcRelaxed.n == 0 {
		gcRelaxed.saved = debug.SetGCPercent(startGCPercent)
		if gcRelaxed.saved > startGCPercent || gcRelaxed.saved < 0 {
			debug.SetGCPercent(gcRelaxed.saved)
		}
	}
	gcRelaxed.n++
	return func() {
		gcRelaxed.Lock()
		defer gcRelaxed.Unlock()
		if gcRelaxed.n--; gcRelaxed.n == 0 {
			debug.SetGCPercent(gcRelaxed.saved)
		}
	}
}
