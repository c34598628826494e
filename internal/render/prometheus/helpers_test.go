package prometheus

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// fakeConfig stands in for the gzipped prometheus.yaml: this package never reads it.
var fakeConfig = []byte("gzipped prometheus.yaml")

type promOption func(*monitoringv1.Prometheus)

// newPrometheus is monitoring/k8s with the given options applied.
func newPrometheus(opts ...promOption) *monitoringv1.Prometheus {
	p := &monitoringv1.Prometheus{
		TypeMeta: metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "k8s",
			Namespace: "monitoring",
			UID:       "8f9c6a7e-0d1b-4c3e-9a51-2b7d4e6f8a90",
		},
		// A monitor selector: Lookout writes the configuration (UnmanagedConfig).
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{},
		}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withName(ns, name string) promOption {
	return func(p *monitoringv1.Prometheus) { p.Namespace, p.Name = ns, name }
}

func withReplicas(n int32) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.Replicas = &n }
}

func withShards(n int32) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.Shards = &n }
}

func withRetention(d string) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.Retention = monitoringv1.Duration(d) }
}

func withRetentionSize(s string) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.RetentionSize = monitoringv1.ByteSize(s) }
}

func withVersion(v string) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.Version = v }
}

func withImage(img string) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.Image = &img }
}

func withServiceAccountName(n string) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.ServiceAccountName = n }
}

func withResources(requests, limits corev1.ResourceList) promOption {
	return func(p *monitoringv1.Prometheus) {
		p.Spec.Resources = corev1.ResourceRequirements{Requests: requests, Limits: limits}
	}
}

func withVolumeClaimTemplate(storageClass, size string) promOption {
	return func(p *monitoringv1.Prometheus) {
		p.Spec.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: &storageClass,
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				},
			},
		}}
	}
}

func withSecurityContext(sc *corev1.PodSecurityContext) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.SecurityContext = sc }
}

func withPodMetadata(labels, annotations map[string]string) promOption {
	return func(p *monitoringv1.Prometheus) {
		p.Spec.PodMetadata = &monitoringv1.EmbeddedObjectMetadata{Labels: labels, Annotations: annotations}
	}
}

func withSpec(f func(*monitoringv1.PrometheusSpec)) promOption {
	return func(p *monitoringv1.Prometheus) { f(&p.Spec) }
}

type optsOption func(*Options)

// newOptions discovers in the Prometheus's own namespace, like a Prometheus whose
// monitor namespace selectors are nil.
func newOptions(opts ...optsOption) Options {
	o := Options{
		ConfigGzip:          fakeConfig,
		DiscoveryNamespaces: []string{"monitoring"},
		ReloaderImage:       "lookout-reloader:v0.1.0",
	}
	for _, f := range opts {
		f(&o)
	}
	return o
}

func discoveringIn(ns ...string) optsOption {
	return func(o *Options) { o.DiscoveryNamespaces = ns }
}

func discoveringEverywhere() optsOption {
	return func(o *Options) { o.AllNamespaces = true; o.DiscoveryNamespaces = nil }
}

func discoveringNodes() optsOption {
	return func(o *Options) { o.DiscoverNodes = true }
}

func serviceAccountExists() optsOption {
	return func(o *Options) { o.ServiceAccountExists = true }
}

func mustObjects(t testingT, p *monitoringv1.Prometheus, opts Options) []workload.Object {
	t.Helper()
	objs, err := Objects(p, opts)
	if err != nil {
		t.Fatalf("Objects: %v", err)
	}
	return objs
}

// testingT is the part of *testing.T the helpers use.
type testingT interface {
	Helper()
	Fatalf(format string, args ...any)
}

// find returns the objects of a kind, in order.
func find[T workload.Object](objs []workload.Object) []T {
	var out []T
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
