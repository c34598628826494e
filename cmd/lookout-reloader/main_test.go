package main

import (
	"bytes"
	"compress/gzip"
	"context"
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
}
