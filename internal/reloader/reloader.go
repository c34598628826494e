// Package reloader keeps Prometheus's configuration file in step with the Secret it is
// generated into, and tells Prometheus to reload when it or a rule directory changes.
//
// It runs as an init container (write the configuration once, exit) and as a sidecar
// (poll the mounted file and rule directories, optionally watch the Secret through the
// API, write the output atomically when it changes, and reload Prometheus with retries).
package reloader

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type eventKind int

const (
	evFile        eventKind = iota // in holds the file's new configuration
	evAPIValue                     // in holds the Secret's current configuration
	evAPIEmpty                     // the API is in sync but has no configuration
	evAPILost                      // the Secret watch failed
	evDirsChanged                  // a watched directory changed
)

type event struct {
	kind            eventKind
	in              input
	resourceVersion string
	dir             string
}

// Sidecar is the long-running reloader.
type Sidecar struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	reloads *reloadLoop
	arb     arbiter
	ready   atomic.Bool

	// retry is a chosen configuration whose write failed; it is tried again after
	// WatchInterval.
	retry *input
}

// NewSidecar validates o and prepares a Sidecar; Run starts it.
func NewSidecar(o Options) (*Sidecar, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	s := &Sidecar{opts: o, log: o.logger(), metrics: newMetrics()}
	s.arb.trustDelay = o.FileTrustDelay
	strategy := o.Strategy
	if strategy == nil {
		switch o.ReloadStrategy {
		case StrategySignal:
			strategy = &SignalStrategy{PIDFile: o.PIDFile}
		default:
			strategy = &HTTPStrategy{URL: o.ReloadURL, Client: o.HTTPClient, Timeout: o.ReloadTimeout}
		}
	}
	s.reloads = newReloadLoop(strategy, o.ReloadBackoff, s.metrics, s.log)
	if o.ConfigFile == "" {
		// Only directories to watch: there is nothing to write before being useful.
		s.ready.Store(true)
	}
	return s, nil
}

// Handler serves /healthz, /readyz and /metrics.
func (s *Sidecar) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "configuration not written yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}))
	return mux
}

// Ready reports whether the output has been written (or found up to date) at least once.
func (s *Sidecar) Ready() bool { return s.ready.Load() }

// Run watches and reloads until ctx is done; it returns nil then, or an error when it
// cannot start.
func (s *Sidecar) Run(ctx context.Context) error {
	var srv *http.Server
	if s.opts.ListenAddress != "" {
		ln, err := net.Listen("tcp", s.opts.ListenAddress)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", s.opts.ListenAddress, err)
		}
		srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("HTTP server stopped", "err", err)
			}
		}()
		s.log.Info("Serving health and metrics", "address", ln.Addr().String())
	}

	if s.opts.OutputFile != "" {
		// The output is normally an emptyDir that exists; a failure shows up on write.
		_ = os.MkdirAll(filepath.Dir(s.opts.OutputFile), 0o755)
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	events := make(chan event)
	start := func(f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
		}()
	}
	start(s.reloads.run)
	if s.opts.ConfigFile != "" {
		start(func(ctx context.Context) { s.pollConfig(ctx, events) })
	}
	if len(s.opts.WatchedDirs) > 0 {
		start(func(ctx context.Context) { s.pollDirs(ctx, events) })
	}
	if w := s.secretWatch(events); w != nil {
		start(w.run)
	}

	s.loop(ctx, events)

	cancel()
	wg.Wait()
	if srv != nil {
		shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = srv.Shutdown(shutdownCtx)
	}
	s.log.Info("Stopped")
	return nil
}

// secretWatch returns the API source, or nil when it is not configured or there are no
// credentials to use it with.
func (s *Sidecar) secretWatch(events chan<- event) *secretWatch {
	if s.opts.ConfigSecret == "" {
		return nil
	}
	api := s.opts.API
	if api == nil {
		var err error
		if api, err = InClusterAPIClient(); err != nil {
			s.log.Info("Not watching the configuration Secret through the API, relying on the mounted file", "secret", s.opts.ConfigSecret, "reason", err.Error())
			return nil
		}
	}
	namespace, name, _ := splitSecretRef(s.opts.ConfigSecret)
	return &secretWatch{
		api:             api,
		namespace:       namespace,
		name:            name,
		key:             s.opts.secretKey(),
		backoff:         s.opts.APIBackoff,
		log:             s.log,
		events:          events,
		minWatchTimeout: 5 * time.Minute,
	}
}

// loop owns the arbiter and the output file; every source reports to it.
func (s *Sidecar) loop(ctx context.Context, events <-chan event) {
	for {
		var wake <-chan time.Time
		if d, ok := s.nextWake(time.Now()); ok {
			wake = time.After(d)
		}
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			s.handle(ev, time.Now())
		case <-wake:
			if s.retry != nil {
				s.apply(*s.retry)
			} else if in, ok := s.arb.pendingFile(time.Now()); ok {
				s.log.Info("Secret watch out of sync for too long, trusting the mounted file again")
				s.apply(in)
			}
		}
	}
}

