package reloader

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
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
	// observe, when set, is called on every accepted reload; what it returns is kept in
	// loaded (what Prometheus would have loaded).
	observe func() string
	loaded  []string
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
		p.mu.Lock()
		if p.observe != nil {
			p.loaded = append(p.loaded, p.observe())
		}
		p.mu.Unlock()
		p.reloads.Add(1)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakePrometheus) url() string { return p.srv.URL + "/-/reload" }

// observeReloads makes every accepted reload record f's result, read while the reload
// request is being answered.
func (p *fakePrometheus) observeReloads(f func() string) {
	p.mu.Lock()
	p.observe = f
	p.mu.Unlock()
}

// loadedAt returns what the n-th accepted reload (from 1) recorded.
func (p *fakePrometheus) loadedAt(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n < 1 || n > len(p.loaded) {
		return fmt.Sprintf("<no reload %d, %d recorded>", n, len(p.loaded))
	}
	return p.loaded[n-1]
}

func (p *fakePrometheus) attemptTimes() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.times...)
}

// fakeAPI serves list and watch of Secrets in one namespace the way kube-apiserver does
// for GET /api/v1/namespaces/<ns>/secrets?fieldSelector=metadata.name=<name>[&watch=true].
// Requests without that field selector are refused, as RBAC scoped with resourceNames
// refuses them. Resource versions are shared by all Secrets, and watches replay the
// events of their Secret after the requested resourceVersion, so nothing is lost between
// a list and the watch that follows it.
type fakeAPI struct {
	t               *testing.T
	srv             *httptest.Server
	namespace, name string // name and key are what set and remove work on
	key             string
	token           string

	mu        sync.Mutex
	rv        int
	secrets   map[string]map[string]any // absent: not found
	history   []fakeEvent
	watchers  map[chan fakeEvent]string // the name each watch selects
	forbidden bool
	selected  map[string]bool // names that requests selected

	lists   atomic.Int32
	watches atomic.Int32
}

type fakeEvent struct {
	rv   int
	name string
	obj  map[string]any
	typ  string
}

func newFakeAPI(t *testing.T, namespace, name, key string) *fakeAPI {
	f := &fakeAPI{
		t: t, namespace: namespace, name: name, key: key, token: "s3cret",
		secrets: map[string]map[string]any{}, watchers: map[chan fakeEvent]string{}, selected: map[string]bool{},
	}
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
	name, ok := strings.CutPrefix(q.Get("fieldSelector"), "metadata.name=")
	if !ok || name == "" || strings.ContainsAny(name, ",=!") {
		f.status(w, http.StatusForbidden, "Forbidden", "unexpected fieldSelector "+q.Get("fieldSelector"))
		return
	}
	f.mu.Lock()
	f.selected[name] = true
	if f.forbidden {
		f.mu.Unlock()
		f.status(w, http.StatusForbidden, "Forbidden", fmt.Sprintf(`secrets is forbidden: User "system:serviceaccount:%s:prometheus" cannot list resource "secrets"`, f.namespace))
		return
	}
	if q.Get("watch") != "true" {
		f.lists.Add(1)
		items := []any{}
		if secret, ok := f.secrets[name]; ok {
			items = append(items, secret)
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
		if ev.rv > from && ev.name == name {
			ch <- ev
		}
	}
	f.watchers[ch] = name
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
func (f *fakeAPI) set(content string) { f.setSecret(f.name, f.key, content) }

// setSecret creates or updates Secret name with content gzipped under key.
func (f *fakeAPI) setSecret(name, key, content string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rv++
	typ := "MODIFIED"
	if _, ok := f.secrets[name]; !ok {
		typ = "ADDED"
	}
	secret := map[string]any{
		"kind": "Secret", "apiVersion": "v1",
		"metadata": map[string]any{
			"name": name, "namespace": f.namespace, "uid": "0a1b2c-" + name,
			"resourceVersion": strconv.Itoa(f.rv), "creationTimestamp": "2026-01-01T00:00:00Z",
		},
		"type": "Opaque",
		// encoding/json writes []byte as base64, as the API does.
		"data": map[string]any{key: gz(f.t, content), "other": []byte("x")},
	}
	f.secrets[name] = secret
	f.broadcastLocked(fakeEvent{rv: f.rv, name: name, typ: typ, obj: secret})
}

// deleteSecret deletes Secret name; the DELETED event carries its last state at the
// deletion's resourceVersion, as the apiserver sends it.
func (f *fakeAPI) deleteSecret(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.secrets[name]
	if !ok {
		f.t.Fatalf("delete Secret %s: not found", name)
	}
	f.rv++
	meta := map[string]any{}
	for k, v := range old["metadata"].(map[string]any) {
		meta[k] = v
	}
	meta["resourceVersion"] = strconv.Itoa(f.rv)
	obj := map[string]any{}
	for k, v := range old {
		obj[k] = v
	}
	obj["metadata"] = meta
	delete(f.secrets, name)
	f.broadcastLocked(fakeEvent{rv: f.rv, name: name, typ: "DELETED", obj: obj})
}

func (f *fakeAPI) broadcastLocked(ev fakeEvent) {
	f.history = append(f.history, ev)
	for ch, name := range f.watchers {
		if name == ev.name {
			ch <- ev
		}
	}
}

// selectedNames returns the Secret names that requests have selected so far.
func (f *fakeAPI) selectedNames() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.selected)
}

// openWatches counts the watches open on Secret name.
func (f *fakeAPI) openWatches(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, watched := range f.watchers {
		if watched == name {
			n++
		}
	}
	return n
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
