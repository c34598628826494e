package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/devenv"
	amrender "github.com/lookout-operator/lookout/internal/render/alertmanager"
	"github.com/lookout-operator/lookout/internal/render/workload"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// The settings that bound the alerting benchmarks' figures (docs/benchmarks.md
// quotes them): Alertmanager holds a new group back for benchGroupWait before
// its first notification, Prometheus evaluates every benchEvalInterval, and
// the config benchmark polls Alertmanager's status every benchPoll, which is
// that figure's resolution.
const (
	benchAlertSamples  = 20
	benchGroupWait     = 100 * time.Millisecond
	benchEvalInterval  = "1s"
	benchPoll          = 20 * time.Millisecond
	benchSampleTimeout = 90 * time.Second
)

// alertingBenchRuns numbers the benchmarks' namespaces, so that -count=N
// runs each in a fresh one on the same control plane.
var alertingBenchRuns atomic.Int32

// BenchmarkRuleFiringToReceiverNotified measures what an on-call engineer
// waits for after adding an alerting rule: from creating a PrometheusRule with
// an always-firing alert (vector(1), for: 0) to the webhook receiver getting
// its notification. The path: watch → rule ConfigMap → volume sync (the
// local pod's, every 1s; a kubelet's is about a minute) → the reloader's
// directory poll (1s) → Prometheus reload → the next evaluation of the new
// group (evaluation interval 1s) → send to Alertmanager → group wait (100ms)
// → webhook. One Alertmanager replica (no gossip, no peer wait).
//
//	go test ./test/e2e -run '^$' -bench RuleFiringToReceiverNotified -benchtime=1x -v
func BenchmarkRuleFiringToReceiverNotified(b *testing.B) {
	if err := devenv.CheckPortsFree(9090, 8080); err != nil {
		b.Fatal(err)
	}
	env := startAlertingBench(b, "bench-notify")
	benchCreate(b, &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.ns, Name: "bench"},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{ServiceMonitorSelector: selectsNoMonitor,
				ScrapeInterval:       "1s",
				ServiceDiscoveryRole: ptr.To(monitoringv1.EndpointSliceRole),
			},
			EvaluationInterval: benchEvalInterval,
			RuleSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e"}},
			Alerting: &monitoringv1.AlertingSpec{Alertmanagers: []monitoringv1.AlertmanagerEndpoints{{
				Name: "alertmanager-operated",
				Port: intstr.FromString("web"),
			}}},
		},
	})
	benchPrometheusPod(b, env.ns, "bench")
	benchWaitUntil(b, "Prometheus has discovered the Alertmanager", func() bool {
		var out struct {
			Data struct {
				Active []struct {
					URL string `json:"url"`
				} `json:"activeAlertmanagers"`
			} `json:"data"`
		}
		return tryJSON(promURL+"/api/v1/alertmanagers", &out) == nil && len(out.Data.Active) == 1
	})
	// One alert through the whole path before timing: the first reload
	// with a rule and the first notification are not what a team waits for
	// later.
	warm, warmFired := env.notify(b, "BenchWarmup")
	b.Logf("warm-up (not counted): notified after %s, firing after %s", warm.Round(time.Millisecond), warmFired.Round(time.Millisecond))
	reloads := benchReloads(b, reloaderURL)

	b.ResetTimer()
	var total, fired []time.Duration
	for i := range benchAlertSamples {
		d, f := env.notify(b, fmt.Sprintf("Bench%d", i))
		total, fired = append(total, d), append(fired, f)
	}
	b.StopTimer()
	b.Logf("Prometheus reloads by the reloader during the %d samples: %v", benchAlertSamples, benchReloads(b, reloaderURL)-reloads)
	reportLatencies(b, "PrometheusRule created → webhook notified", total, true)
	// The split at the alert's startsAt (the evaluation that fired it):
	// before it the operator, the volume sync, the reloader and the wait for
	// the group's evaluation slot; after it the send, the group wait and the
	// POST.
	after := make([]time.Duration, len(total))
	for i := range total {
		after[i] = total[i] - fired[i]
	}
	reportLatencies(b, "  of which created → alert firing (startsAt)", fired, false)
	reportLatencies(b, "  of which firing → webhook notified", after, false)
}

