package faults

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	promconfig "github.com/prometheus/prometheus/config"
	// The loader knows the discovery mechanisms linked in: the ones Lookout writes.
	_ "github.com/prometheus/prometheus/discovery/kubernetes"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFuzzAtScaleEveryObjectGetsAVerdictAndTheConfigLoads: 10,000 generated
// ServiceMonitors and PrometheusRules, valid and invalid mixed (bad regexes, port patterns that do not compile,
// missing Secrets, PromQL that does not parse), go through the operator binary on the real
// apiserver. Whatever the apiserver admits gets a binding, every rejected one with a
// reason; the generated config, pieces included, loads in Prometheus's config package; the
// operator does not crash. It runs last in this package and on its own control plane: its
// load would distort other suites' timings.
func TestFuzzAtScaleEveryObjectGetsAVerdictAndTheConfigLoads(t *testing.T) {
	const monitors, rules = 9000, 1000
	ns := newNamespace(t)
	// Without the webhook, so that every invalid object reaches the controllers.
	op := startOperator(t, "fuzz", "--webhook=false")
	rng := rand.New(rand.NewPCG(42, 7)) // fixed seed: a failure reproduces
	type object struct {
		obj   client.Object
		valid bool
	}
	var objs []object
	for i := range monitors {
		sm := newServiceMonitor(ns, i)
		valid := true
		switch rng.IntN(6) {
		case 1:
			sm.Spec.Endpoints[0].RelabelConfigs = []monitoringv1.RelabelConfig{{SourceLabels: []monitoringv1.LabelName{"__address__"}, Regex: "(unclosed", Action: "keep"}}
			valid = false
		case 2:
			sm.Spec.Endpoints[0].Port = "web(" // the port is a regex of Service port names; this one does not compile
			valid = false
		case 3:
			sm.Spec.Endpoints[0].BasicAuth = &monitoringv1.BasicAuth{
				Username: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "u"},
				Password: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "p"},
			}
			valid = false
		case 4:
			sm.Spec.Endpoints = append(sm.Spec.Endpoints, monitoringv1.Endpoint{Port: "web", Interval: "15s",
				MetricRelabelConfigs: []monitoringv1.RelabelConfig{{SourceLabels: []monitoringv1.LabelName{"__name__"}, Regex: "go_.*", Action: "drop"}}})
		}
		objs = append(objs, object{sm, valid})
	}
	for i := range rules {
		expr, valid := "vector(1)", true
		if rng.IntN(4) == 0 {
			expr, valid = "rate(", false
		}
		objs = append(objs, object{&monitoringv1.PrometheusRule{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("rule-%03d", i)},
			Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: fmt.Sprintf("g%d", i), Rules: []monitoringv1.Rule{
				{Alert: fmt.Sprintf("Fuzz%d", i), Expr: intstr.FromString(expr)},
			}}}},
		}, valid})
		objs[len(objs)-1].obj.SetLabels(map[string]string{"team": "a"})
	}
	p := newPrometheus(ns)
	p.Spec.RuleSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	if err := k8s.Create(testCtx, p); err != nil {
		t.Fatal(err)
	}

	// Create with a few writers; what the apiserver refuses (its schema) is not the
	// operator's to judge and is left out.
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted = map[string]bool{} // "Kind/name" → valid
		next     = make(chan object)
	)
	for range 16 {
		wg.Go(func() {
			for o := range next {
				if err := k8s.Create(testCtx, o.obj); err != nil {
					continue
				}
				mu.Lock()
				admitted[fmt.Sprintf("%T/%s", o.obj, o.obj.GetName())] = o.valid
				mu.Unlock()
			}
		})
	}
	for _, o := range objs {
		next <- o
	}
	close(next)
	wg.Wait()
	t.Logf("%d of %d generated objects admitted by the apiserver", len(admitted), len(objs))

	// Every admitted object gets a verdict; the invalid ones are rejected with a reason.
	// It waits while verdicts keep coming: how fast they come is the benchmarks'
	// business (docs/benchmarks.md), and on a loaded machine 10,000 take minutes.
	// Two minutes without a new verdict is a stall.
	var verdicts map[string]*monitoringv1.ConfigResourceCondition
	const stall = 2 * time.Minute
	start, progressed, seen := time.Now(), time.Now(), 0
	for {
		verdicts = bindingsIn(t, ns, "main")
		if len(verdicts) == len(admitted) {
			break
		}
		if len(verdicts) > seen {
			seen, progressed = len(verdicts), time.Now()
		}
		if time.Since(progressed) > stall {
			t.Fatalf("%d of %d admitted objects have a verdict after %v, none new for %v", len(verdicts), len(admitted), time.Since(start).Round(time.Second), stall)
		}
		time.Sleep(time.Second) // a poll interval: the wait is on the condition above
	}
	t.Logf("every admitted object has a verdict after %v", time.Since(start).Round(time.Second))
	for key, valid := range admitted {
		c := verdicts[key]
		switch {
		case valid && c.Status != monitoringv1.ConditionTrue:
			t.Errorf("%s should be accepted: %s %s", key, c.Reason, c.Message)
		case !valid && (c.Status != monitoringv1.ConditionFalse || c.Reason == "" || c.Message == ""):
			t.Errorf("%s should be rejected with a reason: %+v", key, *c)
		}
	}

	// The config, with its pieces put back in, loads in Prometheus's config package.
	cfg := fullConfig(t, ns, "main")
	loaded, err := promconfig.Load(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Prometheus refuses the generated config: %v", err)
	}
	accepted := 0
	for key, valid := range admitted {
		if valid && strings.HasPrefix(key, "*v1.ServiceMonitor/") {
			accepted++
		}
	}
	if len(loaded.ScrapeConfigs) < accepted {
		t.Errorf("%d jobs loaded, want at least one per accepted ServiceMonitor (%d)", len(loaded.ScrapeConfigs), accepted)
	}
	select {
	case <-op.Exited():
		t.Fatal("the operator exited")
	default:
	}
}

