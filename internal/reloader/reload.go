package reloader

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Strategy makes Prometheus load its configuration files again.
type Strategy interface {
	Reload(ctx context.Context) error
}

// HTTPStrategy POSTs to Prometheus's lifecycle endpoint (/-/reload). Prometheus answers
// after it has applied the configuration, with a non-2xx status and the reason when it
// could not.
type HTTPStrategy struct {
	URL     string
	Client  *http.Client
	Timeout time.Duration
}

// Reload sends one request.
func (h *HTTPStrategy) Reload(ctx context.Context) error {
	if h.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, nil)
	if err != nil {
		return fmt.Errorf("post %s: %w", h.URL, err)
	}
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("post %s: %w", h.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post %s: %s: %s", h.URL, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// SignalStrategy sends SIGHUP to the process whose PID is in PIDFile. It needs a shared
// process namespace, and it cannot tell whether the reload worked: a signal delivered is
// a success.
type SignalStrategy struct {
	PIDFile string
}

// Reload signals the process once.
func (s *SignalStrategy) Reload(context.Context) error {
	raw, err := os.ReadFile(s.PIDFile)
	if err != nil {
		return fmt.Errorf("read PID file: %w", err)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("PID file %s holds %q, not a PID", s.PIDFile, bytes.TrimSpace(raw))
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return fmt.Errorf("find process %d: %w", pid, err)
	}
	if err := p.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("signal process %d: %w", pid, err)
	}
	return nil
}

// maxDebounceFactor bounds the debounce: a reload waits for a quiet period of debounce,
// but never more than maxDebounceFactor*debounce after the request that started the
// wait, so changes that keep coming still reach Prometheus.
const maxDebounceFactor = 10

// reloadLoop runs reloads one at a time, retrying each until it succeeds. A request
// starts a debounce: the reload waits until no request has come for debounce, so a burst
// of changes (several pieces written within milliseconds) gives one reload, which sees
// all of them. Requests that arrive while a reload is in flight collapse into one more
// reload afterwards: the files may have changed after Prometheus read them.
type reloadLoop struct {
	strategy Strategy
	backoff  Backoff
	debounce time.Duration
	metrics  *metrics
	log      *slog.Logger
	requests chan struct{}
}

func newReloadLoop(s Strategy, b Backoff, debounce time.Duration, m *metrics, log *slog.Logger) *reloadLoop {
	return &reloadLoop{strategy: s, backoff: b, debounce: debounce, metrics: m, log: log, requests: make(chan struct{}, 1)}
}

// request asks for a reload after the current one; it never blocks.
func (l *reloadLoop) request() {
	select {
	case l.requests <- struct{}{}:
	default:
	}
}

func (l *reloadLoop) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.requests:
		}
		if !l.settle(ctx) {
			return
		}
		l.reloadUntilSuccess(ctx)
	}
}

// settle waits until requests have stopped for l.debounce, or until
// maxDebounceFactor*l.debounce has passed; it reports false when ctx is done first.
func (l *reloadLoop) settle(ctx context.Context) bool {
	if l.debounce <= 0 {
		return true
	}
	deadline := time.Now().Add(maxDebounceFactor * l.debounce)
	for {
		wait := min(l.debounce, time.Until(deadline))
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-l.requests:
			t.Stop()
		case <-t.C:
			return true
		}
	}
}

func (l *reloadLoop) reloadUntilSuccess(ctx context.Context) {
	var delay time.Duration
	for attempt := 1; ; attempt++ {
		// This attempt reads the files as they are now, which covers every request made
		// so far.
		select {
		case <-l.requests:
		default:
		}
		start := time.Now()
		err := l.strategy.Reload(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			l.metrics.reloadSucceeded(time.Now())
			l.log.Info("Reloaded", "attempt", attempt, "duration", time.Since(start).String())
			return
		}
		l.metrics.reloadFailed()
		delay = l.backoff.next(delay)
		l.log.Warn("Reload failed, retrying", "attempt", attempt, "retryIn", delay.String(), "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}
