package reloader

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Prometheus's gauges about its last configuration reload: the time of the last
// successful one and whether the last attempt succeeded.
const (
	metricReloadSuccessTime = "prometheus_config_last_reload_success_timestamp_seconds"
	metricReloadSuccessful  = "prometheus_config_last_reload_successful"
)

// ProcessSignalStrategy sends SIGHUP to the one process named Process among those it
// can see in ProcDir (the pod's shared process namespace), for a Prometheus that runs
// without its lifecycle API. A signal carries no answer, so when MetricsURL is set the
// reload is confirmed from Prometheus's own gauges: the success timestamp must move
// past the value read just before the signal. Reading that value first also means no
// signal is sent to a Prometheus that is not serving yet, when SIGHUP could still
// find it without its handler installed and end it.
type ProcessSignalStrategy struct {
	// Process is matched against the base name of each process's argv[0].
	Process string
	// ProcDir is the proc file system to scan; empty means /proc.
	ProcDir string
	// MetricsURL is Prometheus's /metrics; empty sends the signal unconfirmed.
	MetricsURL string
	Client     *http.Client
	// Timeout bounds the wait for the confirmation.
	Timeout time.Duration
	// PollInterval is how often /metrics is read while waiting; zero means 100ms.
	PollInterval time.Duration
	// signal delivers sig to pid; nil means syscall.Kill (tests).
	signal func(pid int, sig syscall.Signal) error
}

// Reload finds the process, signals it once and waits for the confirmation.
func (s *ProcessSignalStrategy) Reload(ctx context.Context) error {
	var before reloadGauges
	if s.MetricsURL != "" {
		var err error
		if before, err = s.gauges(ctx); err != nil {
			return fmt.Errorf("before signalling %s: %w", s.Process, err)
		}
	}
	pid, err := FindProcess(s.procDir(), s.Process)
	if err != nil {
		return err
	}
	kill := s.signal
	if kill == nil {
		kill = syscall.Kill
	}
	if err := kill(pid, syscall.SIGHUP); err != nil {
		return fmt.Errorf("send SIGHUP to %s (pid %d): %w", s.Process, pid, err)
	}
	if s.MetricsURL == "" {
		return nil
	}
	return s.confirm(ctx, pid, before)
}

// confirm waits until Prometheus reports a successful reload after before, or a failed
// one when the previous attempt had succeeded. A failure after a failure changes no
// gauge, so it shows as no reload within the timeout.
func (s *ProcessSignalStrategy) confirm(ctx context.Context, pid int, before reloadGauges) error {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	interval := s.PollInterval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr error
	for {
		now, err := s.gauges(ctx)
		switch {
		case err != nil:
			lastErr = err
		case now.successTime != before.successTime:
			return nil
		case before.successful && !now.successful:
			return fmt.Errorf("%s (pid %d) reported a failed reload after SIGHUP (%s is 0; its log says why)", s.Process, pid, metricReloadSuccessful)
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("no reload of %s (pid %d) confirmed after SIGHUP: %w", s.Process, pid, lastErr)
			}
			return fmt.Errorf("no reload of %s (pid %d) confirmed after SIGHUP: %s stayed %v (%s=%v)",
				s.Process, pid, metricReloadSuccessTime, before.successTime, metricReloadSuccessful, now.successful)
		case <-t.C:
		}
	}
}

func (s *ProcessSignalStrategy) procDir() string {
	if s.ProcDir != "" {
		return s.ProcDir
	}
	return "/proc"
}

type reloadGauges struct {
	successTime float64
	successful  bool
}

// gauges reads the two reload gauges from s.MetricsURL.
func (s *ProcessSignalStrategy) gauges(ctx context.Context) (reloadGauges, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.MetricsURL, nil)
	if err != nil {
		return reloadGauges{}, fmt.Errorf("get %s: %w", s.MetricsURL, err)
	}
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return reloadGauges{}, fmt.Errorf("get %s: %w", s.MetricsURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return reloadGauges{}, fmt.Errorf("get %s: %s", s.MetricsURL, resp.Status)
	}
	var g reloadGauges
	var seenTime, seenOK bool
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := sampleLine(sc.Text())
		if !ok {
			continue
		}
		switch name {
		case metricReloadSuccessTime:
			g.successTime, seenTime = value, true
		case metricReloadSuccessful:
			g.successful, seenOK = value == 1, true
		}
	}
	if err := sc.Err(); err != nil {
		return reloadGauges{}, fmt.Errorf("read %s: %w", s.MetricsURL, err)
	}
	if !seenTime || !seenOK {
		return reloadGauges{}, fmt.Errorf("%s has no %s or %s", s.MetricsURL, metricReloadSuccessTime, metricReloadSuccessful)
	}
	return g, nil
}

// sampleLine splits an unlabelled sample of the text exposition format into its name
// and value; the two gauges carry no labels.
func sampleLine(line string) (string, float64, bool) {
	if line == "" || line[0] == '#' {
		return "", 0, false
	}
	fields := strings.Fields(line)
	if len(fields) < 2 || strings.ContainsRune(fields[0], '{') {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(fields[1], 64)
	if err != nil {
		return "", 0, false
	}
	return fields[0], v, true
}

// FindProcess returns the PID of the one process in procDir whose argv[0] has the base
// name name. The caller's own process never matches. None or several is an error that
// lists what was found: signalling the wrong Prometheus would reload a server whose
// files did not change, and leave this one stale.
func FindProcess(procDir, name string) (int, error) {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return 0, fmt.Errorf("list processes in %s: %w", procDir, err)
	}
	self := os.Getpid()
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || pid == self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(procDir, e.Name(), "cmdline"))
		if err != nil {
			continue // gone since the listing, or not ours to read
		}
		argv0, _, _ := bytes.Cut(raw, []byte{0})
		if len(argv0) > 0 && filepath.Base(string(argv0)) == name {
			found = append(found, pid)
		}
	}
	slices.Sort(found)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return 0, fmt.Errorf("no process named %s in %s (is the pod's process namespace shared?)", name, procDir)
	default:
		return 0, errors.New("several processes named " + name + " in " + procDir + " (pids " + joinInts(found) + "), want exactly one")
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
