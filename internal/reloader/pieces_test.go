package reloader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The pieces are laid out as the operator's pod spec mounts them: Secret
// prometheus-k8s-scrape-<i>, key scrape.yaml.gz, optional volume at scrape/<i>/, output
// config_out/scrape-<i>.yaml.
const pieceKey = "scrape.yaml.gz"

func pieceSecretName(i int) string { return fmt.Sprintf("prometheus-k8s-scrape-%d", i) }

// piece returns piece i of the harness; withAPI names its Secret.
func (h *harness) piece(i int, withAPI bool) Piece {
	p := Piece{
		Input:  filepath.Join(filepath.Dir(h.configDir), "scrape", fmt.Sprint(i), pieceKey),
		Output: filepath.Join(filepath.Dir(h.output), fmt.Sprintf("scrape-%d.yaml", i)),
	}
	if withAPI {
		p.Secret = "monitoring/" + pieceSecretName(i)
	}
	return p
}

// withPieces adds pieces 0..n-1 to o.
func (h *harness) withPieces(o Options, n int, withAPI bool) Options {
	for i := range n {
		o.Pieces = append(o.Pieces, h.piece(i, withAPI))
	}
	return o
}

// writePiece updates piece i's optional Secret volume the way the kubelet does.
func (h *harness) writePiece(i int, content string) {
	kubeletWrite(h.t, filepath.Dir(h.piece(i, false).Input), map[string][]byte{pieceKey: gz(h.t, content)})
}

// emptyPiece is what the kubelet makes of the optional volume once the Secret is gone.
func (h *harness) emptyPiece(i int) {
	kubeletWrite(h.t, filepath.Dir(h.piece(i, false).Input), map[string][]byte{})
}

// readPiece returns piece i's output, or "absent".
func (h *harness) readPiece(i int) string {
	b, err := os.ReadFile(h.piece(i, false).Output)
	if errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	must(h.t, err)
	return string(b)
}

func (h *harness) waitForPiece(i int, want string) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("piece %d is %q", i, want), func() bool { return h.readPiece(i) == want })
}

// loaded describes what Prometheus would load from the main output and pieces 0..n-1.
func (h *harness) loaded(n int) string {
	parts := []string{h.readOutput()}
	for i := range n {
		parts = append(parts, h.readPiece(i))
	}
	return strings.Join(parts, " | ")
}

// scrapePiece is a piece as the operator generates it, with the sharding rule that
// needs $(SHARD); substituted is what the reloader must make of it.
func scrapePiece(i, version int) string {
	return fmt.Sprintf("scrape_configs:\n- job_name: job-%d-v%d\n  relabel_configs:\n  - {source_labels: [__tmp_hash], regex: $(SHARD), action: keep}\n", i, version)
}

func substituted(config string) string {
	return strings.NewReplacer("$(SHARD)", testEnv["SHARD"], "$(POD_NAME)", testEnv["POD_NAME"]).Replace(config)
}

func (h *harness) runInit(o Options) {
	h.t.Helper()
	o.InitMode = true
	must(h.t, RunInit(context.Background(), o))
}

func TestSidecarWritesEveryPieceSubstitutedAndReloadsOnce(t *testing.T) {
	h := newHarness(t)
	main := "global:\n  external_labels:\n    prometheus_replica: $(POD_NAME)\nscrape_config_files: [config_out/scrape-*.yaml]\n"
	h.writeConfig(main)
	for i := range 3 {
		h.writePiece(i, scrapePiece(i, 1))
	}
	// Piece 3 is mounted but its Secret does not exist: the volume is empty.
	h.emptyPiece(3)
	h.prom.observeReloads(func() string { return h.loaded(4) })
	h.start(h.withPieces(h.options(), 4, false))

	h.waitForOutput(substituted(main))
	for i := range 3 {
		h.waitForPiece(i, substituted(scrapePiece(i, 1)))
	}
	h.waitForReloads(1)
	want := h.loaded(4)
	if strings.Contains(want, "$(") || h.readPiece(3) != "absent" {
		t.Fatalf("outputs = %s, want every present piece substituted and no piece 3", want)
	}
	if got := h.prom.loadedAt(1); got != want {
		t.Errorf("the reload saw %s, want every piece: %s", got, want)
	}
	eventually(t, "the sidecar is ready", h.sidecar.Ready)
	h.wantMetric(`lookout_reloader_config_apply_total{document="prometheus.env.yaml",source="file"} 1`)
	h.wantMetric(`lookout_reloader_config_apply_total{document="scrape-2.yaml",source="file"} 1`)
	h.wantMetric(`lookout_reloader_config_apply_total{document="scrape-2.yaml",source="api"} 0`)
	h.wantMetric(`lookout_reloader_config_present{document="scrape-0.yaml"} 1`)
	h.wantMetric(`lookout_reloader_config_present{document="scrape-3.yaml"} 0`)

	// One piece changes: it alone is rewritten.
	before, err := os.Stat(h.piece(0, false).Output)
	must(t, err)
	h.writePiece(1, scrapePiece(1, 2))
	h.waitForPiece(1, substituted(scrapePiece(1, 2)))
	h.waitForReloads(2)
	after, err := os.Stat(h.piece(0, false).Output)
	must(t, err)
	if !os.SameFile(before, after) {
		t.Error("an unchanged piece was rewritten")
	}
}

