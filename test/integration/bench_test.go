package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
)

// BenchmarkServiceMonitorCreatedToConfigSecretUpdated measures the time from
// creating one ServiceMonitor to the config Secret holding its job, for a
// Prometheus that already selects 1,000 monitors.
//
// It takes a fixed set of samples (max(b.N, 100)) and reports their
// percentiles with b.ReportMetric, so run it with -benchtime=1x; ns/op is the
// wall time of the whole measurement loop and says little. The Secret is read
// through a watch, so a sample ends when the apiserver delivers the update,
// not at the next tick of a poll. Before each change the benchmark waits until
// the prometheus controller is idle: a sample is one change reaching an idle
// operator, not a change queued behind the previous reconcile's status write.
func BenchmarkServiceMonitorCreatedToConfigSecretUpdated(b *testing.B) {
	const (
		prometheusName = "bench"
		existing       = 1000
		creators       = 16
	)
	samples := max(b.N, 100)

	ns := newNamespaceTB(b)
	if err := k8s.Create(testCtx, newPrometheus(ns, prometheusName)); err != nil {
		b.Fatalf("create Prometheus %s/%s: %v", ns, prometheusName, err)
	}
	w := watchConfigSecret(b, ns, prometheusName)

	jobPrefix := "- job_name: serviceMonitor/" + ns + "/"
	start := time.Now()
	names := make([]string, existing)
	for i := range names {
		names[i] = fmt.Sprintf("sm-%04d", i)
	}
	createServiceMonitors(b, ns, names, creators)
	created := time.Since(start)
	w.waitFor(b, 10*time.Minute, fmt.Sprintf("the config holds %d jobs", existing), func(cfg string) bool {
		return strings.Count(cfg, jobPrefix) == existing
	})
	converged := time.Since(start)
	b.Logf("setup: created %d ServiceMonitors in %v; config held all their jobs after %v",
		existing, created.Round(time.Millisecond), converged.Round(time.Millisecond))

	waitControllerIdle(b, "prometheus")
	reconcilesBefore := controllerReconciles(b, "prometheus")
	latencies := make([]time.Duration, 0, samples)
	b.ResetTimer()
	for i := range samples {
		waitControllerIdle(b, "prometheus")
		w.drain(b)
		name := fmt.Sprintf("new-%04d", i)
		job := jobPrefix + name + "/0\n"
		begin := time.Now()
		if err := k8s.Create(testCtx, newServiceMonitor(ns, name)); err != nil {
			b.Fatalf("create ServiceMonitor %s/%s: %v", ns, name, err)
		}
		seen := w.waitFor(b, time.Minute, "the config holds job "+strings.TrimSpace(job), func(cfg string) bool {
			return strings.Contains(cfg, job)
		})
		latencies = append(latencies, seen.Sub(begin))
	}
	b.StopTimer()
	waitControllerIdle(b, "prometheus")
	perChange := (controllerReconciles(b, "prometheus") - reconcilesBefore) / float64(samples)

	slices.Sort(latencies)
	var sum time.Duration
	for _, d := range latencies {
		sum += d
	}
	p50, p99 := percentile(latencies, 0.50), percentile(latencies, 0.99)
	maxLat, mean := latencies[len(latencies)-1], sum/time.Duration(len(latencies))
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(maxLat), "max-ms")
	b.ReportMetric(ms(mean), "mean-ms")
	b.ReportMetric(perChange, "reconciles/change")
	b.Logf("%d samples with %d existing ServiceMonitors: p50 %.1fms p99 %.1fms max %.1fms mean %.1fms; %.2f reconciles per change",
		len(latencies), existing, ms(p50), ms(p99), ms(maxLat), ms(mean), perChange)
}

// percentile returns the nearest-rank percentile of sorted samples: for 100
// samples, p=0.99 is the 99th smallest.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

// newNamespaceTB creates a namespace that is deleted when tb ends; unlike
// newNamespace it also serves benchmarks.
func newNamespaceTB(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("b%d-%s", nsCounter.Add(1), sanitize(tb.Name()))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(testCtx, ns); err != nil {
		tb.Fatalf("create namespace %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return name
}

// createServiceMonitors creates one team=a ServiceMonitor per name, from
// several goroutines so that 1,000 of them take seconds, not minutes.
func createServiceMonitors(tb testing.TB, ns string, names []string, workers int) {
	tb.Helper()
	todo := make(chan string, len(names))
	for _, n := range names {
		todo <- n
	}
	close(todo)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Go(func() {
			for name := range todo {
				err := k8s.Create(testCtx, newServiceMonitor(ns, name))
				if err == nil {
					continue
				}
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("create ServiceMonitor %s/%s: %w", ns, name, err)
				}
				mu.Unlock()
				return
			}
		})
	}
	wg.Wait()
	if first != nil {
		tb.Fatal(first)
	}
}

// configWatch follows the config of one Prometheus: its config Secret and
// the piece Secrets a large config is split into, through one watch on the
// namespace's Secrets.
type configWatch struct {
	main, piecePrefix string
	events            <-chan watch.Event
	pending           []watch.Event     // read by the initial list, before the watch
	docs              map[string]string // Secret name → gunzipped document
}

