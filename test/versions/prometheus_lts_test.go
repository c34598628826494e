// Package versions starts real servers of versions older than the ones the other tests run,
// with what Lookout generates for a workload pinned to that version.
package versions

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/render/scrape"
)

func ptr[T any](v T) *T { return &v }

// monitorsWithV3Fields is a Prometheus pinned to version and one monitor of three kinds, each
// using fields a Prometheus v2 does not know (fallback protocol, NHCB, the v3 classic-histograms
// key, the PrometheusText1.0.0 protocol, name validation).
func monitorsWithV3Fields(version string) scrape.Input {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 1, UID: types.UID("uid-" + name)}
	}
	hist := monitoringv1.NativeHistogramConfig{
		ScrapeClassicHistograms:        ptr(true),
		ConvertClassicHistogramsToNHCB: ptr(true),
		NativeHistogramBucketLimit:     ptr(int64(160)),
	}
	protocols := []monitoringv1.ScrapeProtocol{monitoringv1.PrometheusText1_0_0, monitoringv1.OpenMetricsText1_0_0}
	fallback := ptr(monitoringv1.PrometheusText0_0_4)
	sm := &monitoringv1.ServiceMonitor{ObjectMeta: meta("app"), Spec: monitoringv1.ServiceMonitorSpec{
		Selector:               metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
		Endpoints:              []monitoringv1.Endpoint{{Port: "web|metrics", TrackTimestampsStaleness: ptr(true)}},
		NativeHistogramConfig:  hist,
		ScrapeProtocols:        protocols,
		FallbackScrapeProtocol: fallback,
	}}
	pm := &monitoringv1.PodMonitor{ObjectMeta: meta("pods"), Spec: monitoringv1.PodMonitorSpec{
		Selector:               metav1.LabelSelector{MatchLabels: map[string]string{"app": "pods"}},
		PodMetricsEndpoints:    []monitoringv1.PodMetricsEndpoint{{Port: ptr("metrics")}},
		NativeHistogramConfig:  hist,
		FallbackScrapeProtocol: fallback,
	}}
	sc := &monitoringv1alpha1.ScrapeConfig{ObjectMeta: meta("static"), Spec: monitoringv1alpha1.ScrapeConfigSpec{
		StaticConfigs:          []monitoringv1alpha1.StaticConfig{{Targets: []monitoringv1alpha1.Target{"node-1:9100"}}},
		NativeHistogramConfig:  hist,
		NameValidationScheme:   ptr(monitoringv1.LegacyNameValidationScheme),
		NameEscapingScheme:     ptr(monitoringv1.UnderscoresNameEscapingScheme),
		FallbackScrapeProtocol: fallback,
	}}
	prom := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main"}, Spec: monitoringv1.PrometheusSpec{
		CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			Version:                        version,
			ScrapeClassicHistograms:        ptr(true),
			ConvertClassicHistogramsToNHCB: ptr(true),
			NameValidationScheme:           ptr(monitoringv1.LegacyNameValidationScheme),
			ScrapeProtocols:                protocols,
			EnforcedSampleLimit:            ptr(int64(5000)),
			EnforcedKeepDroppedTargets:     ptr(int64(10)),
		},
	}}
	return scrape.Input{
		Prometheus:      prom,
		ServiceMonitors: []*monitoringv1.ServiceMonitor{sm},
		PodMonitors:     []*monitoringv1.PodMonitor{pm},
		ScrapeConfigs:   []*monitoringv1alpha1.ScrapeConfig{sc},
	}
}

// A Prometheus v2.53 LTS server loads the config Lookout generates for a `version: v2.53.x`
// Prometheus whose monitors use v3-only fields; the same monitors rendered for v3 are what it
// would refuse, so the gate is what makes it load.
func TestPrometheusV253LoadsTheConfigGeneratedForIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin, err := controlplane.PrometheusLTS.Ensure(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}

	res, err := scrape.Generate(monitorsWithV3Fields("v2.53.3"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	for _, v := range res.Verdicts {
		if !v.Accepted {
			t.Fatalf("%s %s/%s rejected: %s: %s", v.Kind, v.Namespace, v.Name, v.Reason, v.Message)
		}
		if v.Message == "" {
			t.Errorf("%s %s/%s: accepted without naming the keys left out", v.Kind, v.Namespace, v.Name)
		}
	}
	loaded := runUntilReady(ctx, t, bin, res.Config())
	for _, want := range []string{"job_name: serviceMonitor/default/app/0", "job_name: podMonitor/default/pods/0", "job_name: scrapeConfig/default/static", "scrape_classic_histograms: true", "sample_limit: 5000"} {
		if !strings.Contains(loaded, want) {
			t.Errorf("the running v2.53 Prometheus's config lacks %q:\n%s", want, loaded)
		}
	}

	// The control: what Lookout writes for v3 is refused by the v2.53 server.
	v3, err := scrape.Generate(monitorsWithV3Fields("v3.15.0"))
	if err != nil {
		t.Fatalf("Generate for v3: %v", err)
	}
	if out := runUntilExit(ctx, t, bin, v3.Config()); !strings.Contains(out, "not found in type config") {
		t.Errorf("the v3 config did not fail to load on v2.53 as expected:\n%s", out)
	}
}

// start runs Prometheus on cfg with its own data directory and a free loopback port.
func start(ctx context.Context, t *testing.T, bin string, cfg []byte) (*exec.Cmd, *bytes.Buffer, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "prometheus.yaml")
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--config.file="+file, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, addr
}

// runUntilReady starts Prometheus on cfg, waits until it is ready (or exits: a refused config)
// and returns the config it reports as loaded.
func runUntilReady(ctx context.Context, t *testing.T, bin string, cfg []byte) string {
	cmd, out, addr := start(ctx, t, bin, cfg)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("Prometheus exited (%v) instead of loading the config:\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("Prometheus not ready: %v\n%s", ctx.Err(), out.String())
		case <-tick.C:
		}
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			continue
		}
		resp, err = http.Get("http://" + addr + "/api/v1/status/config")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.ReplaceAll(string(body), `\n`, "\n")
	}
}

// runUntilExit starts Prometheus on cfg and waits for it to exit, as it does on a config it
// refuses; it returns what it logged.
func runUntilExit(ctx context.Context, t *testing.T, bin string, cfg []byte) string {
	cmd, out, _ := start(ctx, t, bin, cfg)
	if err := cmd.Wait(); err == nil {
		t.Errorf("Prometheus exited cleanly")
	}
	return out.String()
}