// BenchmarkAlertmanagerConfigChangeInEffect measures what a team waits for
// after changing its AlertmanagerConfig: from the update call until the
// running Alertmanager's /api/v2/status shows the new config. The path:
// watch → render → generated Secret → the reloader's API watch of that
// Secret → POST /-/reload. The change sets a route matcher's value (the
// webhook URL would not do: Alertmanager shows URLs as <secret> in its
// status); the status is polled every 20ms, the figure's resolution.
//
//	go test ./test/e2e -run '^$' -bench AlertmanagerConfigChangeInEffect -benchtime=1x -v
func BenchmarkAlertmanagerConfigChangeInEffect(b *testing.B) {
	env := startAlertingBench(b, "bench-amconfig")
	status := env.am.URL(0, "/api/v2/status")
	reloader := fmt.Sprintf("http://%s:%d", env.am.IPs()[0], workload.ReloaderPort)
	reloads := benchReloads(b, reloader)
	// For the split only: when a watch delivers the generated Secret with
	// the new value (the operator's part).
	written := watchGeneratedSecret(b, env.ns, amrender.ConfigSecretName("bench"))

	b.ResetTimer()
	var d, updateCall, operatorPart []time.Duration
	for i := range benchAlertSamples {
		value := fmt.Sprintf("change-%02d", i)
		var start time.Time
		for {
			// Read first: the operator writes status.bindings, which moves
			// the resourceVersion. A conflict restarts the sample.
			if err := k8s.Get(testCtx, client.ObjectKeyFromObject(env.amc), env.amc); err != nil {
				b.Fatal(err)
			}
			env.amc.Spec.Route.Matchers = []monitoringv1alpha1.Matcher{{Name: "bench", Value: value, MatchType: monitoringv1alpha1.MatchEqual}}
			start = time.Now()
			err := k8s.Update(testCtx, env.amc)
			if err == nil {
				updateCall = append(updateCall, time.Since(start))
				break
			}
			if !apierrors.IsConflict(err) {
				b.Fatalf("sample %d: update: %v", i, err)
			}
		}
		for {
			st, err := amStatus(status)
			if err == nil && strings.Contains(st.Config.Original, value) {
				break
			}
			if time.Since(start) > benchSampleTimeout {
				b.Fatalf("sample %d: %q not in the Alertmanager's config within %s (last error %v):\n%s", i, value, benchSampleTimeout, err, st.Config.Original)
			}
			time.Sleep(benchPoll)
		}
		d = append(d, time.Since(start))
		operatorPart = append(operatorPart, written.firstWith(b, value).Sub(start))
	}
	b.StopTimer()
	reportLatencies(b, "AlertmanagerConfig updated → in effect in Alertmanager", d, true)
	rest := make([]time.Duration, len(d))
	for i := range d {
		rest[i] = d[i] - operatorPart[i]
	}
	reportLatencies(b, "  of which the update call (incl. the validating webhook)", updateCall, false)
	reportLatencies(b, "  of which updated → generated Secret written (watch)", operatorPart, false)
	reportLatencies(b, "  of which Secret written → in effect", rest, false)
	// The volume sync catches up with the Secret within a second; the
	// reloader, which also watches that directory, may then reload once
	// more. Let it, then count.
	time.Sleep(2 * time.Second)
	b.Logf("Alertmanager reloads by the reloader for the %d changes: %v", benchAlertSamples, benchReloads(b, reloader)-reloads)
}

// alertingBench is one Alertmanager (one replica) in a namespace of its own
// whose AlertmanagerConfig routes every alert of the namespace to a webhook
// receiver on the host.
type alertingBench struct {
	ns   string
	recv *devenv.Receiver
	amc  *monitoringv1alpha1.AlertmanagerConfig
	am   *devenv.AlertmanagerPods
}

