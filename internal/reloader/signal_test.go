package reloader

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakePromEnv makes the test binary act as a Prometheus that reloads on SIGHUP: it
// serves the two reload gauges on a port it writes to stdout and moves the success
// timestamp on every SIGHUP.
const fakePromEnv = "LOOKOUT_RELOADER_TEST_FAKE_PROMETHEUS"

func TestMain(m *testing.M) {
	if os.Getenv(fakePromEnv) != "" {
		signalledPrometheus()
		return
	}
	os.Exit(m.Run())
}

func signalledPrometheus() {
	var mu sync.Mutex
	reloads := 0
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "# TYPE %s gauge\n%s 1\n", metricReloadSuccessful, metricReloadSuccessful)
		fmt.Fprintf(w, "%s %d\n", metricReloadSuccessTime, 1700000000+reloads)
	}))
	fmt.Println(srv.URL)
	for range hup {
		mu.Lock()
		reloads++
		mu.Unlock()
	}
}

// startFakePrometheus runs the helper under argv[0] name and returns its PID and URL.
func startFakePrometheus(t *testing.T, name string) (int, string) {
	t.Helper()
	self, err := os.Executable()
	must(t, err)
	cmd := exec.Command(self)
	cmd.Args[0] = name
	cmd.Env = append(os.Environ(), fakePromEnv+"=1")
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	buf := make([]byte, 256)
	n, err := out.Read(buf)
	must(t, err)
	return cmd.Process.Pid, strings.TrimSpace(string(buf[:n]))
}

func TestProcessSignalReloadsTheNamedProcessAndConfirmsFromItsMetrics(t *testing.T) {
	name := "fake-prometheus-" + strconv.Itoa(os.Getpid())
	pid, url := startFakePrometheus(t, name)
	s := &ProcessSignalStrategy{Process: name, MetricsURL: url + "/metrics", Timeout: time.Minute, PollInterval: 10 * time.Millisecond}
	for i := range 3 {
		before, err := s.gauges(context.Background())
		must(t, err)
		if err := s.Reload(context.Background()); err != nil {
			t.Fatalf("reload %d of pid %d: %v", i, pid, err)
		}
		after, err := s.gauges(context.Background())
		must(t, err)
		if after.successTime <= before.successTime {
			t.Fatalf("reload %d returned before the process reloaded: %v then %v", i, before.successTime, after.successTime)
		}
	}
}

func TestProcessSignalReportsAFailedReload(t *testing.T) {
	dir := t.TempDir()
	writeProc(t, dir, 4242, "/bin/prometheus\x00--config.file=x\x00")
	var mu sync.Mutex
	failed := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		ok := 1
		if failed {
			ok = 0
		}
		fmt.Fprintf(w, "%s %d\n%s 1.7e+09\n", metricReloadSuccessful, ok, metricReloadSuccessTime)
	}))
	defer srv.Close()
	var signalled []int
	s := &ProcessSignalStrategy{Process: "prometheus", ProcDir: dir, MetricsURL: srv.URL, Timeout: time.Minute, PollInterval: 10 * time.Millisecond,
		signal: func(pid int, sig syscall.Signal) error {
			mu.Lock()
			defer mu.Unlock()
			signalled = append(signalled, pid)
			failed = true
			return nil
		}}
	err := s.Reload(context.Background())
	if err == nil || !strings.Contains(err.Error(), "failed reload") {
		t.Fatalf("Reload = %v, want the failed reload reported", err)
	}
	if len(signalled) != 1 || signalled[0] != 4242 {
		t.Fatalf("signalled %v, want [4242]", signalled)
	}
}

func TestProcessSignalSendsNothingWhilePrometheusDoesNotServeMetrics(t *testing.T) {
	dir := t.TempDir()
	writeProc(t, dir, 4242, "prometheus\x00")
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	s := &ProcessSignalStrategy{Process: "prometheus", ProcDir: dir, MetricsURL: srv.URL,
		signal: func(int, syscall.Signal) error { return errors.New("must not be called") }}
	if err := s.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Reload = %v, want the metrics error", err)
	}
}

func TestProcessSignalGivesUpWhenNoReloadIsSeenWithinTheTimeout(t *testing.T) {
	dir := t.TempDir()
	writeProc(t, dir, 4242, "prometheus\x00")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "%s 0\n%s 5\n", metricReloadSuccessful, metricReloadSuccessTime)
	}))
	defer srv.Close()
	s := &ProcessSignalStrategy{Process: "prometheus", ProcDir: dir, MetricsURL: srv.URL, Timeout: 50 * time.Millisecond, PollInterval: 10 * time.Millisecond,
		signal: func(int, syscall.Signal) error { return nil }}
	if err := s.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "no reload of prometheus (pid 4242) confirmed") {
		t.Fatalf("Reload = %v, want no confirmed reload", err)
	}
}

func TestFindProcess(t *testing.T) {
	cases := []struct {
		name    string
		procs   map[int]string
		want    int
		wantErr string
	}{
		{"finds the one process by the base name of argv[0]", map[int]string{7: "/bin/prometheus\x00--web.listen-address=:9090\x00", 9: "lookout-reloader\x00"}, 7, ""},
		{"ignores kernel threads and names that only start alike", map[int]string{2: "", 8: "prometheus-config-reloader\x00", 11: "prometheus\x00"}, 11, ""},
		{"refuses when there is none", map[int]string{8: "alertmanager\x00"}, 0, "no process named prometheus"},
		{"refuses when there are several", map[int]string{30: "prometheus\x00", 4: "/prometheus\x00"}, 0, "pids 4, 30"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for pid, cmdline := range c.procs {
				writeProc(t, dir, pid, cmdline)
			}
			must(t, os.MkdirAll(filepath.Join(dir, "self"), 0o755))
			got, err := FindProcess(dir, "prometheus")
			switch {
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("FindProcess = %d, %v; want an error containing %q", got, err, c.wantErr)
			case c.wantErr == "" && (err != nil || got != c.want):
				t.Fatalf("FindProcess = %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

func writeProc(t *testing.T, dir string, pid int, cmdline string) {
	t.Helper()
	d := filepath.Join(dir, strconv.Itoa(pid))
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, "cmdline"), []byte(cmdline), 0o644))
}

func TestTheSignalFlagsOfTheGeneratedPodMakeAProcessSignalReloader(t *testing.T) {
	o := parseFlags(t,
		"--config-file=/etc/prometheus/config/prometheus.yaml.gz",
		"--config-envsubst-file=/etc/prometheus/config_out/prometheus.env.yaml",
		"--reload-strategy=signal",
		"--reload-signal-process=prometheus",
		"--reload-metrics-url=https://127.0.0.1:9090/prom/metrics",
		"--reload-insecure-skip-verify",
	)
	s, err := NewSidecar(o)
	must(t, err)
	got, ok := s.reloads.strategy.(*ProcessSignalStrategy)
	if !ok {
		t.Fatalf("strategy is %T, want *ProcessSignalStrategy", s.reloads.strategy)
	}
	if got.Process != "prometheus" || got.MetricsURL != "https://127.0.0.1:9090/prom/metrics" || got.Client == nil || got.Timeout != o.ReloadTimeout {
		t.Errorf("strategy %+v does not carry the flags (a client that skips verification, the reload timeout)", got)
	}
}
