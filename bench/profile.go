package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// cpuChunk is the length of one CPU profile request. The pprof handler only
// answers when its time is up (a cancelled request loses the profile), so a
// phase of unknown length is recorded as back-to-back chunks that are merged
// when it ends; ending a phase waits for the chunk in flight, at most this.
const cpuChunk = 3 * time.Second

// profiler takes the operator's profiles through its --pprof-bind-address
// into dir, and summarises each with `go tool pprof -top`.
type profiler struct {
	base string // http://127.0.0.1:<port>
	dir  string
	// summary is every top and memstats table, in the order taken.
	summary strings.Builder
	// memstats are the Go runtime figures from the operator's /metrics at
	// each point, by point.
	memstats map[string]map[string]float64
	order    []string
	// cpu is the CPU recording in progress: the runtime allows one CPU
	// profile per process, so phases do not overlap.
	cpu *cpuRecording
}

func newProfiler(base, dir string) (*profiler, error) {
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &profiler{base: base, dir: dir, memstats: map[string]map[string]float64{}}, nil
}

// fetch GETs a pprof path into file.
func (p *profiler) fetch(ctx context.Context, path, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpuRecording is a CPU profile being recorded in chunks.
type cpuRecording struct {
	name       string
	stop       chan struct{}
	done       chan struct{}
	chunks     []string
	start, end time.Time
	err        error
}

// startCPU records CPU profiles back to back until stopCPU.
func (p *profiler) startCPU(ctx context.Context, name string) *cpuRecording {
	rec := &cpuRecording{name: name, stop: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	go func() {
		defer close(rec.done)
		for i := 0; ; i++ {
			select {
			case <-rec.stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			file := filepath.Join(p.dir, fmt.Sprintf(".%s-%03d.pb.gz", name, i))
			path := fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(cpuChunk/time.Second))
			if err := p.fetch(ctx, path, file, cpuChunk+30*time.Second); err != nil {
				rec.err = err
				return
			}
			rec.chunks = append(rec.chunks, file)
			rec.end = time.Now()
		}
	}()
	return rec
}

// stopCPU waits for the chunk in flight, merges the chunks into
// <name>.pb.gz and summarises it.
func (p *profiler) stopCPU(rec *cpuRecording) error {
	close(rec.stop)
	<-rec.done
	defer func() {
		for _, c := range rec.chunks {
			_ = os.Remove(c)
		}
	}()
	if rec.err != nil {
		return fmt.Errorf("CPU profile %s: %w", rec.name, rec.err)
	}
	if len(rec.chunks) == 0 {
		return fmt.Errorf("CPU profile %s: no chunk was recorded", rec.name)
	}
	out := filepath.Join(p.dir, rec.name+".pb.gz")
	// pprof merges profiles of the same program given together.
	merge := exec.Command("go", append([]string{"tool", "pprof", "-proto"}, rec.chunks...)...)
	var stdout, stderr bytes.Buffer
	merge.Stdout, merge.Stderr = &stdout, &stderr
	if err := merge.Run(); err != nil {
		return fmt.Errorf("merge CPU profile %s: %v: %s", rec.name, err, stderr.String())
	}
	if err := os.WriteFile(out, stdout.Bytes(), 0o644); err != nil {
		return err
	}
	title := fmt.Sprintf("CPU %s: %d chunks of %v, %.1fs from %s", rec.name, len(rec.chunks), cpuChunk,
		rec.end.Sub(rec.start).Seconds(), rec.start.UTC().Format(time.RFC3339))
	if err := p.top(title+", by own time", out); err != nil {
		return err
	}
	return p.top(title+", by cumulative time", out, "-cum")
}

// heap takes a heap profile (after a GC, so in-use is what is live) and
// summarises in-use and allocated space.
func (p *profiler) heap(ctx context.Context, name string) error {
	out := filepath.Join(p.dir, name+".pb.gz")
	if err := p.fetch(ctx, "/debug/pprof/heap?gc=1", out, time.Minute); err != nil {
		return fmt.Errorf("heap profile %s: %w", name, err)
	}
	if err := p.top("heap "+name+", in use (after a GC)", out, "-sample_index=inuse_space"); err != nil {
		return err
	}
	return p.top("heap "+name+", allocated since the start", out, "-sample_index=alloc_space")
}

// top adds `go tool pprof -top -nodecount=15` of file to the summary.
func (p *profiler) top(title, file string, args ...string) error {
	cmd := exec.Command("go", append(append([]string{"tool", "pprof", "-top", "-nodecount=15"}, args...), file)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof -top %s: %v\n%s", file, err, out)
	}
	fmt.Fprintf(&p.summary, "=== %s (%s)\n%s\n", title, filepath.Base(file), strings.TrimRight(string(out), "\n"))
	fmt.Fprintln(&p.summary)
	return nil
}

// memstatNames are the Go runtime figures kept from the operator's
// /metrics (besides every go_memstats_* gauge and counter).
var memstatNames = []string{
	"go_goroutines", "go_gc_duration_seconds_count", "go_gc_heap_allocs_bytes_total",
	"go_gc_gogc_percent", "go_gc_gomemlimit_bytes", "process_resident_memory_bytes", "process_cpu_seconds_total",
}

// recordMemstats keeps the Go runtime figures of metrics as point name.
func (p *profiler) recordMemstats(point string, m metrics) {
	got := map[string]float64{}
	for name, series := range m {
		if !strings.HasPrefix(name, "go_memstats_") && !slices.Contains(memstatNames, name) {
			continue
		}
		if len(series) == 1 && len(series[0].labels) == 0 {
			got[name] = series[0].value
		}
	}
	p.memstats[point] = got
	p.order = append(p.order, point)
}

// memstatsTable prints the main runtime figures per point, with the bytes
// allocated since the previous point.
func (p *profiler) memstatsTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %10s %10s %10s %10s %12s %8s %10s\n", "point", "heapInuse", "heapSys", "sys", "nextGC", "allocDelta", "GCs", "goroutines")
	var prevAlloc float64
	for _, point := range p.order {
		m := p.memstats[point]
		alloc := m["go_memstats_alloc_bytes_total"]
		fmt.Fprintf(&b, "%-22s %9.0fM %9.0fM %9.0fM %9.0fM %11.0fM %8.0f %10.0f\n", point,
			m["go_memstats_heap_inuse_bytes"]/(1<<20), m["go_memstats_heap_sys_bytes"]/(1<<20),
			m["go_memstats_sys_bytes"]/(1<<20), m["go_memstats_next_gc_bytes"]/(1<<20),
			(alloc-prevAlloc)/(1<<20), m["go_gc_duration_seconds_count"], m["go_goroutines"])
		prevAlloc = alloc
	}
	return b.String()
}

// finish writes memstats.json and top.txt and returns the summary.
func (p *profiler) finish() (string, error) {
	if len(p.order) > 0 {
		fmt.Fprintf(&p.summary, "=== Go runtime (operator /metrics; M = MiB; allocDelta since the previous point)\n%s\n", p.memstatsTable())
		type point struct {
			Point   string             `json:"point"`
			Metrics map[string]float64 `json:"metrics"`
		}
		var points []point
		for _, name := range p.order {
			points = append(points, point{name, p.memstats[name]})
		}
		b, err := json.MarshalIndent(points, "", "  ")
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(p.dir, "memstats.json"), append(b, '\n'), 0o644); err != nil {
			return "", err
		}
	}
	s := p.summary.String()
	return s, os.WriteFile(filepath.Join(p.dir, "top.txt"), []byte(s), 0o644)
}

