package render

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/config"

	"github.com/lookout-operator/lookout/internal/render/prometheus"
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
	main, pieces, err := split(cfg, gz)
	if err != nil {
		t.Fatal(err)
	}
	if len(pieces) < 2 {
		t.Fatalf("got %d pieces, want several", len(pieces))
	}
	t.Logf("%d jobs, %d KiB gzipped → main config + %d pieces", jobs, len(gz)/1024, len(pieces))

	// Lay the files out as the reloader does, and let Prometheus load them.
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
	scs, err := c.GetScrapeConfigs()
	if err != nil {
		t.Fatalf("Prometheus refuses a piece: %v", err)
	}
	if len(scs) != jobs {
		t.Fatalf("Prometheus loaded %d jobs, want %d", len(scs), jobs)
	}
	seen := map[string]bool{}
	for _, sc := range scs {
		seen[sc.JobName] = true
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
	gz, _ := Gzip(cfg)
	main, pieces, err := split(cfg, gz)
	if err != nil || pieces != nil || !bytes.Equal(main, cfg) {
		t.Fatalf("split of a small config: pieces %d, err %v", len(pieces), err)
	}
}
