package reloader

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestFlagsAsTheGeneratedPodSpecPassesThem(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--listen-address=:8080",
		"--reload-url=http://127.0.0.1:9090/-/reload",
		"--config-file=/etc/prometheus/config/prometheus.yaml.gz",
		"--config-envsubst-file=/etc/prometheus/config_out/prometheus.env.yaml",
		"--watched-dir=/etc/prometheus/rules/prometheus-k8s-rulefiles-0",
		"--watched-dir=/etc/prometheus/rules/prometheus-k8s-rulefiles-1,with-comma",
		"--config-secret=monitoring/prometheus-k8s",
		"--watch-interval=2s",
	})
	must(t, err)
	must(t, o.Validate())
	if want := []string{"/etc/prometheus/rules/prometheus-k8s-rulefiles-0", "/etc/prometheus/rules/prometheus-k8s-rulefiles-1,with-comma"}; !reflect.DeepEqual(o.WatchedDirs, want) {
		t.Errorf("WatchedDirs = %q, want %q", o.WatchedDirs, want)
	}
	if o.secretKey() != "prometheus.yaml.gz" {
		t.Errorf("secret key = %q, want the config file's base name", o.secretKey())
	}
	if o.WatchInterval != 2*time.Second || o.InitMode || o.ReloadStrategy != StrategyHTTP {
		t.Errorf("unexpected options %+v", o)
	}

	o = DefaultOptions()
	fs = pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	must(t, fs.Parse([]string{"--init-mode", "--init-timeout=1m", "--config-file=in.gz", "--config-envsubst-file=out"}))
	must(t, o.Validate())
	if !o.InitMode || o.InitTimeout != time.Minute {
		t.Errorf("init flags not parsed: %+v", o)
	}
}

func TestConfigPieceFlagTakesInputOutputAndOptionalSecret(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	must(t, fs.Parse([]string{
		"--config-file=/etc/prometheus/config/prometheus.yaml.gz",
		"--config-envsubst-file=/etc/prometheus/config_out/prometheus.env.yaml",
		"--config-piece=/etc/prometheus/scrape/0/scrape.yaml.gz=/etc/prometheus/config_out/scrape-0.yaml=monitoring/prometheus-k8s-scrape-0",
		"--config-piece=/etc/prometheus/scrape/1/scrape.yaml.gz=/etc/prometheus/config_out/scrape-1.yaml",
	}))
	must(t, o.Validate())
	want := []Piece{
		{Input: "/etc/prometheus/scrape/0/scrape.yaml.gz", Output: "/etc/prometheus/config_out/scrape-0.yaml", Secret: "monitoring/prometheus-k8s-scrape-0"},
		{Input: "/etc/prometheus/scrape/1/scrape.yaml.gz", Output: "/etc/prometheus/config_out/scrape-1.yaml"},
	}
	if !reflect.DeepEqual(o.Pieces, want) {
		t.Fatalf("Pieces = %+v, want %+v", o.Pieces, want)
	}
	docs := o.documents()
	if len(docs) != 3 {
		t.Fatalf("documents = %+v, want the main configuration and two pieces", docs)
	}
	for i, want := range []struct{ name, key string }{
		{"prometheus.env.yaml", "prometheus.yaml.gz"},
		{"scrape-0.yaml", "scrape.yaml.gz"},
		{"scrape-1.yaml", "scrape.yaml.gz"},
	} {
		if docs[i].name != want.name || docs[i].key != want.key || docs[i].removeIfAbsent != (i > 0) {
			t.Errorf("document %d = %+v, want name %s, key %s", i, docs[i], want.name, want.key)
		}
	}
	if got := fs.Lookup("config-piece").Value.String(); !strings.Contains(got, "scrape-1.yaml") {
		t.Errorf("flag value = %q", got)
	}

	for _, bad := range []string{
		"/in/scrape.yaml.gz",                       // no output
		"/in/scrape.yaml.gz=",                      // empty output
		"=/out/scrape-0.yaml",                      // empty input
		"/in/scrape.yaml.gz=/out/a=b.yaml=ns/name", // '=' in a file name
		"/in/scrape.yaml.gz=/out/scrape-0.yaml=prometheus-k8s-scrape-0", // no namespace
		"/in/scrape.yaml.gz=/in/scrape.yaml.gz",                         // writes over its input
	} {
		if _, err := ParsePiece(bad); err == nil {
			t.Errorf("ParsePiece(%q): want an error", bad)
		}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o := DefaultOptions()
		o.AddFlags(fs)
		if err := fs.Parse([]string{"--config-piece=" + bad}); err == nil {
			t.Errorf("--config-piece=%s: want a parse error", bad)
		}
	}
}

func TestDocumentNamesFallBackToThePathWhenBaseNamesCollide(t *testing.T) {
	o := DefaultOptions()
	o.ConfigFile, o.OutputFile = "/in/prometheus.yaml.gz", "/out/a/scrape.yaml"
	o.Pieces = []Piece{{Input: "/in/0/scrape.yaml.gz", Output: "/out/b/scrape.yaml"}, {Input: "/in/1/scrape.yaml.gz", Output: "/out/scrape-1.yaml"}}
	var names []string
	for _, d := range o.documents() {
		names = append(names, d.name)
	}
	if want := []string{"/out/a/scrape.yaml", "/out/b/scrape.yaml", "scrape-1.yaml"}; !reflect.DeepEqual(names, want) {
		t.Errorf("names = %q, want %q", names, want)
	}
}

