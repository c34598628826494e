// Package controlplane runs a local Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager) from binaries built out of Go
// modules. The integration tests, the end-to-end tests and `make demo` use it.
package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Pinned versions of the binaries. Each is built from the tools module of the
// same name under tools/ and cached outside the repository, keyed by version.
const (
	EtcdVersion       = "v3.6.4"
	KubernetesVersion = "v1.36.3"
	PrometheusVersion = "v3.15.0"
	// PrometheusLTSVersion is the v2 long-term-support release (its last module tag) whose
	// config loader test/versions runs on what Lookout generates for a v2.53 Prometheus.
	PrometheusLTSVersion = "v2.53.3"
	// AlertmanagerVersion stays at v0.31.1: later module releases lack the
	// web UI's assets.
	AlertmanagerVersion  = "v0.31.1"
	ControllerGenVersion = "v0.23.0"
	HelmVersion          = "v3.22.0"
	// ThanosVersion stays at v0.41.0: later releases need a newer Go.
	ThanosVersion = "v0.41.0"
)

// AlertmanagerOldVersion is the older Alertmanager the end-to-end tests start with
// the flags Lookout generates for that version (kube-prometheus releases pinned it).
const AlertmanagerOldVersion = "v0.28.1"

// Tool describes one binary that is built from a tools module.
type Tool struct {
	Name     string // binary name
	Module   string // directory under tools/
	Version  string // cache key
	Package  string // Go package to build
	LDFlags  string
	Estimate string   // rough cold build time on 2 cores, shown while building
	Env      []string // extra environment for go build
}