// bindingsIn maps "*v1.Kind/name" of every ServiceMonitor and PrometheusRule in ns to its
// Accepted condition for Prometheus ns/name.
func bindingsIn(t *testing.T, ns, name string) map[string]*monitoringv1.ConfigResourceCondition {
	t.Helper()
	out := map[string]*monitoringv1.ConfigResourceCondition{}
	add := func(kind, obj string, st monitoringv1.ConfigResourceStatus) {
		for i := range st.Bindings {
			b := &st.Bindings[i]
			if b.Name == name && b.Namespace == ns && len(b.Conditions) > 0 {
				out[kind+"/"+obj] = &b.Conditions[0]
			}
		}
	}
	var sms monitoringv1.ServiceMonitorList
	var prs monitoringv1.PrometheusRuleList
	if err := k8s.List(testCtx, &sms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.List(testCtx, &prs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, sm := range sms.Items {
		add("*v1.ServiceMonitor", sm.Name, sm.Status)
	}
	for _, pr := range prs.Items {
		add("*v1.PrometheusRule", pr.Name, pr.Status)
	}
	return out
}

// fullConfig is the generated prometheus.yaml with the jobs of its pieces moved back into
// scrape_configs, so that it loads without the pod's files.
func fullConfig(t *testing.T, ns, name string) string {
	t.Helper()
	read := func(secret string) []byte {
		var s corev1.Secret
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: secret}, &s); err != nil {
			t.Fatalf("Secret %s: %v", secret, err)
		}
		for key, v := range s.Data {
			if strings.HasSuffix(key, ".gz") {
				zr, err := gzip.NewReader(bytes.NewReader(v))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(zr)
				return b
			}
		}
		t.Fatalf("Secret %s holds no gzipped file", secret)
		return nil
	}
	var main yaml.MapSlice
	if err := yaml.Unmarshal(read("prometheus-"+name), &main); err != nil {
		t.Fatal(err)
	}
	var jobs []any
	out := yaml.MapSlice{}
	for _, item := range main {
		switch item.Key {
		case "scrape_config_files":
			var secrets corev1.SecretList
			if err := k8s.List(context.Background(), &secrets, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets.Items {
				if !strings.HasPrefix(s.Name, "prometheus-"+name+"-scrape-") {
					continue
				}
				var piece struct {
					ScrapeConfigs []any `yaml:"scrape_configs"`
				}
				if err := yaml.Unmarshal(read(s.Name), &piece); err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, piece.ScrapeConfigs...)
			}
		case "scrape_configs":
			l, _ := item.Value.([]any)
			jobs = append(jobs, l...)
		default:
			out = append(out, item)
		}
	}
	out = append(out, yaml.MapItem{Key: "scrape_configs", Value: jobs})
	b, err := yaml.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