func TestValidate(t *testing.T) {
	base := func() Options {
		o := DefaultOptions()
		o.ConfigFile, o.OutputFile = "/in/prometheus.yaml.gz", "/out/prometheus.env.yaml"
		return o
	}
	cases := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{"accepts the defaults with input and output", func(*Options) {}, ""},
		{"accepts rule directories alone", func(o *Options) { o.ConfigFile, o.OutputFile, o.WatchedDirs = "", "", []string{"/rules"} }, ""},
		{"rejects an input without an output", func(o *Options) { o.OutputFile = "" }, "--config-envsubst-file is required"},
		{"rejects writing over the input", func(o *Options) { o.OutputFile = o.ConfigFile }, "must differ"},
		{"rejects nothing to watch", func(o *Options) { o.ConfigFile, o.OutputFile = "", "" }, "nothing to watch"},
		{"rejects a Secret reference without a namespace", func(o *Options) { o.ConfigSecret = "prometheus-k8s" }, "want <namespace>/<name>"},
		{"rejects an unknown reload strategy", func(o *Options) { o.ReloadStrategy = "exec" }, "--reload-strategy"},
		{"rejects the signal strategy without a PID file", func(o *Options) { o.ReloadStrategy = StrategySignal }, "--process-pid-file"},
		{"accepts the signal strategy with a process name and a metrics URL", func(o *Options) {
			o.ReloadStrategy, o.SignalProcess, o.ReloadMetricsURL = StrategySignal, "prometheus", "http://127.0.0.1:9090/metrics"
		}, ""},
		{"rejects the signal strategy with both a PID file and a process name", func(o *Options) {
			o.ReloadStrategy, o.SignalProcess, o.PIDFile = StrategySignal, "prometheus", "/run/prometheus.pid"
		}, "exactly one of"},
		{"rejects a metrics URL for a PID file", func(o *Options) {
			o.ReloadStrategy, o.PIDFile, o.ReloadMetricsURL = StrategySignal, "/run/prometheus.pid", "http://127.0.0.1:9090/metrics"
		}, "--reload-metrics-url needs --reload-signal-process"},
		{"rejects a metrics URL that is not http", func(o *Options) {
			o.ReloadStrategy, o.SignalProcess, o.ReloadMetricsURL = StrategySignal, "prometheus", "127.0.0.1:9090/metrics"
		}, "--reload-metrics-url"},
		{"rejects a reload URL that is not http", func(o *Options) { o.ReloadURL = "localhost:9090/-/reload" }, "--reload-url"},
		{"rejects a zero watch interval", func(o *Options) { o.WatchInterval = 0 }, "--watch-interval"},
		{"rejects a negative reload debounce", func(o *Options) { o.ReloadDebounce = -time.Second }, "--reload-debounce"},
		{"accepts pieces alone", func(o *Options) {
			o.ConfigFile, o.OutputFile = "", ""
			o.Pieces = []Piece{{Input: "/in/0/scrape.yaml.gz", Output: "/out/scrape-0.yaml"}}
		}, ""},
		{"rejects two documents writing one output", func(o *Options) {
			o.Pieces = []Piece{{Input: "/in/0/scrape.yaml.gz", Output: "/out/prometheus.env.yaml"}}
		}, "written by both"},
		{"rejects a piece reading another document's output", func(o *Options) {
			o.Pieces = []Piece{{Input: "/out/prometheus.env.yaml", Output: "/out/scrape-0.yaml"}}
		}, "is the output of --config-file"},
		{"rejects a piece without an output", func(o *Options) {
			o.Pieces = []Piece{{Input: "/in/0/scrape.yaml.gz"}}
		}, "--config-piece"},
		{"rejects a piece Secret without a namespace", func(o *Options) {
			o.Pieces = []Piece{{Input: "/in/0/scrape.yaml.gz", Output: "/out/scrape-0.yaml", Secret: "prometheus-k8s-scrape-0"}}
		}, "want <namespace>/<name>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base()
			c.mutate(&o)
			err := o.Validate()
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("Validate = %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
}

func TestInClusterAPIClient(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
	getenv := func(k string) string { return env[k] }

	if _, err := inClusterAPIClient(func(string) string { return "" }, dir); err != ErrNotInCluster {
		t.Errorf("without the environment: %v, want ErrNotInCluster", err)
	}
	if _, err := inClusterAPIClient(getenv, dir); err == nil {
		t.Error("without a token: want an error")
	}
	must(t, os.WriteFile(filepath.Join(dir, "token"), []byte("tok-1\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "ca.crt"), selfSignedPEM(t), 0o644))
	c, err := inClusterAPIClient(getenv, dir)
	must(t, err)
	if c.BaseURL != "https://10.96.0.1:443" {
		t.Errorf("BaseURL = %q", c.BaseURL)
	}
	// A rotated token is picked up by the next request.
	must(t, os.WriteFile(filepath.Join(dir, "token"), []byte("tok-2"), 0o600))
	if tok, err := c.Token(); err != nil || tok != "tok-2" {
		t.Errorf("Token() = %q, %v, want the rotated token", tok, err)
	}
}

// selfSignedPEM returns a throwaway CA certificate; only its parseability matters.
func selfSignedPEM(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubernetes"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// parseFlags is DefaultOptions with args parsed as the reloader's command line.
func parseFlags(t *testing.T, args ...string) Options {
	t.Helper()
	o := DefaultOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	must(t, fs.Parse(args))
	return o
}