// Tools lists every binary the local environment needs.
var (
	Etcd = Tool{Name: "etcd", Module: "etcd", Version: EtcdVersion,
		Package: "go.etcd.io/etcd/server/v3", Estimate: "1 min"}
	KubeAPIServer = Tool{Name: "kube-apiserver", Module: "kubernetes", Version: KubernetesVersion,
		Package: "k8s.io/kubernetes/cmd/kube-apiserver", Estimate: "6 min",
		LDFlags: "-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion}
	KubeControllerManager = Tool{Name: "kube-controller-manager", Module: "kubernetes", Version: KubernetesVersion,
		Package: "k8s.io/kubernetes/cmd/kube-controller-manager", Estimate: "3 min",
		LDFlags: "-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion}
	Kubectl = Tool{Name: "kubectl", Module: "kubernetes", Version: KubernetesVersion,
		Package: "k8s.io/kubernetes/cmd/kubectl", Estimate: "1 min",
		LDFlags: "-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion}
	// Kubelet runs pods on the real node of internal/node; it is not part of Start.
	Kubelet = Tool{Name: "kubelet", Module: "kubernetes", Version: KubernetesVersion,
		Package: "k8s.io/kubernetes/cmd/kubelet", Estimate: "4 min",
		LDFlags: "-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion}
	Prometheus = Tool{Name: "prometheus", Module: "prometheus", Version: PrometheusVersion,
		Package: "github.com/prometheus/prometheus/cmd/prometheus", Estimate: "9 min"}
	// Promtool runs the rule unit tests of the operator's own alerts: its
	// test logic lives in a main package, which cannot be imported.
	Promtool = Tool{Name: "promtool", Module: "prometheus", Version: PrometheusVersion,
		Package: "github.com/prometheus/prometheus/cmd/promtool", Estimate: "3 min"}
	PrometheusLTS = Tool{Name: "prometheus", Module: "prometheus-lts", Version: PrometheusLTSVersion,
		Package: "github.com/prometheus/prometheus/cmd/prometheus", Estimate: "8 min",
		LDFlags: "-X github.com/prometheus/common/version.Version=" + strings.TrimPrefix(PrometheusLTSVersion, "v")}
	Alertmanager = Tool{Name: "alertmanager", Module: "alertmanager", Version: AlertmanagerVersion,
		Package: "github.com/prometheus/alertmanager/cmd/alertmanager", Estimate: "3 min",
		LDFlags: "-X github.com/prometheus/common/version.Version=" + strings.TrimPrefix(AlertmanagerVersion, "v")}
	// AlertmanagerOld is the Alertmanager of AlertmanagerOldVersion, from its own tools module.
	AlertmanagerOld = Tool{Name: "alertmanager", Module: "alertmanager-v0.28", Version: AlertmanagerOldVersion,
		Package: "github.com/prometheus/alertmanager/cmd/alertmanager", Estimate: "3 min",
		LDFlags: "-X github.com/prometheus/common/version.Version=" + strings.TrimPrefix(AlertmanagerOldVersion, "v")}
	Amtool = Tool{Name: "amtool", Module: "alertmanager", Version: AlertmanagerVersion,
		Package: "github.com/prometheus/alertmanager/cmd/amtool", Estimate: "1 min",
		LDFlags: "-X github.com/prometheus/common/version.Version=" + strings.TrimPrefix(AlertmanagerVersion, "v")}
	ControllerGen = Tool{Name: "controller-gen", Module: "controller-gen", Version: ControllerGenVersion,
		Package: "sigs.k8s.io/controller-tools/cmd/controller-gen", Estimate: "20 s"}
	// Helm lints and renders charts/lookout in the install tests.
	Helm = Tool{Name: "helm", Module: "helm", Version: HelmVersion,
		Package: "helm.sh/helm/v3/cmd/helm", Estimate: "3 min",
		LDFlags: "-X helm.sh/helm/v3/internal/version.version=" + HelmVersion}
	// Thanos replaces some dependencies with forks that the checksum
	// database does not list, so their sums are checked against go.sum only.
	Thanos = Tool{Name: "thanos", Module: "thanos", Version: ThanosVersion,
		Package: "github.com/thanos-io/thanos/cmd/thanos", Estimate: "4 min",
		LDFlags: "-X github.com/prometheus/common/version.Version=" + strings.TrimPrefix(ThanosVersion, "v"),
		Env:     []string{"GONOSUMDB=github.com/thanos-community,github.com/themihai,github.com/zenhack,github.com/alecthomas"}}
)

// ControlPlaneTools are the binaries Start needs.
var ControlPlaneTools = []Tool{Etcd, KubeAPIServer, KubeControllerManager, Kubectl}

// CacheDir is where built binaries live: $LOOKOUT_CACHE, else
// $XDG_CACHE_HOME/lookout, else ~/.cache/lookout.
func CacheDir() string {
	if d := os.Getenv("LOOKOUT_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "lookout")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "lookout")
	}
	return filepath.Join(os.TempDir(), "lookout-cache")
}

// Path is where the tool's binary is cached.
func (t Tool) Path() string {
	return filepath.Join(CacheDir(), "bin", t.Module+"-"+t.Version, t.Name)
}

// RepoRoot finds the repository root (the directory holding tools/ and go.mod
// of this module) by walking up from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "kubernetes", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the Lookout repository root (a directory with tools/kubernetes/go.mod) above the working directory")
		}
		dir = parent
	}
}

// Ensure returns the path of the tool's binary, building it first when it is
// not cached yet. Concurrent callers (parallel test binaries) wait on a lock
// instead of building twice.
func (t Tool) Ensure(ctx context.Context, log io.Writer) (string, error) {
	path := t.Path()
	if isExecutable(path) {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("create cache directory for %s: %w", t.Name, err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if isExecutable(path) { // built by someone else while we waited
		return path, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	modDir := filepath.Join(root, "tools", t.Module)
	if log != nil {
		fmt.Fprintf(log, "building %s %s from Go modules (cold: about %s; cached afterwards in %s)\n", t.Name, t.Version, t.Estimate, filepath.Dir(path))
	}
	tmp := path + ".tmp"
	args := []string{"build", "-trimpath", "-o", tmp}
	if t.LDFlags != "" {
		args = append(args, "-ldflags", t.LDFlags)
	}
	args = append(args, t.Package)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = modDir
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off"), t.Env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("build %s %s in %s failed: %w\n%s", t.Name, t.Version, modDir, err, tail(out.String(), 40))
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("install %s into cache: %w", t.Name, err)
	}
	return path, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open build lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("take build lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