func TestSidecarGivesOneReloadForABurstOfChangesToSeveralPieces(t *testing.T) {
	const n = 5
	for _, through := range []string{"the API", "the mounted files"} {
		t.Run("through "+through, func(t *testing.T) {
			h := newHarness(t)
			withAPI := through == "the API"
			api := newFakeAPI(t, "monitoring", "prometheus-k8s", configKey)
			h.writeConfig("scrape_config_files: [config_out/scrape-*.yaml]\n")
			for i := range n {
				h.writePiece(i, scrapePiece(i, 1))
				api.setSecret(pieceSecretName(i), pieceKey, scrapePiece(i, 1))
			}
			o := h.withPieces(h.options(), n, withAPI)
			o.API = api.client()
			// A burst is what lands within the debounce. The default (100 ms) is
			// far longer than five volume swaps take, but not than a descheduled
			// test goroutine on a loaded machine takes between two of them.
			o.ReloadDebounce = 10 * DefaultOptions().ReloadDebounce
			// The init container has written everything: starting needs no reload.
			h.runInit(o)
			h.prom.observeReloads(func() string { return h.loaded(n) })
			h.start(o)
			eventually(t, "the sidecar is ready", h.sidecar.Ready)
			if withAPI {
				eventually(t, "every piece is watched", func() bool {
					for i := range n {
						if api.openWatches(pieceSecretName(i)) == 0 {
							return false
						}
					}
					return true
				})
			}
			settle()
			if got := h.prom.attempts.Load(); got != 0 {
				t.Fatalf("reload attempts = %d before any change, want 0", got)
			}

			// The operator rewrites the pieces back to back; the kubelet updates the
			// volumes in one pod sync.
			for i := range n {
				if withAPI {
					api.setSecret(pieceSecretName(i), pieceKey, scrapePiece(i, 2))
				} else {
					h.writePiece(i, scrapePiece(i, 2))
				}
			}
			for i := range n {
				h.waitForPiece(i, substituted(scrapePiece(i, 2)))
			}
			h.waitForReloads(1)
			if got, want := h.prom.loadedAt(1), h.loaded(n); got != want {
				t.Errorf("the reload saw %s, want all the new pieces: %s", got, want)
			}
			if withAPI {
				if got := api.selectedNames(); len(got) != n {
					t.Errorf("the API was asked about %v, want exactly the %d piece Secrets", got, n)
				}
			}
		})
	}
}

func TestSidecarRemovesTheOutputOfAPieceWhoseSecretIsDeletedAndReloads(t *testing.T) {
	t.Run("the API says so first", func(t *testing.T) {
		h := newHarness(t)
		api := newFakeAPI(t, "monitoring", "prometheus-k8s", configKey)
		h.writeConfig("scrape_config_files: [config_out/scrape-*.yaml]\n")
		for i := range 2 {
			h.writePiece(i, scrapePiece(i, 1))
			api.setSecret(pieceSecretName(i), pieceKey, scrapePiece(i, 1))
		}
		o := h.withPieces(h.options(), 2, true)
		o.API = api.client()
		h.runInit(o)
		h.start(o)
		eventually(t, "piece 1 is watched", func() bool { return api.openWatches(pieceSecretName(1)) > 0 })

		api.deleteSecret(pieceSecretName(1))
		h.waitForPiece(1, "absent")
		h.waitForReloads(1)
		if got := h.readPiece(0); got != substituted(scrapePiece(0, 1)) {
			t.Errorf("piece 0 = %q, want it untouched", got)
		}
		h.wantMetric(`lookout_reloader_config_present{document="scrape-1.yaml"} 0`)
		h.wantMetric(`lookout_reloader_config_present{document="scrape-0.yaml"} 1`)

		// The kubelet has not synced yet and even rewrites the stale file: it cannot bring
		// the piece back. Then the volume empties, which changes nothing.
		h.writePiece(1, scrapePiece(1, 1))
		settle()
		if got := h.readPiece(1); got != "absent" {
			t.Fatalf("the stale file brought the deleted piece back: %q", got)
		}
		h.emptyPiece(1)
		h.waitForReloads(1)
	})

	t.Run("the mounted file only", func(t *testing.T) {
		h := newHarness(t)
		h.writeConfig("scrape_config_files: [config_out/scrape-*.yaml]\n")
		for i := range 2 {
			h.writePiece(i, scrapePiece(i, 1))
		}
		o := h.withPieces(h.options(), 2, false)
		h.runInit(o)
		h.start(o)
		eventually(t, "the sidecar is ready", h.sidecar.Ready)

		h.emptyPiece(0)
		h.waitForPiece(0, "absent")
		h.waitForReloads(1)

		// The Secret comes back.
		h.writePiece(0, scrapePiece(0, 2))
		h.waitForPiece(0, substituted(scrapePiece(0, 2)))
		h.waitForReloads(2)
	})
}

