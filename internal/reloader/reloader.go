// Package reloader keeps Prometheus's configuration files in step with the Secrets they
// are generated into, and tells Prometheus to reload when they or a rule directory
// change.
//
// The configuration is one or more documents: the main prometheus.yaml and, when it does
// not fit into one Secret, pieces that it loads through scrape_config_files. Each
// document is followed on its own (mounted file, optionally its Secret through the API,
// the precedence between the two, an atomic write of the output when it changes); a
// change in any document or rule directory leads to one reload after a short debounce.
//
// It runs as an init container (write the configuration once, exit) and as a sidecar
// (poll the mounted files and rule directories, optionally watch the Secrets through the
// API, write the outputs atomically when they change, and reload Prometheus with
// retries).
package reloader

import (
	"context"
	"crypto/tls"
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
	evFile        eventKind = iota // in holds the file's new state
	evAPIValue                     // in holds the Secret's current configuration
	evAPIEmpty                     // the API is in sync but the Secret or its key is missing
	evAPILost                      // the Secret watch failed
	evDirsChanged                  // a watched directory changed
)

type event struct {
	kind eventKind
	// doc is the index of the document a file or API event is about.
	doc             int
	in              input
	resourceVersion string
	dir             string
	// more holds the other files that changed in the same poll round as this
	// one (evFile): they are applied together and reloaded once.
	more []event
}

// document is one configuration document at run time: the main configuration or a
// piece, with its own precedence state. Only the main loop touches it.
type document struct {
	docSpec
	log *slog.Logger
	arb arbiter

	// retry is a chosen state whose write (or removal) failed; it is tried again at
	// retryAt.
	retry   *input
	retryAt time.Time
	// settled is set once the output has been brought to a state (written, found up to
	// date, or removed as absent).
	settled bool
}

// Sidecar is the long-running reloader.
type Sidecar struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	reloads *reloadLoop
	docs    []*document
	ready   atomic.Bool
	// holdReload, while a poll round's files are applied, turns reload
	// requests into reloadHeld: the round ends in one reload.
	holdReload, reloadHeld bool
}

