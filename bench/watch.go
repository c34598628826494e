package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
)

// tracker is state built from a watch, with waiters that are woken on every
// event. at is when the last event arrived, before it was decoded, so a
// sample ends when the apiserver delivered the object, not when the harness
// got round to looking at it.
type tracker struct {
	mu      sync.Mutex
	changed chan struct{}
	at      time.Time
	err     error
}

func newTracker() tracker { return tracker{changed: make(chan struct{})} }

// update runs f under the lock and wakes the waiters.
func (t *tracker) update(at time.Time, f func()) {
	t.mu.Lock()
	f()
	t.at = at
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
}

func (t *tracker) fail(err error) {
	t.mu.Lock()
	if t.err == nil {
		t.err = err
	}
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
}

// waitUntil returns the arrival time of the event after which ok (called
// under the lock) first held.
func (t *tracker) waitUntil(ctx context.Context, timeout time.Duration, what string, ok func() bool) (time.Time, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		t.mu.Lock()
		done, at, ch, err := ok(), t.at, t.changed, t.err
		t.mu.Unlock()
		if done {
			return at, nil
		}
		if err != nil {
			return time.Time{}, err
		}
		select {
		case <-ch:
		case <-deadline.C:
			return time.Time{}, fmt.Errorf("timed out after %v waiting until %s", timeout, what)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// follow feeds the listed objects, then every watch event, to handle until
// ctx ends. The watch resumes from the last resourceVersion when the
// apiserver closes it.
func follow(ctx context.Context, items []runtime.Object, rv string, watchFn func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error),
	t *tracker, handle func(ev watch.Event, at time.Time)) error {
	now := time.Now()
	for _, obj := range items {
		handle(watch.Event{Type: watch.Added, Object: obj}, now)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: watchFn})
	if err != nil {
		return err
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case ev, open := <-w.ResultChan():
				if !open {
					if ctx.Err() == nil {
						t.fail(fmt.Errorf("watch closed"))
					}
					return
				}
				at := time.Now()
				if ev.Type == watch.Error {
					t.fail(fmt.Errorf("watch error: %v", apiStatus(ev.Object)))
					return
				}
				handle(ev, at)
			case <-ctx.Done():
				return
			}
		}
	}()
	return nil
}

func apiStatus(obj runtime.Object) string {
	if st, ok := obj.(*metav1.Status); ok {
		return st.Message
	}
	return fmt.Sprintf("%T", obj)
}

// configWatch follows every config Secret the operator writes: the main
// Secret prometheus-<name> (key prometheus.yaml.gz) and the pieces
// prometheus-<name>-scrape-<i> (key scrape.yaml.gz) that the main
// configuration loads with scrape_config_files when it is split.
type configWatch struct {
	tracker
	// configs maps "ns/name" of a Prometheus to its config Secrets' names
	// and their gunzipped text.
	configs map[string]map[string]string
}

const jobPrefix = "- job_name: serviceMonitor/"

func watchConfigs(ctx context.Context, cs kubernetes.Interface) (*configWatch, error) {
	cw := &configWatch{tracker: newTracker(), configs: map[string]map[string]string{}}
	secrets := cs.CoreV1().Secrets("")
	sel := promrender.LabelPrometheus
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list config Secrets: %w", err)
	}
	items := make([]runtime.Object, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, &list.Items[i])
	}
	err = follow(ctx, items, list.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = sel
		return secrets.Watch(ctx, opts)
	}, &cw.tracker, cw.handle)
	return cw, err
}

func (cw *configWatch) handle(ev watch.Event, at time.Time) {
	s, ok := ev.Object.(*corev1.Secret)
	if !ok {
		return
	}
	promName := s.Labels[promrender.LabelPrometheus]
	promNs := s.Labels[promrender.LabelPrometheusNamespace]
	if promNs == "" {
		promNs = s.Namespace
	}
	var key string
	switch {
	case s.Name == promrender.ConfigSecretName(promName):
		key = promrender.ConfigSecretKey
	case strings.HasPrefix(s.Name, promrender.ConfigSecretName(promName)+"-scrape-"):
		key = promrender.ConfigPieceKey
	default:
		return
	}
	prom, secret := promNs+"/"+promName, s.Namespace+"/"+s.Name
	var text string
	if ev.Type != watch.Deleted {
		var err error
		if text, err = gunzip(s.Data[key]); err != nil {
			cw.fail(fmt.Errorf("Secret %s key %s: %w", secret, key, err))
			return
		}
	}
	cw.update(at, func() {
		m := cw.configs[prom]
		if m == nil {
			m = map[string]string{}
			cw.configs[prom] = m
		}
		if ev.Type == watch.Deleted {
			delete(m, secret)
		} else {
			m[secret] = text
		}
	})
}

// jobs counts the ServiceMonitor jobs of Prometheus prom, over all its
// config Secrets. Call under the lock (inside waitUntil).
func (cw *configWatch) jobs(prom string) int {
	n := 0
	for _, text := range cw.configs[prom] {
		n += strings.Count(text, jobPrefix)
	}
	return n
}

// has reports whether a config Secret of prom holds job. Call under the lock.
func (cw *configWatch) has(prom, job string) bool {
	for _, text := range cw.configs[prom] {
		if strings.Contains(text, job) {
			return true
		}
	}
	return false
}

// pieces is the number of config Secrets of prom.
func (cw *configWatch) pieces(prom string) int {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return len(cw.configs[prom])
}

func gunzip(b []byte) (string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	out, err := io.ReadAll(zr)
	return string(out), err
}

// bindingWatch follows every ServiceMonitor and counts those whose
// status.bindings say Accepted=True for the Prometheus expected to select it.
type bindingWatch struct {
	tracker
	expected func(smNamespace string) (promNs, promName string)
	accepted map[string]bool
	count    int
}

func watchBindings(ctx context.Context, c client.WithWatch, expected func(string) (string, string)) (*bindingWatch, error) {
	bw := &bindingWatch{tracker: newTracker(), expected: expected, accepted: map[string]bool{}}
	var items []runtime.Object
	var rv, cont string
	for {
		var list monitoringv1.ServiceMonitorList
		if err := c.List(ctx, &list, client.Limit(1000), client.Continue(cont)); err != nil {
			return nil, fmt.Errorf("list ServiceMonitors: %w", err)
		}
		for i := range list.Items {
			items = append(items, &list.Items[i])
		}
		rv, cont = list.ResourceVersion, list.Continue
		if cont == "" {
			break
		}
	}
	err := follow(ctx, items, rv, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return c.Watch(ctx, &monitoringv1.ServiceMonitorList{}, &client.ListOptions{Raw: &opts})
	}, &bw.tracker, bw.handle)
	return bw, err
}

func (bw *bindingWatch) handle(ev watch.Event, at time.Time) {
	sm, ok := ev.Object.(*monitoringv1.ServiceMonitor)
	if !ok {
		return
	}
	promNs, promName := bw.expected(sm.Namespace)
	accepted := false
	if ev.Type != watch.Deleted {
		for _, b := range sm.Status.Bindings {
			if b.Resource != "prometheuses" || b.Namespace != promNs || b.Name != promName {
				continue
			}
			for _, cond := range b.Conditions {
				if cond.Type == monitoringv1.Accepted && cond.Status == monitoringv1.ConditionTrue {
					accepted = true
				}
			}
		}
	}
	key := sm.Namespace + "/" + sm.Name
	bw.update(at, func() {
		if bw.accepted[key] != accepted {
			if accepted {
				bw.count++
			} else {
				bw.count--
			}
		}
		bw.accepted[key] = accepted
	})
}