// watchConfigSecret starts watching the config Secrets of Prometheus name in
// ns from the current resource version; the watch is restarted if the
// apiserver closes it and is stopped when tb ends.
func watchConfigSecret(tb testing.TB, ns, name string) *configWatch {
	tb.Helper()
	secrets := kubernetes.NewForConfigOrDie(cp.RESTConfig).CoreV1().Secrets(ns)
	list, err := secrets.List(testCtx, metav1.ListOptions{})
	if err != nil {
		tb.Fatalf("list Secrets in %s: %v", ns, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return secrets.Watch(ctx, opts)
		},
	})
	if err != nil {
		cancel()
		tb.Fatalf("watch Secrets in %s: %v", ns, err)
	}
	tb.Cleanup(func() { w.Stop(); cancel() })
	cw := &configWatch{
		main: promrender.ConfigSecretName(name), piecePrefix: strings.TrimSuffix(promrender.ConfigPieceSecretName(name, 0), "0"),
		events: w.ResultChan(), docs: map[string]string{},
	}
	// The Secrets may have been written between the Prometheus's creation
	// and the list; waitFor must see those versions too.
	for i := range list.Items {
		cw.pending = append(cw.pending, watch.Event{Type: watch.Added, Object: &list.Items[i]})
	}
	return cw
}

// config is the main config followed by every piece, in name order.
func (cw *configWatch) config() string {
	names := make([]string, 0, len(cw.docs))
	for n := range cw.docs {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(cw.docs[n])
	}
	return b.String()
}

// apply records one event; it says whether a config Secret changed.
func (cw *configWatch) apply(ev watch.Event) (bool, error) {
	if ev.Type == watch.Bookmark {
		return false, nil
	}
	s, isSecret := ev.Object.(*corev1.Secret)
	if !isSecret {
		return false, fmt.Errorf("unexpected %s event in a watch of Secrets: %v", ev.Type, objectString(ev.Object))
	}
	key := promrender.ConfigSecretKey
	switch {
	case s.Name == cw.main:
	case strings.HasPrefix(s.Name, cw.piecePrefix):
		key = promrender.ConfigPieceKey
	default:
		return false, nil
	}
	if ev.Type == watch.Deleted {
		delete(cw.docs, s.Name)
		return true, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(s.Data[key]))
	if err != nil {
		return false, fmt.Errorf("gunzip %s of Secret %s/%s: %w", key, s.Namespace, s.Name, err)
	}
	cfg, err := io.ReadAll(zr)
	if err != nil {
		return false, fmt.Errorf("gunzip %s of Secret %s/%s: %w", key, s.Namespace, s.Name, err)
	}
	cw.docs[s.Name] = string(cfg)
	return true, nil
}

// waitFor returns when the watch delivered the first version of the config
// Secrets whose gunzipped documents together satisfy ok; the time returned is
// when that event arrived, before it was decoded.
func (cw *configWatch) waitFor(tb testing.TB, timeout time.Duration, what string, ok func(cfg string) bool) time.Time {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		var (
			ev watch.Event
			at time.Time
		)
		if len(cw.pending) > 0 {
			ev, cw.pending = cw.pending[0], cw.pending[1:]
			at = time.Now()
		} else {
			select {
			case e, open := <-cw.events:
				at = time.Now()
				if !open {
					tb.Fatalf("the watch on the config Secrets closed while waiting until %s", what)
				}
				ev = e
			case <-deadline.C:
				tb.Fatalf("timed out after %v waiting until %s", timeout, what)
			}
		}
		changed, err := cw.apply(ev)
		if err != nil {
			tb.Fatalf("waiting until %s: %v", what, err)
		}
		if changed && ok(cw.config()) {
			return at
		}
	}
}

// drain records the events already delivered without testing them, so that
// the next waitFor starts with a fresh one.
func (cw *configWatch) drain(tb testing.TB) {
	tb.Helper()
	for _, ev := range cw.pending {
		if _, err := cw.apply(ev); err != nil {
			tb.Fatal(err)
		}
	}
	cw.pending = nil
	for {
		select {
		case ev, open := <-cw.events:
			if !open {
				tb.Fatal("the watch on the config Secrets closed")
			}
			if _, err := cw.apply(ev); err != nil {
				tb.Fatal(err)
			}
		default:
			return
		}
	}
}

func objectString(obj runtime.Object) string {
	if st, isStatus := obj.(*metav1.Status); isStatus {
		return st.Message
	}
	return fmt.Sprintf("%T", obj)
}

// waitControllerIdle waits until the named controller has nothing queued and
// no reconcile running, reading controller-runtime's own metrics.
func waitControllerIdle(tb testing.TB, controllerName string) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		busy, err := controllerBusy(controllerName)
		if err != nil {
			tb.Fatal(err)
		}
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("controller %s still busy (%v queued or running) after a minute", controllerName, busy)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// controllerReconciles reads controller-runtime's reconcile counter for the
// named controller, all results together.
func controllerReconciles(tb testing.TB, controllerName string) float64 {
	tb.Helper()
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		tb.Fatalf("gather controller metrics: %v", err)
	}
	var total float64
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelValue(m, "controller") == controllerName {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// controllerBusy is the controller's queue depth plus its active workers.
func controllerBusy(controllerName string) (float64, error) {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, fmt.Errorf("gather controller metrics: %w", err)
	}
	var busy float64
	for _, mf := range mfs {
		if mf.GetName() != "workqueue_depth" && mf.GetName() != "controller_runtime_active_workers" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelValue(m, "controller") == controllerName {
				busy += m.GetGauge().GetValue()
			}
		}
	}
	return busy, nil
}
