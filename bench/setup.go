package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newServiceMonitor(ns, name string) *monitoringv1.ServiceMonitor {
	return &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics"}},
		},
	}
}

func newPrometheus(key string, allNamespaces bool) *monitoringv1.Prometheus {
	ns, name, _ := strings.Cut(key, "/")
	p := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{},
		}},
	}
	if allNamespaces {
		p.Spec.ServiceMonitorNamespaceSelector = &metav1.LabelSelector{}
	}
	return p
}

// setup creates the namespaces, then the Prometheus objects, monitors and
// noise from many goroutines. It returns how many objects it created.
func setup(ctx context.Context, c client.Client, sc scenario, workers int) (int, error) {
	nsSet := map[string]bool{}
	for _, ns := range sc.Namespaces {
		nsSet[ns] = true
	}
	for _, p := range sc.Prometheuses {
		ns, _, _ := strings.Cut(p, "/")
		nsSet[ns] = true
	}
	namespaces := make([]string, 0, len(nsSet))
	for ns := range nsSet {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	var total int
	n, err := createMany(ctx, c, len(namespaces), workers, func(i int) client.Object {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}
	})
	total += n
	if err != nil {
		return total, err
	}
	nns := len(sc.Namespaces)
	builders := []struct {
		n     int
		build func(i int) client.Object
	}{
		{len(sc.Prometheuses), func(i int) client.Object { return newPrometheus(sc.Prometheuses[i], sc.allNamespaces) }},
		{nns * sc.MonitorsPerNamespace, func(i int) client.Object {
			return newServiceMonitor(sc.Namespaces[i%nns], fmt.Sprintf("sm-%03d", i/nns))
		}},
		{sc.Secrets, func(i int) client.Object {
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: sc.Namespaces[i%nns], Name: fmt.Sprintf("noise-%05d", i)},
				Data:       map[string][]byte{"password": []byte(fmt.Sprintf("secret-%d", i))},
			}
			if sc.Secrets > 0 && i%(sc.Secrets/max(sc.BigSecrets, 1)) == 0 && sc.BigSecrets > 0 {
				// Like a Helm release Secret: ~1 MiB of incompressible data.
				release := make([]byte, 1000*1000)
				_, _ = rand.Read(release)
				s.Name = fmt.Sprintf("sh.helm.release.v1.noise-%05d.v1", i)
				s.Type = "helm.sh/release.v1"
				s.Labels = map[string]string{"owner": "helm", "name": fmt.Sprintf("noise-%05d", i)}
				s.Data = map[string][]byte{"release": release}
			}
			return s
		}},
		{sc.ConfigMaps, func(i int) client.Object {
			return &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: sc.Namespaces[i%nns], Name: fmt.Sprintf("noise-%05d", i)},
				Data:       map[string]string{"app.properties": strings.Repeat(fmt.Sprintf("key%d=value\n", i), 20)},
			}
		}},
	}
	for _, b := range builders {
		n, err := createMany(ctx, c, b.n, workers, b.build)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// createMany creates build(0..n-1) from workers goroutines, retrying
// transient errors of an overloaded apiserver.
func createMany(ctx context.Context, c client.Client, n, workers int, build func(i int) client.Object) (int, error) {
	var (
		next    atomic.Int64
		created atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				obj := build(i)
				var err error
				for attempt := 0; attempt < 10; attempt++ {
					err = c.Create(ctx, obj)
					if err == nil || apierrors.IsAlreadyExists(err) {
						err = nil
						break
					}
					if !transient(err) {
						break
					}
					obj.SetResourceVersion("")
					time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("create %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
					}
					mu.Unlock()
					next.Store(int64(n))
					return
				}
				created.Add(1)
			}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return int(created.Load()), first
}

func transient(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || errors.Is(err, context.DeadlineExceeded)
}
