package reloader

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Reload strategies accepted by --reload-strategy.
const (
	StrategyHTTP   = "http"
	StrategySignal = "signal"
)

// Backoff is a capped exponential backoff: Initial, doubled after every failure, never above Max.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

func (b Backoff) next(d time.Duration) time.Duration {
	if d <= 0 {
		return b.Initial
	}
	return min(2*d, b.Max)
}

// Options configures the reloader. The zero value is not usable; start from DefaultOptions.
type Options struct {
	// ConfigFile is the input: gzipped when its name ends in .gz, plain text otherwise.
	ConfigFile string
	// OutputFile receives ConfigFile after environment substitution.
	OutputFile string
	// WatchedDirs are rule directories; any change in them triggers a reload.
	WatchedDirs []string
	// ConfigSecret is "<namespace>/<name>" of the Secret that ConfigFile is mounted from.
	ConfigSecret string
	// ConfigSecretKey is the key in ConfigSecret; empty means the base name of ConfigFile,
	// which is what the Secret volume names the file.
	ConfigSecretKey string
	// Pieces are further configuration documents, each handled like ConfigFile (see
	// Piece), for the files the main configuration loads through scrape_config_files.
	Pieces []Piece

	ReloadStrategy string
	ReloadURL      string
	PIDFile        string
	// SignalProcess is the executable name of the process to send SIGHUP to, found among
	// the processes this one can see (--reload-strategy=signal, instead of PIDFile).
	SignalProcess string
	// ReloadMetricsURL is the /metrics a signal reload is confirmed from; empty sends
	// the signal unconfirmed.
	ReloadMetricsURL string

	ListenAddress string
	InitMode      bool
	InitTimeout   time.Duration
	WatchInterval time.Duration

	// ReloadTimeout bounds one reload request; Prometheus answers only after it has applied
	// the configuration, which takes a while for large ones.
	ReloadTimeout time.Duration
	// ReloadDebounce is how long the documents and watched directories must have been
	// quiet before a reload: the pieces of one configuration change within milliseconds
	// of each other, and Prometheus should load them together, once. A change stream
	// that never pauses still reloads maxDebounceFactor*ReloadDebounce after its first
	// change. Zero reloads at once.
	ReloadDebounce time.Duration
	ReloadBackoff  Backoff
	APIBackoff     Backoff
	// FileTrustDelay is how long the Secret watch must have been broken before the file is
	// trusted again over the last value the API delivered. It covers the kubelet's Secret
	// volume sync period, so a file that lags behind the API cannot roll a change back.
	FileTrustDelay time.Duration

	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// LookupEnv resolves $(VAR) references; defaults to os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// API talks to the Kubernetes API for ConfigSecret; nil means in-cluster credentials.
	API *APIClient
	// Strategy overrides ReloadStrategy (tests).
	Strategy Strategy
	// HTTPClient is used for reload requests; defaults to a client without a global timeout.
	HTTPClient *http.Client
	// ReloadInsecureSkipVerify skips the verification of the server's certificate on an
	// https reload URL (the server in the same pod, reached on loopback, whose certificate
	// names its Service).
	ReloadInsecureSkipVerify bool
}

// DefaultOptions returns the defaults the flags advertise.
func DefaultOptions() Options {
	return Options{
		ReloadStrategy: StrategyHTTP,
		ReloadURL:      "http://127.0.0.1:9090/-/reload",
		ListenAddress:  ":8080",
		InitTimeout:    5 * time.Minute,
		// The poll is a stat per file; contents are read only when size, mtime or inode
		// change (and on a slow full pass), so a short interval is cheap. It is the only
		// source for rule directories, so it bounds how late a rule change lands after
		// the kubelet has updated the volume.
		WatchInterval: time.Second,
		ReloadTimeout: time.Minute,
		// Long enough to gather Secrets the operator writes back to back (a few ms apart)
		// and volumes the kubelet updates in one pod sync; short next to the kubelet's
		// own delay, and to how long Prometheus takes to apply a large configuration.
		ReloadDebounce: 100 * time.Millisecond,
		ReloadBackoff:  Backoff{Initial: 500 * time.Millisecond, Max: 15 * time.Second},
		APIBackoff:     Backoff{Initial: time.Second, Max: time.Minute},
		FileTrustDelay: 2 * time.Minute,
	}
}

