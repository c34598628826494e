package reloader

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const configKey = "prometheus.yaml.gz"

var testEnv = map[string]string{"POD_NAME": "prometheus-k8s-0", "SHARD": "1"}

// harness runs a Sidecar against a fake Prometheus, with the input laid out like a
// Secret volume and short intervals everywhere.
type harness struct {
	t         *testing.T
	configDir string
	output    string
	prom      *fakePrometheus
	sidecar   *Sidecar
	logs      logLines
}

func newHarness(t *testing.T) *harness {
	dir := t.TempDir()
	h := &harness{
		t:         t,
		configDir: filepath.Join(dir, "config"),
		output:    filepath.Join(dir, "config_out", "prometheus.env.yaml"),
		prom:      newFakePrometheus(t),
	}
	must(t, os.MkdirAll(h.configDir, 0o755))
	return h
}

func (h *harness) options() Options {
	o := DefaultOptions()
	o.ConfigFile = filepath.Join(h.configDir, configKey)
	o.OutputFile = h.output
	o.ReloadURL = h.prom.url()
	o.ListenAddress = ""
	o.WatchInterval = 5 * time.Millisecond
	o.ReloadBackoff = Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}
	o.APIBackoff = Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}
	// Long enough to take in the changes one test step makes (a few polls), short next to
	// settle(), which checks that nothing more happens.
	o.ReloadDebounce = 20 * time.Millisecond
	o.FileTrustDelay = time.Hour
	o.Logger = testLogger(h.t, &h.logs)
	o.LookupEnv = envMap(testEnv)
	return o
}

// writeConfig updates the mounted Secret volume the way the kubelet does.
func (h *harness) writeConfig(content string) {
	kubeletWrite(h.t, h.configDir, map[string][]byte{configKey: gz(h.t, content)})
}

func (h *harness) start(o Options) {
	t := h.t
	s, err := NewSidecar(o)
	must(t, err)
	h.sidecar = s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
}

func (h *harness) readOutput() string {
	b, err := os.ReadFile(h.output)
	if err != nil {
		return ""
	}
	return string(b)
}

func (h *harness) waitForOutput(want string) {
	h.t.Helper()
	eventually(h.t, "the output is "+strings.ReplaceAll(want, "\n", `\n`), func() bool { return h.readOutput() == want })
}

func (h *harness) waitForReloads(n int32) {
	h.t.Helper()
	eventually(h.t, "Prometheus has been reloaded", func() bool { return h.prom.reloads.Load() >= n })
	settle()
	if got := h.prom.reloads.Load(); got != n {
		h.t.Fatalf("reloads = %d, want %d", got, n)
	}
}

