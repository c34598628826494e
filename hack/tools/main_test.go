package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-operator/lookout/internal/controlplane"
)

func TestTheColdEstimateCountsOnlyWhatIsNotCachedYet(t *testing.T) {
	t.Setenv("LOOKOUT_CACHE", t.TempDir())
	tools := []controlplane.Tool{controlplane.KubeAPIServer, controlplane.Prometheus, controlplane.ControllerGen}
	for _, tool := range tools {
		if estimate(tool) == 0 {
			t.Fatalf("%s: estimate %q does not parse", tool.Name, tool.Estimate)
		}
	}
	got := coldEstimate(tools)
	if want := "building kube-apiserver, prometheus, controller-gen from Go modules, about 15 min"; !strings.Contains(got, want) {
		t.Errorf("nothing cached:\n got %q\nwant it to contain %q", got, want)
	}
	cache(t, controlplane.Prometheus)
	got = coldEstimate(tools)
	if want := "building kube-apiserver, controller-gen from Go modules, about 6 min"; !strings.Contains(got, want) {
		t.Errorf("Prometheus cached:\n got %q\nwant it to contain %q", got, want)
	}
	cache(t, controlplane.KubeAPIServer)
	cache(t, controlplane.ControllerGen)
	if got, want := coldEstimate(tools), "all 3 binaries are cached"; !strings.Contains(got, want) {
		t.Errorf("all cached:\n got %q\nwant it to contain %q", got, want)
	}
}

// cache puts an executable where tool's cached binary goes.
func cache(t *testing.T, tool controlplane.Tool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(tool.Path()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tool.Path(), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// The demo's sets (the Makefile's DEMO_TOOLS) hold only what hack/demo runs:
// a cold `make demo` must not build what only `make test` starts.
func TestTheDemoBuildsOnlyWhatItRuns(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(mk), "\n") {
		if v, ok := strings.CutPrefix(line, "DEMO_TOOLS := "); ok {
			names = strings.Fields(v)
		}
	}
	if len(names) == 0 {
		t.Fatal("the Makefile sets no DEMO_TOOLS")
	}
	runs := map[string]bool{"etcd": true, "kube-apiserver": true, "kube-controller-manager": true, "kubectl": true, "prometheus": true, "alertmanager": true, "amtool": true}
	for _, n := range names {
		set, ok := toolSets[n]
		if !ok {
			t.Fatalf("DEMO_TOOLS names %q, which hack/tools does not know", n)
		}
		for _, tool := range set {
			if !runs[tool.Name] || tool.Module == controlplane.PrometheusLTS.Module || tool.Module == controlplane.AlertmanagerOld.Module {
				t.Errorf("DEMO_TOOLS %s builds %s %s, which the demo does not run", n, tool.Name, tool.Version)
			}
		}
	}
}