// NewSidecar validates o and prepares a Sidecar; Run starts it.
func NewSidecar(o Options) (*Sidecar, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	s := &Sidecar{opts: o, log: o.logger()}
	var names []string
	for _, spec := range o.documents() {
		s.docs = append(s.docs, &document{
			docSpec: spec,
			log:     s.log.With("document", spec.name),
			arb:     arbiter{trustDelay: o.FileTrustDelay},
		})
		names = append(names, spec.name)
	}
	s.metrics = newMetrics(names)
	strategy := o.Strategy
	if strategy == nil {
		switch o.ReloadStrategy {
		case StrategySignal:
			if o.SignalProcess != "" {
				strategy = &ProcessSignalStrategy{Process: o.SignalProcess, MetricsURL: o.ReloadMetricsURL, Client: reloadClient(o), Timeout: o.ReloadTimeout}
			} else {
				strategy = &SignalStrategy{PIDFile: o.PIDFile}
			}
		default:
			strategy = &HTTPStrategy{URL: o.ReloadURL, Client: reloadClient(o), Timeout: o.ReloadTimeout}
		}
	}
	s.reloads = newReloadLoop(strategy, o.ReloadBackoff, o.ReloadDebounce, s.metrics, s.log)
	// With only directories to watch there is nothing to write before being useful.
	s.updateReady()
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

// Ready reports whether every document's output has been brought to a state at least
// once: the main configuration written (or found up to date), each piece written or,
// when absent, removed.
func (s *Sidecar) Ready() bool { return s.ready.Load() }

func (s *Sidecar) updateReady() {
	for _, d := range s.docs {
		if !d.settled {
			return
		}
	}
	s.ready.Store(true)
}

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

	for _, d := range s.docs {
		// The output is normally an emptyDir that exists; a failure shows up on write.
		_ = os.MkdirAll(filepath.Dir(d.output), 0o755)
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
	if len(s.docs) > 0 {
		start(func(ctx context.Context) { s.pollFiles(ctx, events) })
	}
	if len(s.opts.WatchedDirs) > 0 {
		start(func(ctx context.Context) { s.pollDirs(ctx, events) })
	}
	for _, w := range s.secretWatches(events) {
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

// secretWatches returns the API sources of the documents that name a Secret, or none
// when there are no credentials to use them with.
func (s *Sidecar) secretWatches(events chan<- event) []*secretWatch {
	var watches []*secretWatch
	api := s.opts.API
	for i, d := range s.docs {
		if d.secret == "" {
			continue
		}
		if api == nil {
			var err error
			if api, err = InClusterAPIClient(); err != nil {
				s.log.Info("Not watching the configuration Secrets through the API, relying on the mounted files", "reason", err.Error())
				return nil
			}
		}
		namespace, name, _ := splitSecretRef(d.flag, d.secret)
		watches = append(watches, &secretWatch{
			api:             api,
			namespace:       namespace,
			name:            name,
			key:             d.key,
			doc:             i,
			optional:        d.removeIfAbsent,
			backoff:         s.opts.APIBackoff,
			log:             d.log,
			events:          events,
			minWatchTimeout: 5 * time.Minute,
		})
	}
	return watches
}

// loop owns the documents' arbiters and output files; every source reports to it.
func (s *Sidecar) loop(ctx context.Context, events <-chan event) {
	for {
		var wake <-chan time.Time
		var timer *time.Timer
		if d, ok := s.nextWake(time.Now()); ok {
			timer = time.NewTimer(d)
			wake = timer.C
		}
		select {
		case <-ctx.Done():
		case ev := <-events:
			s.handle(ev, time.Now())
		case <-wake:
			s.wake(time.Now())
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// nextWake reports how long until the earliest retry or held-back file is due.
func (s *Sidecar) nextWake(now time.Time) (time.Duration, bool) {
	var next time.Duration
	found := false
	for _, d := range s.docs {
		var wait time.Duration
		if d.retry != nil {
			wait = max(d.retryAt.Sub(now), 0)
		} else if w, ok := d.arb.waitForFile(now); ok {
			wait = w
		} else {
			continue
		}
		if !found || wait < next {
			next, found = wait, true
		}
	}
	return next, found
}

// wake applies what has become due.
func (s *Sidecar) wake(now time.Time) {
	for _, d := range s.docs {
		if d.retry != nil {
			if !now.Before(d.retryAt) {
				s.apply(d, *d.retry)
			}
		} else if in, ok := d.arb.pendingFile(now); ok {
			d.log.Info("Secret watch out of sync for too long, trusting the mounted file again")
			s.apply(d, in)
		}
	}
}

func (s *Sidecar) handle(ev event, now time.Time) {
	if ev.kind == evFile && len(ev.more) > 0 {
		s.holdReload = true
		for _, e := range append([]event{ev}, ev.more...) {
			e.more = nil
			s.handle(e, now)
		}
		s.holdReload = false
		if s.reloadHeld {
			s.reloadHeld = false
			s.reloads.request()
		}
		return
	}
	if ev.kind == evDirsChanged {
		s.log.Info("Watched directory changed", "dir", ev.dir)
		s.reloads.request()
		return
	}
	d := s.docs[ev.doc]
	switch ev.kind {
	case evFile:
		if d.arb.fromFile(ev.in, now) {
			s.apply(d, ev.in)
		} else if d.arb.differs(ev.in.state()) {
			d.log.Info("Holding back the mounted file: the Secret watch is authoritative", "hash", ev.in.state().String(), "applied", d.arb.applied.String())
		}
	case evAPIValue:
		d.log.Debug("Configuration Secret delivered", "resourceVersion", ev.resourceVersion, "hash", ev.in.hash.String())
		if d.arb.fromAPI(ev.in) {
			s.apply(d, ev.in)
		}
	case evAPIEmpty:
		if d.removeIfAbsent {
			// A piece without a Secret is absent, and the API says so first.
			if in := absentInput(SourceAPI); d.arb.fromAPI(in) {
				if f := d.arb.file; f != nil && !f.absent {
					d.log.Info("Piece Secret not found although the mounted file holds the piece: removing it (the kubelet has not updated the volume yet, or the piece names the wrong Secret)", "secret", d.secret)
				}
				s.apply(d, in)
			}
			return
		}
		d.arb.apiEmpty()
		if in, ok := d.arb.pendingFile(now); ok {
			s.apply(d, in)
		}
	case evAPILost:
		d.arb.apiLost(now)
	}
}

// apply brings d's output to in: substituted and written when it holds a configuration,
// removed when the piece is absent. It asks for a reload when the output changed.
func (s *Sidecar) apply(d *document, in input) {
	if in.absent {
		s.remove(d, in)
		return
	}
	out := expandEnv(in.config, s.opts.LookupEnv)
	written, err := writeIfChanged(d.output, out)
	if err != nil {
		d.log.Error("Cannot write the configuration, retrying", "path", d.output, "source", string(in.source), "err", err)
		s.retryLater(d, in)
		return
	}
	s.recordApplied(d, in, true)
	if !written {
		d.log.Info("Configuration already up to date", "source", string(in.source), "hash", in.hash.String())
		return
	}
	s.metrics.applied(d.name, in.source)
	d.log.Info("Wrote the configuration", "path", d.output, "source", string(in.source), "hash", in.hash.String(), "bytes", len(out))
	s.requestReload()
}

// remove deletes the output of an absent piece, so that Prometheus stops loading it.
func (s *Sidecar) remove(d *document, in input) {
	removed, err := removeIfExists(d.output)
	if err != nil {
		d.log.Error("Cannot remove the output of an absent piece, retrying", "path", d.output, "source", string(in.source), "err", err)
		s.retryLater(d, in)
		return
	}
	s.recordApplied(d, in, false)
	if !removed {
		d.log.Debug("Piece absent, no output to remove", "source", string(in.source))
		return
	}
	d.log.Info("Piece absent, removed its output", "path", d.output, "source", string(in.source))
	s.requestReload()
}

// requestReload asks for a reload, or holds the request until the poll round
// being applied is complete.
func (s *Sidecar) requestReload() {
	if s.holdReload {
		s.reloadHeld = true
		return
	}
	s.reloads.request()
}

func (s *Sidecar) retryLater(d *document, in input) {
	d.retry = &in
	d.retryAt = time.Now().Add(s.opts.WatchInterval)
}

// recordApplied notes that d's output now reflects in.
func (s *Sidecar) recordApplied(d *document, in input, present bool) {
	d.retry = nil
	d.arb.markApplied(in.state())
	s.metrics.setPresent(d.name, present)
	if !d.settled {
		d.settled = true
		s.updateReady()
	}
}

// pollFiles polls every document's input file in one goroutine: the files that
// changed in one round (the kubelet updates a pod's volumes together) go out as one
// event, applied together and reloaded once, however slowly a busy machine writes
// them.
func (s *Sidecar) pollFiles(ctx context.Context, events chan<- event) {
	pollers := make([]*configPoller, len(s.docs))
	for i, d := range s.docs {
		pollers[i] = &configPoller{path: d.input, log: d.log, optional: d.removeIfAbsent}
	}
	t := time.NewTicker(s.opts.WatchInterval)
	defer t.Stop()
	for {
		var round []event
		for i, p := range pollers {
			if in, ok := p.poll(); ok {
				round = append(round, event{kind: evFile, doc: i, in: in})
			}
		}
		if len(round) > 0 {
			ev := round[0]
			ev.more = round[1:]
			select {
			case events <- ev:
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

// RunInit writes the configuration once and returns, so that Prometheus starts with all
// of it. It waits up to o.InitTimeout for the main configuration file. Pieces are not
// waited for: their volumes are optional and were filled in before the pod's containers
// started, so a missing piece is absent; a stale output left for it (from an earlier
// start of the pod) is removed. It never reloads: Prometheus has not started yet.
func RunInit(ctx context.Context, o Options) error {
	o.InitMode = true
	if err := o.Validate(); err != nil {
		return err
	}
	log := o.logger()
	docs := o.documents()
	if len(docs) == 0 {
		log.Info("No configuration file to write")
		return nil
	}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	ctx, cancel := context.WithTimeout(ctx, o.InitTimeout)
	defer cancel()
	for _, d := range docs {
		if err := initDocument(ctx, o, d, lookup, log.With("document", d.name)); err != nil {
			return err
		}
	}
	return nil
}

func initDocument(ctx context.Context, o Options, d docSpec, lookup func(string) (string, bool), log *slog.Logger) error {
	var raw []byte
	var err error
	if d.removeIfAbsent {
		raw, err = os.ReadFile(d.input)
		if errors.Is(err, fs.ErrNotExist) {
			removed, err := removeIfExists(d.output)
			if err != nil {
				return err
			}
			log.Info("Piece absent, skipping it", "path", d.input, "removedStaleOutput", removed)
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", d.input, err)
		}
	} else if raw, err = waitForFile(ctx, d.input, o.WatchInterval, log); err != nil {
		return err
	}
	config, err := decodeConfig(d.input, raw)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(d.output), 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	out := expandEnv(config, lookup)
	written, err := writeIfChanged(d.output, out)
	if err != nil {
		return err
	}
	log.Info("Wrote the configuration", "path", d.output, "hash", digestOf(config).String(), "bytes", len(out), "changed", written)
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

// reloadClient is the client of reload requests: o.HTTPClient, or with
// ReloadInsecureSkipVerify one that accepts any server certificate; nil means the default.
func reloadClient(o Options) *http.Client {
	if o.HTTPClient != nil || !o.ReloadInsecureSkipVerify {
		return o.HTTPClient
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback to the server in the same pod
	return &http.Client{Transport: transport}
}