func (h *harness) scrape(path string) (int, string) {
	rec := httptest.NewRecorder()
	h.sidecar.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func (h *harness) wantMetric(line string) {
	h.t.Helper()
	if _, body := h.scrape("/metrics"); !strings.Contains(body, line+"\n") {
		h.t.Errorf("/metrics has no line %q", line)
	}
}

// metricValue is the value of the series written exactly as series on /metrics (-1 when
// there is none).
func (h *harness) metricValue(series string) float64 {
	h.t.Helper()
	_, body := h.scrape("/metrics")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				h.t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

func TestSidecarWritesTheSubstitutedConfigAndReloadsOnce(t *testing.T) {
	h := newHarness(t)
	h.writeConfig("global:\n  external_labels:\n    prometheus_replica: $(POD_NAME)\n# shard $(SHARD), $(UNSET)\n")
	h.start(h.options())

	if code, _ := h.scrape("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	h.waitForOutput("global:\n  external_labels:\n    prometheus_replica: prometheus-k8s-0\n# shard 1, $(UNSET)\n")
	h.waitForReloads(1)
	if code, _ := h.scrape("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d after the first write, want 200", code)
	}
	h.wantMetric(`lookout_reloader_config_apply_total{document="prometheus.env.yaml",source="file"} 1`)
	h.wantMetric(`lookout_reloader_config_apply_total{document="prometheus.env.yaml",source="api"} 0`)
	h.wantMetric(`lookout_reloader_config_present{document="prometheus.env.yaml"} 1`)
	h.wantMetric(`lookout_reloader_reloads_total 1`)
	h.wantMetric(`lookout_reloader_last_reload_successful 1`)

	h.writeConfig("global: {}\n# $(SHARD)\n")
	h.waitForOutput("global: {}\n# 1\n")
	h.waitForReloads(2)
}

func TestSidecarIsNotReadyBeforeTheFirstWrite(t *testing.T) {
	h := newHarness(t)
	h.start(h.options())
	settle()
	if code, _ := h.scrape("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d without a configuration, want 503", code)
	}
	h.writeConfig("global: {}\n")
	h.waitForOutput("global: {}\n")
	eventually(t, "/readyz is 200", func() bool { code, _ := h.scrape("/readyz"); return code == http.StatusOK })
}

func TestSidecarDoesNotReloadWhenTheBytesAreUnchanged(t *testing.T) {
	h := newHarness(t)
	h.writeConfig("replica: $(POD_NAME)\n")
	// What the init container left behind.
	must(t, os.MkdirAll(filepath.Dir(h.output), 0o755))
	must(t, os.WriteFile(h.output, []byte("replica: prometheus-k8s-0\n"), 0o644))
	before, err := os.Stat(h.output)
	must(t, err)
	h.start(h.options())

	eventually(t, "the sidecar is ready", h.sidecar.Ready)
	// The kubelet rewrites the volume with the same content (new inode, new mtime).
	h.writeConfig("replica: $(POD_NAME)\n")
	settle()
	if got := h.prom.attempts.Load(); got != 0 {
		t.Errorf("reload attempts = %d, want 0", got)
	}
	after, err := os.Stat(h.output)
	must(t, err)
	if !os.SameFile(before, after) {
		t.Error("the output was rewritten although its bytes did not change")
	}
}

func TestSidecarRetriesWithBackoffUntilPrometheusAnswers(t *testing.T) {
	h := newHarness(t)
	h.prom.failFirst.Store(4)
	h.writeConfig("global: {}\n")
	o := h.options()
	h.start(o)

	h.waitForReloads(1)
	if got := h.prom.attempts.Load(); got != 5 {
		t.Errorf("attempts = %d, want 5 (4 failures, then success)", got)
	}
	times := h.prom.attemptTimes()
	var delay time.Duration
	for i := 1; i < len(times); i++ {
		delay = o.ReloadBackoff.next(delay)
		if gap := times[i].Sub(times[i-1]); gap < delay {
			t.Errorf("attempt %d came %v after the previous one, want at least %v", i+1, gap, delay)
		}
	}
	h.wantMetric(`lookout_reloader_reload_errors_total 4`)
	h.wantMetric(`lookout_reloader_reloads_total 1`)
	h.wantMetric(`lookout_reloader_last_reload_successful 1`)
}

func TestSidecarKeepsRetryingWhilePrometheusIsDown(t *testing.T) {
	h := newHarness(t)
	// Nothing listens here yet: take a port and close it.
	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL + "/-/reload"
	down.Close()
	h.writeConfig("global: {}\n")
	o := h.options()
	o.ReloadURL = url
	h.start(o)

	eventually(t, "reload errors are counted", func() bool {
		_, body := h.scrape("/metrics")
		return strings.Contains(body, "lookout_reloader_last_reload_successful 0\n") &&
			!strings.Contains(body, "lookout_reloader_reload_errors_total 0\n") &&
			!strings.Contains(body, "lookout_reloader_reload_errors_total 1\n")
	})
	if code, _ := h.scrape("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d, want 200: readiness is about the written file, not Prometheus", code)
	}
}

func TestSidecarReloadsWhenAWatchedRuleDirChanges(t *testing.T) {
	h := newHarness(t)
	rulesA := filepath.Join(t.TempDir(), "prometheus-k8s-rulefiles-0")
	rulesB := filepath.Join(t.TempDir(), "prometheus-k8s-rulefiles-1") // optional, not mounted yet
	kubeletWrite(t, rulesA, map[string][]byte{"default-a-uid.yaml": []byte("groups: []\n")})
	o := h.options()
	o.ConfigFile, o.OutputFile = "", ""
	o.WatchedDirs = []string{rulesA, rulesB}
	h.start(o)
	settle()
	if got := h.prom.attempts.Load(); got != 0 {
		t.Fatalf("reload attempts = %d before any change, want 0", got)
	}

	kubeletWrite(t, rulesA, map[string][]byte{"default-a-uid.yaml": []byte("groups: [{name: a, rules: []}]\n")})
	h.waitForReloads(1)

	kubeletWrite(t, rulesB, map[string][]byte{"default-b-uid.yaml": []byte("groups: []\n")})
	h.waitForReloads(2)

	// Same content rewritten: no reload.
	kubeletWrite(t, rulesB, map[string][]byte{"default-b-uid.yaml": []byte("groups: []\n")})
	h.waitForReloads(2)

	// A file removed from a directory.
	kubeletWrite(t, rulesA, map[string][]byte{})
	h.waitForReloads(3)
}

func TestSidecarAPIChangeBeforeTheFileIsNotRolledBackByTheOlderFile(t *testing.T) {
	h := newHarness(t)
	api := newFakeAPI(t, "monitoring", "prometheus-k8s", configKey)
	api.set("version: 1\n")
	h.writeConfig("version: 1\n")
	o := h.options()
	o.ConfigSecret = "monitoring/prometheus-k8s"
	o.API = api.client()
	h.start(o)

	h.waitForOutput("version: 1\n")
	h.waitForReloads(1)
	eventually(t, "the watch is open", func() bool { return api.watches.Load() > 0 })

	// The Secret changes; the API delivers it long before the kubelet updates the file.
	api.set("version: 3 # $(POD_NAME)\n")
	h.waitForOutput("version: 3 # prometheus-k8s-0\n")
	h.waitForReloads(2)
	// The first configuration may have been applied from either source, whichever was
	// first; the second came from the API.
	fromFile := h.metricValue(`lookout_reloader_config_apply_total{document="prometheus.env.yaml",source="file"}`)
	fromAPI := h.metricValue(`lookout_reloader_config_apply_total{document="prometheus.env.yaml",source="api"}`)
	if fromAPI < 1 || fromFile+fromAPI != 2 {
		t.Errorf("configurations applied: %v from the file and %v from the API, want 2 in all and the second from the API", fromFile, fromAPI)
	}

	// The kubelet catches up through an older value, then to the current one.
	h.writeConfig("version: 2\n")
	settle()
	if got := h.readOutput(); got != "version: 3 # prometheus-k8s-0\n" {
		t.Fatalf("output rolled back to %q", got)
	}
	h.writeConfig("version: 3 # $(POD_NAME)\n")
	h.waitForReloads(2)

	// A revert through the API is applied even though it was applied before.
	api.set("version: 1\n")
	h.waitForOutput("version: 1\n")
	h.waitForReloads(3)
}

