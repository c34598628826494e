// Package webhook proves, against a real kube-apiserver and etcd, that the
// apiserver calls Lookout's validating webhook over TLS with the CA the
// operator generated, that invalid objects are refused with readable
// messages, and that a webhook that is down or hanging does not block writes.
//
// The tests share one webhook (one ValidatingWebhookConfiguration for the
// whole cluster) and do not run in parallel: one of them stops and restarts it.
package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/scheme"
	"github.com/lookout-operator/lookout/internal/webhook"
)

const operatorNamespace = "lookout-system"

var (
	cp          *controlplane.ControlPlane
	k8s         client.Client
	testCtx     = context.Background()
	webhookOpts webhook.Options
	// stopWebhook stops the running webhook manager; the test that stops
	// it starts it again and replaces this.
	stopWebhook func()
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	repoRoot := filepath.Join(filepath.Dir(file), "..", "..")

	var err error
	cp, err = controlplane.Start(testCtx, controlplane.Options{
		Log:                      os.Stderr,
		CRDDir:                   filepath.Join(repoRoot, "config", "crd"),
		WithoutControllerManager: true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	defer cp.Stop()

	k8s, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		return 1
	}
	if err := k8s.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		fmt.Fprintln(os.Stderr, "create namespace:", err)
		return 1
	}

	port, err := freePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	certDir, err := os.MkdirTemp("", "lookout-webhook-certs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(certDir)
	webhookOpts = webhook.Options{
		Host:        "127.0.0.1",
		Port:        port,
		CertDir:     certDir,
		ManageCerts: true,
		Namespace:   operatorNamespace,
		URL:         "https://127.0.0.1:" + strconv.Itoa(port),
		// The conversion tests need the CRD pointed at the webhook.
		Conversion: true,
	}
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	stopWebhook, err = startWebhook(webhookOpts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start webhook:", err)
		return 1
	}
	defer func() { stopWebhook() }()
	if err := waitUntilRefusing(testCtx, 60*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// startWebhook runs a manager with only the webhook, the way `lookout
// operator` wires it. The returned function stops it and returns once the
// server no longer listens.
func startWebhook(opts webhook.Options) (func(), error) {
	mgr, err := ctrl.NewManager(cp.RESTConfig, ctrl.Options{
		Scheme:                 scheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          crwebhook.NewServer(opts.ServerOptions()),
	})
	if err != nil {
		return nil, err
	}
	if err := webhook.Setup(mgr, opts); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// waitUntilRefusing waits until the apiserver sends PrometheusRules to the
// webhook: a dry-run create of an invalid rule is refused.
func waitUntilRefusing(ctx context.Context, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = k8s.Create(ctx, invalidRule("default", "probe"), client.DryRunAll)
		return apierrors.IsInvalid(last), nil
	})
	if err != nil {
		return fmt.Errorf("the webhook does not refuse an invalid PrometheusRule (last answer: %v): %w", last, err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Objects.

func prometheusRule(ns, name string, expr string) *monitoringv1.PrometheusRule {
	return &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{
			Name:  "availability",
			Rules: []monitoringv1.Rule{{Alert: "TargetDown", Expr: intstr.FromString(expr), Labels: map[string]string{"severity": "page"}}},
		}}},
	}
}

func invalidRule(ns, name string) *monitoringv1.PrometheusRule {
	return prometheusRule(ns, name, "up ==")
}

var nsCounter int

// newNamespace creates a namespace for one test; it is deleted afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	nsCounter++
	name := fmt.Sprintf("webhook-%d", nsCounter)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(testCtx, ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return name
}

// refused asserts that err is the webhook's Invalid answer and that its
// message contains every part.
func refused(t *testing.T, err error, webhookName string, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("the apiserver accepted the object")
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("err = %v (reason %s), want Invalid", err, apierrors.ReasonForError(err))
	}
	msg := err.Error()
	parts = append(parts, fmt.Sprintf("admission webhook %q denied the request", webhookName))
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("the message does not contain %q:\n%s", p, msg)
		}
	}
}