// AddFlags binds the command-line flags to o; the values already in o are the defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, "config-file", o.ConfigFile, "Input configuration file, gunzipped when its name ends in .gz.")
	fs.StringVar(&o.OutputFile, "config-envsubst-file", o.OutputFile, "Where to write the configuration with $(VAR) references substituted.")
	fs.StringArrayVar(&o.WatchedDirs, "watched-dir", o.WatchedDirs, "Directory whose changes trigger a reload (repeatable).")
	fs.StringVar(&o.ConfigSecret, "config-secret", o.ConfigSecret, "<namespace>/<name> of the Secret holding the configuration; watched through the API to beat the kubelet's volume sync delay.")
	fs.StringVar(&o.ConfigSecretKey, "config-secret-key", o.ConfigSecretKey, "Key of the configuration in --config-secret (default: base name of --config-file).")
	fs.Var(&pieceFlag{&o.Pieces}, "config-piece", "Configuration piece as <input file>=<output file>[=<namespace>/<secret>] (repeatable; file names must not contain '='). "+
		"Handled like --config-file: gunzipped when the input ends in .gz, $(VAR) substituted, written atomically to the output file; "+
		"the Secret, when given, is watched through the API with the input's base name as its key. "+
		"A piece is optional: when it is absent (no input file and no Secret, or the watch reports the Secret deleted), its output file is removed so that Prometheus stops loading it.")
	fs.StringVar(&o.ReloadStrategy, "reload-strategy", o.ReloadStrategy, "How to reload: http (POST --reload-url) or signal (SIGHUP to the PID in --process-pid-file, or to the process --reload-signal-process).")
	fs.StringVar(&o.ReloadURL, "reload-url", o.ReloadURL, "URL to POST to reload the server (Prometheus or Alertmanager).")
	fs.BoolVar(&o.ReloadInsecureSkipVerify, "reload-insecure-skip-verify", o.ReloadInsecureSkipVerify, "Do not verify the server's certificate on an https --reload-url (a server in the same pod, on loopback).")
	fs.StringVar(&o.PIDFile, "process-pid-file", o.PIDFile, "File holding the PID to send SIGHUP to (--reload-strategy=signal).")
	fs.StringVar(&o.SignalProcess, "reload-signal-process", o.SignalProcess, "Executable name of the process to send SIGHUP to, found in /proc; exactly one may match (--reload-strategy=signal, instead of --process-pid-file).")
	fs.StringVar(&o.ReloadMetricsURL, "reload-metrics-url", o.ReloadMetricsURL, "Prometheus's /metrics, read before and after SIGHUP to confirm the reload from its last-reload gauges (--reload-signal-process).")
	fs.StringVar(&o.ListenAddress, "listen-address", o.ListenAddress, "Address for /healthz, /readyz and /metrics; empty disables the server.")
	fs.BoolVar(&o.InitMode, "init-mode", o.InitMode, "Write the configuration and every present piece once and exit.")
	fs.DurationVar(&o.InitTimeout, "init-timeout", o.InitTimeout, "How long --init-mode waits for the --config-file input (pieces are optional and not waited for).")
	fs.DurationVar(&o.WatchInterval, "watch-interval", o.WatchInterval, "How often the input files and watched directories are polled.")
	fs.DurationVar(&o.ReloadDebounce, "reload-debounce", o.ReloadDebounce, "Quiet time after the last change before reloading, so that changes arriving together cause one reload (never delayed by more than 10 times this); 0 reloads at once.")
}