func TestSidecarListsAgainWhenTheWatchExpires(t *testing.T) {
	h := newHarness(t)
	api := newFakeAPI(t, "monitoring", "prometheus-k8s", configKey)
	api.set("version: 1\n")
	h.writeConfig("version: 1\n")
	o := h.options()
	o.ConfigSecret = "monitoring/prometheus-k8s"
	o.API = api.client()
	h.start(o)
	h.waitForReloads(1)
	eventually(t, "the watch is open", func() bool { return api.watches.Load() > 0 })

	api.expireWatches()
	api.set("version: 2\n") // only a new list can see this
	h.waitForOutput("version: 2\n")
	h.waitForReloads(2)
	if got := api.lists.Load(); got < 2 {
		t.Errorf("lists = %d, want a second list after the watch expired", got)
	}
}

func TestSidecarReliesOnTheFileWhenTheSecretWatchIsForbidden(t *testing.T) {
	h := newHarness(t)
	api := newFakeAPI(t, "monitoring", "prometheus-k8s", configKey)
	api.set("from the api\n")
	api.setForbidden(true)
	h.writeConfig("version: 1\n")
	o := h.options()
	o.ConfigSecret = "monitoring/prometheus-k8s"
	o.API = api.client()
	h.start(o)

	h.waitForOutput("version: 1\n")
	h.waitForReloads(1)
	h.writeConfig("version: 2\n")
	h.waitForOutput("version: 2\n")
	h.waitForReloads(2)
	eventually(t, "the list has been retried", func() bool { return h.logs.count("Secret watch still forbidden") >= 2 })
	if n := h.logs.count("No permission to read the configuration Secret"); n != 1 {
		t.Errorf("the missing permission was logged %d times, want once", n)
	}
}

func TestSidecarTrustsTheFileAgainAfterTheWatchHasBeenBrokenLongEnough(t *testing.T) {
	h := newHarness(t)
	api := newFakeAPI(t, "monitoring", "prometheus-k8s", configKey)
	api.set("version: 1\n")
	h.writeConfig("version: 1\n")
	o := h.options()
	o.ConfigSecret = "monitoring/prometheus-k8s"
	o.API = api.client()
	o.FileTrustDelay = 300 * time.Millisecond
	h.start(o)
	h.waitForReloads(1)
	eventually(t, "the watch is open", func() bool { return api.watches.Load() > 0 })

	api.setForbidden(true)
	api.expireWatches()
	h.writeConfig("version: 2\n")
	time.Sleep(100 * time.Millisecond)
	if got := h.readOutput(); got != "version: 1\n" {
		t.Fatalf("output = %q within the trust delay, want the API's value", got)
	}
	h.waitForOutput("version: 2\n")
	h.waitForReloads(2)
}

func TestRunInitWritesAndExits(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.InitMode = true
	o.ReloadURL = "" // never used in init mode
	go func() {
		time.Sleep(30 * time.Millisecond)
		h.writeConfig("replica: $(POD_NAME) $(MISSING)\n")
	}()
	if err := RunInit(context.Background(), o); err != nil {
		t.Fatalf("RunInit: %v", err)
	}
	if got, want := h.readOutput(), "replica: prometheus-k8s-0 $(MISSING)\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	if got := h.prom.attempts.Load(); got != 0 {
		t.Errorf("init mode reloaded %d times", got)
	}
}

func TestRunInitFailsWhenTheConfigNeverAppears(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.InitTimeout = 50 * time.Millisecond
	err := RunInit(context.Background(), o)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RunInit = %v, want a deadline error", err)
	}
	if _, err := os.Stat(h.output); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("output exists after a failed init: %v", err)
	}
}

func TestRunInitReadsAPlainTextConfig(t *testing.T) {
	h := newHarness(t)
	o := h.options()
	o.ConfigFile = filepath.Join(h.configDir, "prometheus.yaml")
	must(t, os.WriteFile(o.ConfigFile, []byte("shard: $(SHARD)\n"), 0o644))
	must(t, RunInit(context.Background(), o))
	if got := h.readOutput(); got != "shard: 1\n" {
		t.Errorf("output = %q", got)
	}
}
