package pgbouncer

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

func signalNotify(c chan<- os.Signal) { signal.Notify(c, syscall.SIGTERM, syscall.SIGINT) }

// serve starts the pooler's HTTP server: probes, and pause and resume for
// the instance managers.
func (p *Pooler) serve() (*http.Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc(pgcontract.PathLive, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc(pgcontract.PathReady, func(w http.ResponseWriter, _ *http.Request) {
		if !p.ready() {
			http.Error(w, "pgbouncer is not running or has no primary yet", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("POST "+pgcontract.PathPause, p.authorized(p.handlePause))
	mux.HandleFunc("POST "+pgcontract.PathResume, p.authorized(p.handleResume))
	l, err := net.Listen("tcp", p.o.Listen)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}

// authorized lets a call through when it carries the token of the
// configuration (which only the controller and the instance managers read).
func (p *Pooler) authorized(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		token := p.cfg.Token
		p.mu.Unlock()
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

// handlePause runs PAUSE: it answers once every server connection is
// released (each transaction in flight has ended) and clients' new queries
// wait in the pooler. Not paused within ?timeout (default 5 s) it resumes and
// fails; paused longer than the hold limit without a resume, it resumes on
// its own.
func (p *Pooler) handlePause(w http.ResponseWriter, r *http.Request) {
	timeout := 5 * time.Second
	if t, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && t > 0 {
		timeout = t
	}
	if !p.ready() {
		http.Error(w, "pgbouncer is not running", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	started := time.Now()
	err := p.adminCommand(ctx, "PAUSE")
	if err != nil && strings.Contains(err.Error(), "already") {
		err = nil // paused (or pausing) before: a retried call
	}
	if err != nil {
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		rerr := p.adminCommand(rctx, "RESUME")
		rcancel()
		p.log.Warn("Did not pause: resumed", "after", time.Since(started).Round(time.Millisecond), "err", err, "resume", rerr)
		http.Error(w, fmt.Sprintf("pause: %v", err), http.StatusGatewayTimeout)
		return
	}
	p.mu.Lock()
	p.paused, p.pausedAt = true, time.Now()
	at := p.pausedAt
	p.mu.Unlock()
	p.log.Info("Paused", "took", time.Since(started).Round(time.Millisecond))
	time.AfterFunc(p.o.HoldLimit, func() {
		p.mu.Lock()
		still := p.paused && p.pausedAt.Equal(at)
		p.mu.Unlock()
		if still {
			p.log.Warn("No resume came: resuming", "paused for", p.o.HoldLimit)
			p.resume(context.Background(), "")
		}
	})
	w.WriteHeader(http.StatusOK)
}

// handleResume points pgbouncer at ?primary (an instance) once the Lease
// names it, then runs RESUME.
func (p *Pooler) handleResume(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := p.resume(ctx, r.URL.Query().Get("primary")); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (p *Pooler) resume(ctx context.Context, primary string) error {
	for primary != "" {
		p.mu.Lock()
		at := p.primary
		p.mu.Unlock()
		if at == primary {
			break
		}
		if err := p.step(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			p.log.Warn("Resuming before pointing at the new primary", "primary", primary)
			primary = ""
		case <-time.After(50 * time.Millisecond):
		}
	}
	rctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := p.adminCommand(rctx, "RESUME")
	if err != nil && strings.Contains(err.Error(), "not paused") {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	p.mu.Lock()
	was := p.paused
	took := time.Since(p.pausedAt)
	p.paused = false
	p.mu.Unlock()
	if was {
		p.log.Info("Resumed", "paused for", took.Round(time.Millisecond))
	}
	return nil
}
