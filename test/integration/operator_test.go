package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/scheme"
)

// writes counts every write the operator's client sends; writeLog names them.
var (
	writes   atomic.Int64
	writeLog sync.Map // sequence number → "verb kind ns/name"
)

func recordWrite(verb string, obj client.Object) {
	n := writes.Add(1)
	writeLog.Store(n, fmt.Sprintf("%s %T %s/%s", verb, obj, obj.GetNamespace(), obj.GetName()))
}

// writesSince describes the writes after sequence number n to objects in
// namespace ns (the operator keeps reconciling other tests' objects).
func writesSince(n int64, ns string) []string {
	var out []string
	for i := n + 1; i <= writes.Load(); i++ {
		if v, ok := writeLog.Load(i); ok && strings.Contains(v.(string), " "+ns+"/") {
			out = append(out, v.(string))
		}
	}
	return out
}

// startOperator runs the controllers in this process, the way `lookout
// operator` wires them, with a client that counts writes.
func startOperator() (func(), error) {
	ctrl.SetLogger(testLogger())
	opts := managerOptions()
	opts.NewClient = func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, opts)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, countingFuncs()), nil
	}
	mgr, err := ctrl.NewManager(cp.RESTConfig, opts)
	if err != nil {
		return nil, err
	}
	if err := controller.Setup(mgr, controller.Options{Workers: 4, ReloaderImage: "lookout-reloader:test"}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Println("manager stopped:", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// managerOptions are those of the operator's manager, as lookout operator sets them,
// without metrics and probe listeners.
func managerOptions() ctrl.Options {
	return ctrl.Options{
		Scheme:                 scheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controller.CacheOptions(nil),
		Client: client.Options{Cache: &client.CacheOptions{
			DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}},
		}},
	}
}

func countingFuncs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			recordWrite("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			recordWrite("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			recordWrite("patch", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			desc := fmt.Sprintf("apply %T", obj)
			if o, ok := obj.(interface {
				GetNamespace() string
				GetName() string
				GetKind() string
			}); ok {
				desc = fmt.Sprintf("apply %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
			}
			writeLog.Store(writes.Add(1), desc)
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			recordWrite("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			recordWrite("patch "+sub, obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// reconciles reads controller-runtime's reconcile counter for the
// prometheus controller.
func reconciles(t *testing.T) float64 {
	t.Helper()
	return reconcilesOf(t, "prometheus")
}

// reconcilesOf reads controller-runtime's reconcile counter for one controller.
func reconcilesOf(t *testing.T, controller string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelValue(m, "controller") == controller {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// eventually polls cond every 50ms until it is true or 30s pass.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(testCtx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out waiting until %s (last error: %v)", what, last)
	}
}

// configOf reads and gunzips the generated prometheus.yaml.
func configOf(ns, name string) (string, error) {
	return devenv.GeneratedConfig(testCtx, k8s, ns, name)
}

func condition(p *monitoringv1.Prometheus, t monitoringv1.ConditionType) *monitoringv1.Condition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

type promOpt func(*monitoringv1.Prometheus)

func newPrometheus(ns, name string, opts ...promOpt) *monitoringv1.Prometheus {
	p := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

type smOpt func(*monitoringv1.ServiceMonitor)

func newServiceMonitor(ns, name string, opts ...smOpt) *monitoringv1.ServiceMonitor {
	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics"}},
		},
	}
	for _, o := range opts {
		o(sm)
	}
	return sm
}

func withRelabeling(rc monitoringv1.RelabelConfig) smOpt {
	return func(sm *monitoringv1.ServiceMonitor) {
		sm.Spec.Endpoints[0].RelabelConfigs = append(sm.Spec.Endpoints[0].RelabelConfigs, rc)
	}
}

func mustCreate(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(testCtx, obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func jobsIn(cfg string) []string {
	var jobs []string
	for _, line := range strings.Split(cfg, "\n") {
		if strings.HasPrefix(line, "- job_name: ") {
			jobs = append(jobs, strings.TrimPrefix(line, "- job_name: "))
		}
	}
	return jobs
}
