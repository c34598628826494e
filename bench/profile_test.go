package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The profiler against this test binary's own pprof handlers and a fake
// /metrics: a CPU phase recorded in chunks and merged, heap profiles, the
// runtime figures, and the top of each in top.txt.
func TestProfilerRecordsAPhaseAndSummarisesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("records a CPU profile for a few seconds")
	}
	allocTotal := 100 << 20
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		allocTotal += 50 << 20
		fmt.Fprintf(w, "# TYPE go_memstats_heap_inuse_bytes gauge\ngo_memstats_heap_inuse_bytes %d\n", 30<<20)
		fmt.Fprintf(w, "go_memstats_alloc_bytes_total %d\ngo_goroutines 42\n", allocTotal)
		fmt.Fprintf(w, "go_gc_duration_seconds{quantile=\"0.5\"} 0.001\ngo_gc_duration_seconds_count 7\n")
		fmt.Fprintf(w, "rest_client_requests_total{method=\"GET\"} 3\n")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	dir := filepath.Join(t.TempDir(), "s9")
	p, err := newProfiler(srv.URL, dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p.begin(ctx, "cpu-busy")
	// Burn some CPU so that the profile has samples.
	deadline := time.Now().Add(cpuChunk + 500*time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 100000 {
			x += i % 7
		}
	}
	_ = x
	p.end(ctx, "busy", srv.URL+"/metrics")
	p.point(ctx, "later", srv.URL+"/metrics")
	summary, err := p.finish()
	if err != nil {
		t.Fatal(err)
	}

	t.Log("\n" + summary)
	// Two chunks on a quiet machine (the spin outlasts the first); one when the
	// first chunk's response comes late, as on a loaded one: either is merged.
	if !regexp.MustCompile(`=== CPU cpu-busy: [12] chunks? of`).MatchString(summary) {
		t.Errorf("summary lacks the CPU profile of one or two chunks:\n%s", summary)
	}
	files := strings.Join(profileFiles(dir), " ")
	if want := "cpu-busy.pb.gz heap-busy.pb.gz heap-later.pb.gz memstats.json top.txt"; files != want {
		t.Errorf("files %q, want %q (chunks removed)", files, want)
	}
	for _, want := range []string{
		"=== CPU cpu-busy: ", "by cumulative time", "=== heap heap-busy, in use", "=== heap heap-later, allocated since the start",
		"flat%", "=== Go runtime",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	// allocDelta: 50 MiB between the two points; the quantile series and
	// other metrics are not kept.
	if !strings.Contains(summary, "50M") || strings.Contains(p.memstatsTable(), "rest_client") {
		t.Errorf("runtime table:\n%s", p.memstatsTable())
	}
	if m := p.memstats["later"]; m["go_gc_duration_seconds_count"] != 7 || m["go_goroutines"] != 42 || len(m) != 4 {
		t.Errorf("runtime figures at later: %v", m)
	}
	top, err := os.ReadFile(filepath.Join(dir, "top.txt"))
	if err != nil || string(top) != summary {
		t.Errorf("top.txt differs from the printed summary (%v)", err)
	}
}
