package main

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	clientfeatures "k8s.io/client-go/features"
)

func parseOperatorFlags(t *testing.T, args ...string) operatorOptions {
	t.Helper()
	var o operatorOptions
	fs := pflag.NewFlagSet("operator", pflag.ContinueOnError)
	o.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return o
}

func TestOperatorClientAndProfilerFlagDefaults(t *testing.T) {
	o := parseOperatorFlags(t)
	if o.kubeAPIQPS != 500 || o.kubeAPIBurst != 1000 {
		t.Errorf("client limits: got QPS %v, burst %d; want 500, 1000", o.kubeAPIQPS, o.kubeAPIBurst)
	}
	if o.pprofAddr != "" {
		t.Errorf("pprof is served by default on %q; want it off", o.pprofAddr)
	}
	if err := o.validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

func TestOperatorFlagsAreParsed(t *testing.T) {
	o := parseOperatorFlags(t, "--kube-api-qps=42.5", "--kube-api-burst=7", "--pprof-bind-address=127.0.0.1:6060")
	if o.kubeAPIQPS != 42.5 || o.kubeAPIBurst != 7 || o.pprofAddr != "127.0.0.1:6060" {
		t.Errorf("got QPS %v, burst %d, pprof %q", o.kubeAPIQPS, o.kubeAPIBurst, o.pprofAddr)
	}
	if err := o.validate(); err != nil {
		t.Error(err)
	}
}

func TestOperatorRejectsNonPositiveClientLimits(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kube-api-qps=0"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps=-1"}, "--kube-api-qps"},
		{[]string{"--kube-api-qps=NaN"}, "--kube-api-qps"},
		{[]string{"--kube-api-burst=0"}, "--kube-api-burst"},
		{[]string{"--kube-api-burst=-5"}, "--kube-api-burst"},
		{[]string{"--workers=0"}, "--workers"},
	} {
		err := parseOperatorFlags(t, tc.args...).validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got error %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}

// The command refuses bad limits before it reads any kubeconfig or talks to
// a cluster.
func TestOperatorCommandFailsOnBadLimitsBeforeConnecting(t *testing.T) {
	cmd := newRootCommand()
	cmd.SetArgs([]string{"operator", "--kubeconfig=/nonexistent/kubeconfig", "--kube-api-burst=0"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--kube-api-burst") {
		t.Fatalf("got %v, want the --kube-api-burst error", err)
	}
}

func TestGCPercentDefaultsTo40UnlessGOGCIsSet(t *testing.T) {
	restore := debug.SetGCPercent(100)
	defer debug.SetGCPercent(restore)

	t.Setenv("GOGC", "77") // the user's choice: left alone
	setGCPercent()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, the GC percent became %d", got)
	}

	os.Unsetenv("GOGC")
	setGCPercent()
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("without GOGC, the GC percent is %d, want %d", got, defaultGCPercent)
	}
}

func TestWatchListIsOffUnlessAskedFor(t *testing.T) {
	gate := clientfeatures.WatchListClient
	enabled := func() bool { return clientfeatures.FeatureGates().Enabled(gate) }
	defer func(was bool) { _ = setWatchList(was, true) }(enabled())

	if err := setWatchList(false, false); err != nil || enabled() {
		t.Fatalf("by default: WatchListClient %v (err %v), want off", enabled(), err)
	}
	if err := setWatchList(true, true); err != nil || !enabled() {
		t.Fatalf("with --watch-list: WatchListClient %v (err %v), want on", enabled(), err)
	}
	t.Setenv("KUBE_FEATURE_WatchListClient", "true")
	if err := setWatchList(false, false); err != nil || !enabled() {
		t.Fatalf("with the environment variable and no flag: WatchListClient %v (err %v), want it left on", enabled(), err)
	}
	if err := setWatchList(false, true); err != nil || enabled() {
		t.Fatalf("with --watch-list=false over the environment variable: WatchListClient %v (err %v), want off", enabled(), err)
	}
}
