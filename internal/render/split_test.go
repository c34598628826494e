package render

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/config"

	"github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/scrape"
)

// bigConfig renders n static jobs whose targets are random, so that gzip
// cannot squeeze them into one Secret.
func bigConfig(t *testing.T, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("global:\n  scrape_interval: 30s\nrule_files:\n- /etc/prometheus/rules/x/*.yaml\nscrape_configs:\n")
	buf := make([]byte, 48)
	for i := range n {
		if _, err := rand.Read(buf); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "- job_name: job-%d\n  honor_labels: false\n  static_configs:\n  - targets:\n    - h%s.example:9100\n    labels:\n      token: %s\n",
			i, hex.EncodeToString(buf[:8]), hex.EncodeToString(buf[8:]))
	}
	return b.Bytes()
}

func TestAConfigTooLargeForOneSecretIsSplitAndPrometheusLoadsEveryJob(t *testing.T) {
	const jobs = 20000
	cfg := bigConfig(t, jobs)
	if _, err := config.Load(string(cfg), nil); err != nil {
		t.Fatalf("test input does not load: %v", err)
	}
	gz, err := Gzip(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(gz) <= MaxSecretDataBytes {
		t.Fatalf("test input is only %d bytes gzipped; it must not fit one Secret", len(gz))
	}
	main, pieces, err := split(resultOf(t, cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pieces) < 2 {
		t.Fatalf("got %d pieces, want several", len(pieces))
	}
	t.Logf("%d jobs, %d KiB gzipped → main config + %d pieces", jobs, len(gz)/1024, len(pieces))

	c := loadPieces(t, main, pieces)
	seen := jobNames(t, c)
	if len(seen) != jobs {
		t.Fatalf("Prometheus loaded %d jobs, want %d", len(seen), jobs)
	}
	for _, name := range []string{"job-0", "job-9999", fmt.Sprintf("job-%d", jobs-1)} {
		if !seen[name] {
			t.Errorf("job %s missing after the split", name)
		}
	}
	if len(c.RuleFiles) != 1 {
		t.Errorf("rule_files lost in the main config: %v", c.RuleFiles)
	}
}

func TestASmallConfigIsNotSplit(t *testing.T) {
	cfg := bigConfig(t, 10)
	main, pieces, err := split(resultOf(t, cfg), nil)
	if err != nil || pieces != nil || !bytes.Equal(main, cfg) {
		t.Fatalf("split of a small config: pieces %d, err %v", len(pieces), err)
	}
}

// resultOf cuts a config the way the scrape generator hands it over: the
// head, and each job as a group of its own.
func resultOf(t *testing.T, config []byte) *scrape.Result {
	t.Helper()
	start := bytes.Index(config, []byte("\nscrape_configs:\n"))
	if start < 0 {
		t.Fatal("no scrape_configs section")
	}
	head := config[:start+1]
	var groups []scrape.Group
	for _, item := range bytes.SplitAfter(config[start+len("\nscrape_configs:\n"):], []byte("\n")) {
		if bytes.HasPrefix(item, []byte("- job_name: ")) {
			name := strings.TrimSpace(string(item[len("- job_name: "):]))
			groups = append(groups, scrape.Group{Key: name})
		}
		if len(groups) == 0 {
			t.Fatalf("unexpected line before the first job: %q", item)
		}
		g := &groups[len(groups)-1]
		g.YAML = append(g.YAML, item...)
	}
	return &scrape.Result{Head: head, Groups: groups, Size: len(config)}
}

// loadPieces lays the split config out as the reloader does and loads it
// with Prometheus's loader.
func loadPieces(t *testing.T, main []byte, pieces [][]byte) *config.Config {
	t.Helper()
	dir := t.TempDir()
	for i, p := range pieces {
		if len(p) > MaxSecretDataBytes {
			t.Errorf("piece %d is %d bytes gzipped, over the budget", i, len(p))
		}
		zr, err := gzip.NewReader(bytes.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := io.ReadAll(zr)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("scrape-%d.yaml", i)), doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	local := strings.Replace(string(main), prometheus.ConfigPiecesGlob, filepath.Join(dir, "scrape-*.yaml"), 1)
	mainPath := filepath.Join(dir, "prometheus.yaml")
	if err := os.WriteFile(mainPath, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.LoadFile(mainPath, false, nil)
	if err != nil {
		t.Fatalf("Prometheus refuses the split config: %v", err)
	}
	return c
}

func jobNames(t *testing.T, c *config.Config) map[string]bool {
	t.Helper()
	scs, err := c.GetScrapeConfigs()
	if err != nil {
		t.Fatalf("Prometheus refuses a piece: %v", err)
	}
	out := map[string]bool{}
	for _, sc := range scs {
		out[sc.JobName] = true
	}
	return out
}

func TestOneChangedMonitorChangesExactlyOnePiece(t *testing.T) {
	cfg := bigConfig(t, 3000)
	res := resultOf(t, cfg)
	head, groups := res.Head, res.Groups
	cache := &pieceCache{}
	_, before, err := split(res, cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != prometheus.ConfigPieceSlots {
		t.Fatalf("%d pieces, want %d", len(before), prometheus.ConfigPieceSlots)
	}
	// Change one job, add one, remove one: three pieces at most change, and
	// each only where its group hashes to.
	changed := map[int]bool{pieceOf(groups[10].Key): true, pieceOf("job-new"): true, pieceOf(groups[20].Key): true}
	groups[10].YAML = bytes.Replace(groups[10].YAML, []byte("honor_labels: false"), []byte("honor_labels: true"), 1)
	groups = append(groups[:20], groups[21:]...)
	groups = append(groups, scrape.Group{Key: "job-new", YAML: []byte("- job_name: job-new\n  static_configs:\n  - targets: [a:1]\n")})
	res = &scrape.Result{Head: head, Groups: groups, Size: len(cfg)}
	main, after, err := split(res, cache)
	if err != nil {
		t.Fatal(err)
	}
	for i := range after {
		if same := bytes.Equal(before[i], after[i]); same == changed[i] {
			t.Errorf("piece %d: changed %v, want %v", i, !same, changed[i])
		}
	}
	// The cached pieces are byte-identical to pieces compressed afresh.
	_, fresh, err := split(res, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range fresh {
		if !bytes.Equal(fresh[i], after[i]) {
			t.Errorf("piece %d from the cache differs from a fresh split", i)
		}
	}
	names := jobNames(t, loadPieces(t, main, after))
	if len(names) != 3000 || !names["job-new"] || names[groups[19].Key] == false || names["job-20"] {
		t.Errorf("loaded %d jobs; job-new %v, job-20 %v", len(names), names["job-new"], names["job-20"])
	}
}

func TestPiecesThatDoNotFitArePackedInOrder(t *testing.T) {
	// Ten large groups that all hash to piece 0: together they do not fit one Secret.
	var groups []scrape.Group
	whole := []byte("global:\n  scrape_interval: 30s\nscrape_configs:\n")
	buf := make([]byte, 150*1024)
	for i := 0; len(groups) < 10; i++ {
		key := fmt.Sprintf("job-%d", i)
		if pieceOf(key) != 0 {
			continue
		}
		if _, err := rand.Read(buf); err != nil {
			t.Fatal(err)
		}
		y := []byte(fmt.Sprintf("- job_name: %s\n  static_configs:\n  - targets: [a:1]\n    labels:\n      blob: %s\n", key, hex.EncodeToString(buf)))
		groups = append(groups, scrape.Group{Key: key, YAML: y})
		whole = append(whole, y...)
	}
	head := []byte("global:\n  scrape_interval: 30s\n")
	main, pieces, err := split(&scrape.Result{Head: head, Groups: groups, Size: len(whole)}, &pieceCache{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pieces) < 2 || len(pieces) >= prometheus.ConfigPieceSlots {
		t.Fatalf("%d pieces, want a few packed ones", len(pieces))
	}
	if names := jobNames(t, loadPieces(t, main, pieces)); len(names) != 10 {
		t.Fatalf("loaded %d jobs, want 10", len(names))
	}
}

func TestPieceOfIsFNV1a(t *testing.T) {
	for _, key := range []string{"", "serviceMonitor/ns/app", "podMonitor/a-very-long-namespace-name/with-a-long-name", scrape.AdditionalGroupKey} {
		h := fnv.New32a()
		h.Write([]byte(key))
		if got, want := pieceOf(key), int(h.Sum32()%prometheus.ConfigPieceSlots); got != want {
			t.Errorf("pieceOf(%q) = %d, want %d", key, got, want)
		}
	}
}
