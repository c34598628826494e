package reloader

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakePrometheus stands in for Prometheus's POST /-/reload. It fails the first failFirst
// requests with 503, as Prometheus does while it is still starting.
type fakePrometheus struct {
	srv       *httptest.Server
	failFirst atomic.Int32
	attempts  atomic.Int32
	reloads   atomic.Int32

	mu    sync.Mutex
	times []time.Time
}

func newFakePrometheus(t *testing.T) *fakePrometheus {
	p := &fakePrometheus{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/-/reload" {
			http.Error(w, "only POST /-/reload", http.StatusMethodNotAllowed)
			return
		}
		p.attempts.Add(1)
		p.mu.Lock()
		p.times = append(p.times, time.Now())
		p.mu.Unlock()
		if p.failFirst.Add(-1) >= 0 {
			http.Error(w, "Service Unavailable: TSDB not ready", http.StatusServiceUnavailable)
			return
		}
		p.reloads.Add(1)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakePrometheus) url() string { return p.srv.URL + "/-/reload" }

func (p *fakePrometheus) attemptTimes() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.times...)
}

// fakeAPI serves list and watch of one Secret the way kube-apiserver does for
// GET /api/v1/namespaces/<ns>/secrets?fieldSelector=metadata.name=<name>[&watch=true].
// Watches replay the events after the requested resourceVersion, so nothing is lost
// between a list and the watch that follows it.
type fakeAPI struct {
	t               *testing.T
	srv             *httptest.Server
	namespace, name string
	key             string
	token           string

	mu        sync.Mutex
	rv        int
	secret    map[string]any // nil: not found
	history   []fakeEvent
	watchers  map[chan fakeEvent]struct{}
	forbidden bool

	lists   atomic.Int32
	watches atomic.Int32
}

type fakeEvent struct {
	rv  int
	obj map[string]any
	typ string
}

func newFakeAPI(t *testing.T, namespace, name, key string) *fakeAPI {
	f := &fakeAPI{t: t, namespace: namespace, name: name, key: key, token: "s3cret", watchers: map[chan fakeEvent]struct{}{}}
	f.rv = 100
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) client() *APIClient {
	return &APIClient{BaseURL: f.srv.URL, HTTP: f.srv.Client(), Token: func() (string, error) { return f.token, nil }}
}

func (f *fakeAPI) status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason, "message": msg,
	})
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/namespaces/"+f.namespace+"/secrets" || r.Method != http.MethodGet {
		f.status(w, http.StatusNotFound, "NotFound", "unexpected request "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.status(w, http.StatusUnauthorized, "Unauthorized", "Unauthorized")
		return
	}
	q := r.URL.Query()
	if q.Get("fieldSelector") != "metadata.name="+f.name {
		f.status(w, http.StatusBadRequest, "BadRequest", "unexpected fieldSelector "+q.Get("fieldSelector"))
		return
	}
	f.mu.Lock()
	if f.forbidden {
		f.mu.Unlock()
		f.status(w, http.StatusForbidden, "Forbidden", fmt.Sprintf(`secrets is forbidden: User "system:serviceaccount:%s:prometheus" cannot list resource "secrets"`, f.namespace))
		return
	}
	if q.Get("watch") != "true" {
		f.lists.Add(1)
		items := []any{}
		if f.secret != nil {
			items = append(items, f.secret)
		}
		list := map[string]any{
			"kind": "SecretList", "apiVersion": "v1",
			"metadata": map[string]any{"resourceVersion": strconv.Itoa(f.rv)},
			"items":    items,
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
		return
	}

	f.watches.Add(1)
	from, err := strconv.Atoi(q.Get("resourceVersion"))
	if err != nil {
		f.mu.Unlock()
		f.status(w, http.StatusBadRequest, "BadRequest", "watch needs a resourceVersion")
		return
	}
	ch := make(chan fakeEvent, 64)
	for _, ev := range f.history {
		if ev.rv > from {
			ch <- ev
		}
	}
	f.watchers[ch] = struct{}{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.watchers, ch)
		f.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			_ = enc.Encode(map[string]any{"type": ev.typ, "object": ev.obj})
			w.(http.Flusher).Flush()
		}
	}
}

// set stores content under the configuration key (gzipped) and notifies the watchers.
func (f *fakeAPI) set(content string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	typ := "MODIFIED"
	if f.secret == nil {
		typ = "ADDED"
	}
	f.secret = map[string]any{
		"kind": "Secret", "apiVersion": "v1",
		"metadata": map[string]any{
			"name": f.name, "namespace": f.namespace, "uid": "0a1b2c",
			"resourceVersion": strconv.Itoa(f.rv), "creationTimestamp": "2026-01-01T00:00:00Z",
		},
		"type": "Opaque",
		// encoding/json writes []byte as base64, as the API does.
		"data": map[string]any{f.key: gz(f.t, content), "other": []byte("x")},
	}
	f.broadcastLocked(fakeEvent{rv: f.rv, typ: typ, obj: f.secret})
}

func (f *fakeAPI) broadcastLocked(ev fakeEvent) {
	f.history = append(f.history, ev)
	for ch := range f.watchers {
		ch <- ev
	}
}

// expireWatches ends every open watch with a 410 ERROR event, as the apiserver does when
// a watch falls out of its window; the client has to list again.
func (f *fakeAPI) expireWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.watchers {
		ch <- fakeEvent{typ: "ERROR", obj: map[string]any{
			"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired",
			"message": "too old resource version",
		}}
		close(ch)
		delete(f.watchers, ch)
	}
	// Everything before now is out of the window.
	f.history = nil
}

func (f *fakeAPI) setForbidden(v bool) {
	f.mu.Lock()
	f.forbidden = v
	f.mu.Unlock()
}

// kubeletWrite lays out files the way the kubelet's atomic writer updates a Secret or
// ConfigMap volume: a fresh hidden directory, the ..data symlink swapped to it by rename,
// and one symlink per key pointing through ..data.
func kubeletWrite(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	gen := fmt.Sprintf("..%d", time.Now().UnixNano())
	must(t, os.MkdirAll(filepath.Join(dir, gen), 0o755))
	for name, data := range files {
		must(t, os.WriteFile(filepath.Join(dir, gen, name), data, 0o644))
	}
	tmp := filepath.Join(dir, "..data_tmp")
	must(t, os.Symlink(gen, tmp))
	must(t, os.Rename(tmp, filepath.Join(dir, "..data")))
	entries, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == "..data" || name == gen:
		case strings.HasPrefix(name, ".."):
			must(t, os.RemoveAll(filepath.Join(dir, name)))
		default:
			if _, keep := files[name]; !keep {
				must(t, os.Remove(filepath.Join(dir, name)))
			}
		}
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err != nil {
			must(t, os.Symlink(filepath.Join("..data", name), link))
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testLogger writes to the test's log, so output shows only for failing tests, and keeps
// the lines for assertions.
func testLogger(t *testing.T, lines *logLines) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t, lines}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

type testWriter struct {
	t     *testing.T
	lines *logLines
}

func (w testWriter) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	w.t.Log(line)
	if w.lines != nil {
		w.lines.mu.Lock()
		w.lines.lines = append(w.lines.lines, line)
		w.lines.mu.Unlock()
	}
	return len(p), nil
}

var _ io.Writer = testWriter{}

// eventually polls cond until it holds or a generous deadline passes; tests stay fast
// because cond usually holds within a few milliseconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// settle gives the sidecar time for many poll cycles, to show that nothing more happens.
func settle() { time.Sleep(100 * time.Millisecond) }