func startAlertingBench(b *testing.B, prefix string) *alertingBench {
	b.Helper()
	env := &alertingBench{ns: fmt.Sprintf("%s-%d", prefix, alertingBenchRuns.Add(1))}
	_, env.recv, env.am, env.amc = startWebhookAlertmanager(b, env.ns, "bench", map[string]string{"bench": "alerting"})
	return env
}

// startWebhookAlertmanager creates namespace ns and runs Alertmanager ns/name (one
// replica, in a network namespace) whose AlertmanagerConfig (labelled labels) sends every
// alert of the namespace to a webhook receiver on the network's host address. Further
// pods can join the network.
func startWebhookAlertmanager(tb testing.TB, ns, name string, labels map[string]string) (*testhost.Network, *devenv.Receiver, *devenv.AlertmanagerPods, *monitoringv1alpha1.AlertmanagerConfig) {
	tb.Helper()
	benchCreate(tb, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	network, err := testhost.NewNetwork()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(network.Close)
	recv, err := devenv.StartReceiver(network)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(recv.Close)

	amc := &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route: benchRoute(),
			Receivers: []monitoringv1alpha1.Receiver{{
				Name:           "webhook",
				WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{URL: ptr.To(recv.URL("/webhook")), SendResolved: ptr.To(false)}},
			}},
		},
	}
	benchCreate(tb, amc)
	benchCreate(tb, &monitoringv1.Alertmanager{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: monitoringv1.AlertmanagerSpec{
			Replicas:                   ptr.To[int32](1),
			AlertmanagerConfigSelector: &metav1.LabelSelector{MatchLabels: labels},
		},
	})
	am, err := devenv.RunAlertmanagerPods(testCtx, k8s, cp, bins, network, ns, name, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("--- Alertmanager logs ---\n%s", am.Logs(3000))
		}
		am.Stop()
	})
	benchWaitUntil(tb, "the Alertmanager has the webhook route", func() bool {
		st, err := amStatus(am.URL(0, "/api/v2/status"))
		return err == nil && strings.Contains(st.Config.Original, "webhook_configs")
	})
	return network, recv, am, amc
}

// benchRoute sends every alert of the namespace to the webhook, one group
// per alert name, after benchGroupWait.
func benchRoute() *monitoringv1alpha1.Route {
	d := func(x time.Duration) *monitoringv1.NonEmptyDuration {
		v := monitoringv1.NonEmptyDuration(x.String())
		return &v
	}
	return &monitoringv1alpha1.Route{
		Receiver:       "webhook",
		GroupBy:        []string{"alertname"},
		GroupWait:      d(benchGroupWait),
		GroupInterval:  d(time.Second),
		RepeatInterval: d(time.Hour),
	}
}

// notify creates a PrometheusRule whose alert alertname always fires and
// waits for its notification. It returns the time from the create call to
// the receiver's recording of the POST, and to the alert's startsAt (the
// evaluation that fired it).
func (env *alertingBench) notify(b *testing.B, alertname string) (notified, fired time.Duration) {
	b.Helper()
	start := time.Now()
	err := k8s.Create(testCtx, rule(env.ns, strings.ToLower(alertname), monitoringv1.RuleGroup{Name: alertname, Rules: []monitoringv1.Rule{{
		Alert: alertname,
		Expr:  intstr.FromString("vector(1)"),
		// The AlertmanagerConfig's route matches the alerts of its own
		// namespace only.
		Labels: map[string]string{"namespace": env.ns},
	}}}))
	if err != nil {
		b.Fatalf("create the rule of %s: %v", alertname, err)
	}
	ctx, cancel := context.WithTimeout(testCtx, benchSampleTimeout)
	defer cancel()
	var msg benchWebhookMessage
	req, err := env.recv.WaitFor(ctx, func(r devenv.Request) bool {
		var m benchWebhookMessage
		if r.Path != "/webhook" || json.Unmarshal(r.Body, &m) != nil || m.CommonLabels["alertname"] != alertname || len(m.Alerts) == 0 {
			return false
		}
		msg = m
		return true
	})
	if err != nil {
		b.Fatalf("%s: no notification: %v", alertname, err)
	}
	return req.Time.Sub(start), msg.Alerts[0].StartsAt.Sub(start)
}

