package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeGzip(t *testing.T, path, content string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(content))
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestInitModeWritesTheConfigAndExitsZero(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "prometheus.yaml.gz")
	out := filepath.Join(dir, "out", "prometheus.env.yaml")
	writeGzip(t, in, "replica: $(POD_NAME)\n")
	t.Setenv("POD_NAME", "prometheus-k8s-1")

	var stderr bytes.Buffer
	code := run(context.Background(), []string{"--init-mode", "--config-file=" + in, "--config-envsubst-file=" + out}, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil || string(got) != "replica: prometheus-k8s-1\n" {
		t.Fatalf("output = %q, %v", got, err)
	}
	if !strings.Contains(stderr.String(), `"msg":"Wrote the configuration"`) {
		t.Errorf("want a JSON log line, got:\n%s", stderr.String())
	}
}

func TestInitModeWritesThePresentPiecesAndSkipsTheAbsentOnes(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "config", "prometheus.yaml.gz")
	out := filepath.Join(dir, "config_out")
	for _, d := range []string{filepath.Dir(in), filepath.Join(dir, "scrape", "0"), filepath.Join(dir, "scrape", "1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeGzip(t, in, "scrape_config_files: [config_out/scrape-*.yaml]\n")
	writeGzip(t, filepath.Join(dir, "scrape", "0", "scrape.yaml.gz"), "scrape_configs: [{job_name: a, relabel_configs: [{regex: $(SHARD)}]}]\n")
	t.Setenv("SHARD", "3")
	piece := func(i int) string {
		return fmt.Sprintf("--config-piece=%s=%s=monitoring/prometheus-k8s-scrape-%d",
			filepath.Join(dir, "scrape", fmt.Sprint(i), "scrape.yaml.gz"), filepath.Join(out, fmt.Sprintf("scrape-%d.yaml", i)), i)
	}

	var stderr bytes.Buffer
	code := run(context.Background(), []string{
		"--init-mode", "--config-file=" + in, "--config-envsubst-file=" + filepath.Join(out, "prometheus.env.yaml"),
		piece(0), piece(1),
	}, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	got, err := os.ReadFile(filepath.Join(out, "scrape-0.yaml"))
	if err != nil || string(got) != "scrape_configs: [{job_name: a, relabel_configs: [{regex: 3}]}]\n" {
		t.Errorf("piece 0 = %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(out, "scrape-1.yaml")); !os.IsNotExist(err) {
		t.Errorf("absent piece 1 has an output: %v", err)
	}
}

func TestSidecarStopsCleanlyWhenSignalled(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "prometheus.yaml.gz")
	writeGzip(t, in, "global: {}\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{
			"--config-file=" + in,
			"--config-envsubst-file=" + filepath.Join(dir, "out.yaml"),
			"--listen-address=127.0.0.1:0",
			"--reload-url=http://127.0.0.1:1/-/reload",
			"--watch-interval=10ms",
		}, &stderr)
	}()
	time.Sleep(50 * time.Millisecond)
	cancel() // what SIGTERM does through signal.NotifyContext
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sidecar did not stop")
	}
}

func TestBadFlagsExitTwo(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--config-file"}, &stderr); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if code := run(context.Background(), []string{"--config-file=a.gz"}, &stderr); code != 1 {
		t.Errorf("exit code %d for invalid options, want 1", code)
	}
	if code := run(context.Background(), []string{"--config-piece=scrape.yaml.gz"}, &stderr); code != 2 {
		t.Errorf("exit code %d for a --config-piece without an output, want 2", code)
	}
}