func (s *Sidecar) nextWake(now time.Time) (time.Duration, bool) {
	if s.retry != nil {
		return s.opts.WatchInterval, true
	}
	return s.arb.waitForFile(now)
}

func (s *Sidecar) handle(ev event, now time.Time) {
	switch ev.kind {
	case evFile:
		if s.arb.fromFile(ev.in, now) {
			s.apply(ev.in)
		} else if s.arb.differs(ev.in.hash) {
			s.log.Info("Holding back the mounted file: the Secret watch is authoritative", "hash", ev.in.hash.String(), "applied", s.arb.applied.String())
		}
	case evAPIValue:
		s.log.Debug("Configuration Secret delivered", "resourceVersion", ev.resourceVersion, "hash", ev.in.hash.String())
		if s.arb.fromAPI(ev.in) {
			s.apply(ev.in)
		}
	case evAPIEmpty:
		s.arb.apiEmpty()
		if in, ok := s.arb.pendingFile(now); ok {
			s.apply(in)
		}
	case evAPILost:
		s.arb.apiLost(now)
	case evDirsChanged:
		s.log.Info("Watched directory changed", "dir", ev.dir)
		s.reloads.request()
	}
}

// apply substitutes and writes in, and asks for a reload when the output changed.
func (s *Sidecar) apply(in input) {
	out := expandEnv(in.config, s.opts.LookupEnv)
	written, err := writeIfChanged(s.opts.OutputFile, out)
	if err != nil {
		s.log.Error("Cannot write the configuration, retrying", "path", s.opts.OutputFile, "source", string(in.source), "err", err)
		s.retry = &in
		return
	}
	s.retry = nil
	s.arb.markApplied(in.hash)
	s.ready.Store(true)
	if !written {
		s.log.Info("Configuration already up to date", "source", string(in.source), "hash", in.hash.String())
		return
	}
	s.metrics.applied(in.source)
	s.log.Info("Wrote the configuration", "path", s.opts.OutputFile, "source", string(in.source), "hash", in.hash.String(), "bytes", len(out))
	s.reloads.request()
}

func (s *Sidecar) pollConfig(ctx context.Context, events chan<- event) {
	p := &configPoller{path: s.opts.ConfigFile, log: s.log}
	t := time.NewTicker(s.opts.WatchInterval)
	defer t.Stop()
	for {
		if in, ok := p.poll(); ok {
			select {
			case events <- event{kind: evFile, in: in}:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Sidecar) pollDirs(ctx context.Context, events chan<- event) {
	// One poller per directory, so the event can say which one changed.
	pollers := make([]*dirPoller, len(s.opts.WatchedDirs))
	sums := make([]digest, len(pollers))
	for i, dir := range s.opts.WatchedDirs {
		pollers[i] = &dirPoller{dirs: []string{dir}, log: s.log}
		// The first scan is the baseline: Prometheus loaded these files when it started.
		sums[i] = pollers[i].scan()
	}
	t := time.NewTicker(s.opts.WatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i, p := range pollers {
			sum := p.scan()
			if sum == sums[i] {
				continue
			}
			sums[i] = sum
			select {
			case events <- event{kind: evDirsChanged, dir: p.dirs[0]}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// RunInit writes the configuration once, waiting up to o.InitTimeout for the input file,
// and returns. It never reloads: Prometheus has not started yet.
func RunInit(ctx context.Context, o Options) error {
	o.InitMode = true
	if err := o.Validate(); err != nil {
		return err
	}
	log := o.logger()
	if o.ConfigFile == "" {
		log.Info("No configuration file to write")
		return nil
	}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	ctx, cancel := context.WithTimeout(ctx, o.InitTimeout)
	defer cancel()
	raw, err := waitForFile(ctx, o.ConfigFile, o.WatchInterval, log)
	if err != nil {
		return err
	}
	config, err := decodeConfig(o.ConfigFile, raw)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.OutputFile), 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	out := expandEnv(config, lookup)
	written, err := writeIfChanged(o.OutputFile, out)
	if err != nil {
		return err
	}
	log.Info("Wrote the configuration", "path", o.OutputFile, "hash", digestOf(config).String(), "bytes", len(out), "changed", written)
	return nil
}

func waitForFile(ctx context.Context, path string, interval time.Duration, log *slog.Logger) ([]byte, error) {
	logged := false
	for {
		raw, err := os.ReadFile(path)
		if err == nil {
			return raw, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if !logged {
			log.Info("Waiting for the configuration file", "path", path)
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %s: %w", path, ctx.Err())
		case <-time.After(interval):
		}
	}
}