// benchWebhookMessage is the part of Alertmanager's webhook payload the
// benchmark reads.
type benchWebhookMessage struct {
	CommonLabels map[string]string `json:"commonLabels"`
	Alerts       []struct {
		StartsAt time.Time `json:"startsAt"`
	} `json:"alerts"`
}

// reportLatencies logs the nearest-rank p50, p90 and max of d (and every
// sample in the order taken), and reports them as the benchmark's metrics
// when report is set.
func reportLatencies(b *testing.B, what string, d []time.Duration, report bool) {
	b.Helper()
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	rank := func(q float64) time.Duration {
		return sorted[max(int(math.Ceil(q*float64(len(sorted))))-1, 0)]
	}
	p50, p90, top := rank(0.5), rank(0.9), sorted[len(sorted)-1]
	if report {
		ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
		b.ReportMetric(ms(p50), "p50-ms")
		b.ReportMetric(ms(p90), "p90-ms")
		b.ReportMetric(ms(top), "max-ms")
	}
	inOrder := make([]string, len(d))
	for i, x := range d {
		inOrder[i] = fmt.Sprint(x.Milliseconds())
	}
	r := func(x time.Duration) time.Duration { return x.Round(time.Millisecond) }
	b.Logf("%s over %d samples: p50 %s, p90 %s, max %s, min %s; in order (ms): %s",
		what, len(d), r(p50), r(p90), r(top), r(sorted[0]), strings.Join(inOrder, " "))
}

// secretWrites are the versions of one Secret a watch delivered, with the
// time each arrived and its decompressed config.
type secretWrites struct {
	key    string
	events chan secretWrite
	seen   []secretWrite
}

type secretWrite struct {
	at     time.Time
	config string
}

func watchGeneratedSecret(b *testing.B, ns, name string) *secretWrites {
	b.Helper()
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		b.Fatal(err)
	}
	w, err := cs.CoreV1().Secrets(ns).Watch(testCtx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	sw := &secretWrites{key: amrender.ConfigSecretKey, events: make(chan secretWrite, 1024)}
	go func() {
		for ev := range w.ResultChan() {
			at := time.Now()
			s, ok := ev.Object.(*corev1.Secret)
			if !ok {
				continue
			}
			zr, err := gzip.NewReader(bytes.NewReader(s.Data[sw.key]))
			if err != nil {
				continue
			}
			raw, _ := io.ReadAll(zr)
			sw.events <- secretWrite{at: at, config: string(raw)}
		}
	}()
	return sw
}

// firstWith is the arrival time of the first version that contains value.
func (sw *secretWrites) firstWith(b *testing.B, value string) time.Time {
	b.Helper()
	timeout := time.After(10 * time.Second)
	for {
		for _, e := range sw.seen {
			if strings.Contains(e.config, value) {
				return e.at
			}
		}
		select {
		case e := <-sw.events:
			sw.seen = append(sw.seen, e)
		case <-timeout:
			b.Fatalf("the watch delivered no generated Secret with %q", value)
		}
	}
}

// benchReloads is the number of reloads the reloader at base has made.
func benchReloads(b *testing.B, base string) float64 {
	b.Helper()
	n, err := amMetric(base+"/metrics", "lookout_reloader_reloads_total", "")
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func benchCreate(b testing.TB, obj client.Object) {
	b.Helper()
	if err := k8s.Create(testCtx, obj); err != nil {
		b.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func benchWaitUntil(b testing.TB, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(benchSampleTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func benchPrometheusPod(b *testing.B, ns, name string) {
	b.Helper()
	pod, err := devenv.RunPrometheusPod(testCtx, k8s, cp, bins, ns, name, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		pod.Stop()
		if b.Failed() {
			for _, c := range pod.Containers {
				out, _ := os.ReadFile(c.LogPath)
				b.Logf("--- %s log ---\n%s", c.Name, devenv.LastBytes(out, 3000))
			}
		}
	})
}