// Validate reports the first inconsistency in o.
func (o *Options) Validate() error {
	var errs []error
	if o.ConfigFile != "" && o.OutputFile == "" {
		errs = append(errs, errors.New("--config-envsubst-file is required with --config-file"))
	}
	if o.ConfigFile == "" && o.OutputFile != "" {
		errs = append(errs, errors.New("--config-file is required with --config-envsubst-file"))
	}
	if o.ConfigFile != "" && o.OutputFile != "" && filepath.Clean(o.ConfigFile) == filepath.Clean(o.OutputFile) {
		errs = append(errs, errors.New("--config-file and --config-envsubst-file must differ"))
	}
	if o.ConfigSecret != "" {
		if _, _, err := splitSecretRef("--config-secret", o.ConfigSecret); err != nil {
			errs = append(errs, err)
		}
		if o.ConfigFile == "" {
			errs = append(errs, errors.New("--config-secret needs --config-file"))
		}
	}
	for _, p := range o.Pieces {
		if err := p.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, o.validateFileSets()...)
	if !o.InitMode && o.ConfigFile == "" && len(o.Pieces) == 0 && len(o.WatchedDirs) == 0 {
		errs = append(errs, errors.New("nothing to watch: set --config-file, --config-piece or --watched-dir"))
	}
	if o.Strategy == nil && !o.InitMode {
		switch o.ReloadStrategy {
		case StrategyHTTP:
			if !isHTTPURL(o.ReloadURL) {
				errs = append(errs, fmt.Errorf("--reload-url %q is not an http(s) URL", o.ReloadURL))
			}
		case StrategySignal:
			if (o.PIDFile == "") == (o.SignalProcess == "") {
				errs = append(errs, errors.New("--reload-strategy=signal needs exactly one of --process-pid-file and --reload-signal-process"))
			}
			if o.ReloadMetricsURL != "" {
				if o.SignalProcess == "" {
					errs = append(errs, errors.New("--reload-metrics-url needs --reload-signal-process"))
				}
				if !isHTTPURL(o.ReloadMetricsURL) {
					errs = append(errs, fmt.Errorf("--reload-metrics-url %q is not an http(s) URL", o.ReloadMetricsURL))
				}
			}
		default:
			errs = append(errs, fmt.Errorf("--reload-strategy %q: want %s or %s", o.ReloadStrategy, StrategyHTTP, StrategySignal))
		}
	}
	if o.WatchInterval <= 0 {
		errs = append(errs, errors.New("--watch-interval must be positive"))
	}
	if o.ReloadDebounce < 0 {
		errs = append(errs, errors.New("--reload-debounce must not be negative"))
	}
	if o.InitMode && o.InitTimeout <= 0 {
		errs = append(errs, errors.New("--init-timeout must be positive"))
	}
	return errors.Join(errs...)
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func (o *Options) secretKey() string {
	if o.ConfigSecretKey != "" {
		return o.ConfigSecretKey
	}
	return filepath.Base(o.ConfigFile)
}

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// validateFileSets checks the documents against each other: every output is written by
// one document only, and no document writes over another one's input.
func (o *Options) validateFileSets() []error {
	var errs []error
	writers := map[string]string{}
	for _, d := range o.documents() {
		if d.input == "" || d.output == "" {
			continue // reported on its own
		}
		out := filepath.Clean(d.output)
		if other, dup := writers[out]; dup {
			errs = append(errs, fmt.Errorf("output file %s is written by both %s and %s", d.output, other, d.flag))
		}
		writers[out] = d.flag
	}
	for _, d := range o.documents() {
		if d.input == "" {
			continue
		}
		if other, clash := writers[filepath.Clean(d.input)]; clash && filepath.Clean(d.input) != filepath.Clean(d.output) {
			errs = append(errs, fmt.Errorf("input file %s of %s is the output of %s", d.input, d.flag, other))
		}
	}
	return errs
}

func splitSecretRef(flag, ref string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(ref, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%s %q: want <namespace>/<name>", flag, ref)
	}
	return namespace, name, nil
}