func TestSidecarAPIDeliversAPieceBeforeTheFileAndTheOlderFileDoesNotRollItBack(t *testing.T) {
	h := newHarness(t)
	api := newFakeAPI(t, "monitoring", "prometheus-k8s", configKey)
	h.writeConfig("scrape_config_files: [config_out/scrape-*.yaml]\n")
	h.writePiece(0, scrapePiece(0, 1))
	api.setSecret(pieceSecretName(0), pieceKey, scrapePiece(0, 1))
	h.emptyPiece(1) // Secret 1 does not exist yet
	o := h.withPieces(h.options(), 2, true)
	o.API = api.client()
	h.runInit(o)
	h.start(o)
	eventually(t, "both pieces are watched", func() bool {
		return api.openWatches(pieceSecretName(0)) > 0 && api.openWatches(pieceSecretName(1)) > 0
	})

	// A changed piece and a new one reach the reloader through the API long before the
	// kubelet updates the volumes.
	api.setSecret(pieceSecretName(0), pieceKey, scrapePiece(0, 3))
	h.waitForPiece(0, substituted(scrapePiece(0, 3)))
	h.waitForReloads(1)
	api.setSecret(pieceSecretName(1), pieceKey, scrapePiece(1, 1))
	h.waitForPiece(1, substituted(scrapePiece(1, 1)))
	h.waitForReloads(2)
	h.wantMetric(`lookout_reloader_config_apply_total{document="scrape-0.yaml",source="api"} 1`)
	h.wantMetric(`lookout_reloader_config_apply_total{document="scrape-1.yaml",source="api"} 1`)

	// The kubelet catches up through an older value of piece 0 while piece 1's volume is
	// still empty.
	h.writePiece(0, scrapePiece(0, 2))
	h.emptyPiece(1)
	settle()
	if got := h.readPiece(0); got != substituted(scrapePiece(0, 3)) {
		t.Fatalf("piece 0 rolled back to %q", got)
	}
	if got := h.readPiece(1); got != substituted(scrapePiece(1, 1)) {
		t.Fatalf("piece 1 = %q, want the API's value", got)
	}
	h.writePiece(0, scrapePiece(0, 3))
	h.writePiece(1, scrapePiece(1, 1))
	h.waitForReloads(2)
}

func TestRunInitWritesTheMainConfigAndAllPresentPiecesAndSkipsAbsentOnes(t *testing.T) {
	h := newHarness(t)
	h.writeConfig("replica: $(POD_NAME)\n")
	h.writePiece(0, scrapePiece(0, 1))
	h.writePiece(1, scrapePiece(1, 1))
	h.emptyPiece(2) // optional volume of a Secret that does not exist
	// Piece 3's volume directory does not exist at all. Piece 2 has an output left over
	// from an earlier start of the pod (config_out outlives container restarts).
	must(t, os.MkdirAll(filepath.Dir(h.output), 0o755))
	must(t, os.WriteFile(h.piece(2, false).Output, []byte("stale\n"), 0o644))
	o := h.withPieces(h.options(), 4, true)
	o.ReloadURL = "" // never used in init mode

	h.runInit(o)
	if got := h.readOutput(); got != "replica: prometheus-k8s-0\n" {
		t.Errorf("main output = %q", got)
	}
	for i, want := range []string{substituted(scrapePiece(0, 1)), substituted(scrapePiece(1, 1)), "absent", "absent"} {
		if got := h.readPiece(i); got != want {
			t.Errorf("piece %d = %q, want %q", i, got, want)
		}
	}
	if got := h.prom.attempts.Load(); got != 0 {
		t.Errorf("init mode reloaded %d times", got)
	}
	if n := h.logs.count("level=ERROR") + h.logs.count("level=WARN"); n != 0 {
		t.Errorf("%d warnings or errors about absent pieces", n)
	}
}