// profileFiles lists what a profile directory holds, for the log.
func profileFiles(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// begin starts recording the CPU profile <name>.pb.gz of a phase. Like end
// and point it does nothing on a nil profiler (-profiles "").
func (p *profiler) begin(ctx context.Context, name string) {
	if p == nil {
		return
	}
	p.cpu = p.startCPU(ctx, name)
}

// end stops the phase's CPU recording, then takes the heap profile and the
// runtime figures of point. Errors are logged, not returned: a missing
// profile must not throw away a long run's figures.
func (p *profiler) end(ctx context.Context, point, metricsURL string) {
	if p == nil {
		return
	}
	if p.cpu != nil {
		if err := p.stopCPU(p.cpu); err != nil {
			logf("profiles: %v", err)
		}
		p.cpu = nil
	}
	p.point(ctx, point, metricsURL)
}

// point takes the heap profile heap-<point>.pb.gz and the runtime figures.
func (p *profiler) point(ctx context.Context, point, metricsURL string) {
	if p == nil {
		return
	}
	if err := p.heap(ctx, "heap-"+point); err != nil {
		logf("profiles: %v", err)
	}
	if m, err := scrapeURL(ctx, metricsURL); err != nil {
		logf("profiles: runtime figures at %s: %v", point, err)
	} else {
		p.recordMemstats(point, m)
	}
}