func TestRunInitFailsOnAPieceItCannotDecode(t *testing.T) {
	h := newHarness(t)
	h.writeConfig("global: {}\n")
	must(t, os.MkdirAll(filepath.Dir(h.piece(0, false).Input), 0o755))
	must(t, os.WriteFile(h.piece(0, false).Input, []byte("not gzip"), 0o644))
	o := h.withPieces(h.options(), 1, false)
	o.InitMode = true
	if err := RunInit(context.Background(), o); err == nil || !strings.Contains(err.Error(), "gunzip") {
		t.Fatalf("RunInit = %v, want a decoding error: Prometheus must not start without a piece", err)
	}
}

func TestSidecarTreatsAnAbsentOptionalPieceAtStartAsNoError(t *testing.T) {
	h := newHarness(t)
	api := newFakeAPI(t, "monitoring", "prometheus-k8s", configKey)
	h.writeConfig("scrape_config_files: [config_out/scrape-*.yaml]\n")
	// Piece 0's Secret does not exist: the optional volume's directory is empty and the
	// API finds nothing. Piece 1 is not even mounted.
	h.emptyPiece(0)
	o := h.withPieces(h.options(), 2, true)
	o.API = api.client()
	h.start(o)

	h.waitForOutput("scrape_config_files: [config_out/scrape-*.yaml]\n")
	h.waitForReloads(1)
	eventually(t, "the sidecar is ready", h.sidecar.Ready)
	eventually(t, "both pieces are watched", func() bool {
		return api.openWatches(pieceSecretName(0)) > 0 && api.openWatches(pieceSecretName(1)) > 0
	})
	for i := range 2 {
		if got := h.readPiece(i); got != "absent" {
			t.Errorf("piece %d = %q, want no output", i, got)
		}
	}
	if n := h.logs.count("level=ERROR") + h.logs.count("level=WARN"); n != 0 {
		t.Errorf("%d warnings or errors about absent pieces", n)
	}
	h.wantMetric(`lookout_reloader_config_present{document="scrape-0.yaml"} 0`)

	// The operator creates the Secret later.
	api.setSecret(pieceSecretName(0), pieceKey, scrapePiece(0, 1))
	h.waitForPiece(0, substituted(scrapePiece(0, 1)))
	h.waitForReloads(2)
}

func TestSidecarWaitsForTheMainConfigButNotForPieces(t *testing.T) {
	h := newHarness(t)
	h.writePiece(0, scrapePiece(0, 1))
	h.start(h.withPieces(h.options(), 2, false))
	h.waitForPiece(0, substituted(scrapePiece(0, 1)))
	settle()
	if h.sidecar.Ready() {
		t.Fatal("ready without the main configuration")
	}
	h.writeConfig("global: {}\n")
	h.waitForOutput("global: {}\n")
	eventually(t, "the sidecar is ready", h.sidecar.Ready)
}

// countingStrategy records when reloads happen.
type countingStrategy struct {
	mu    sync.Mutex
	times []time.Time
}

func (c *countingStrategy) Reload(context.Context) error {
	c.mu.Lock()
	c.times = append(c.times, time.Now())
	c.mu.Unlock()
	return nil
}

func (c *countingStrategy) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.times)
}

func TestReloadLoopStillReloadsWhileChangesKeepComing(t *testing.T) {
	var lines logLines
	strategy := &countingStrategy{}
	const debounce = 10 * time.Millisecond
	l := newReloadLoop(strategy, Backoff{Initial: time.Millisecond, Max: time.Millisecond}, debounce, newMetrics(nil, 0), testLogger(t, &lines))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.run(ctx)
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()

	// A request every 2 ms for 300 ms never leaves the debounce quiet for 10 ms.
	start := time.Now()
	var last time.Time
	for time.Since(start) < 300*time.Millisecond {
		last = time.Now()
		l.request()
		time.Sleep(2 * time.Millisecond)
	}
	// At least one reload per maxDebounceFactor*debounce (100 ms).
	if got := strategy.count(); got < 2 {
		t.Errorf("reloads during a 300 ms stream = %d, want at least 2", got)
	}
	eventually(t, "a reload follows the last request", func() bool {
		strategy.mu.Lock()
		defer strategy.mu.Unlock()
		return strategy.times[len(strategy.times)-1].After(last)
	})
}
