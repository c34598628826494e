package prometheus

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// withThanosSidecar sets every spec.thanos field Lookout writes somewhere.
func withThanosSidecar(s *monitoringv1.PrometheusSpec) {
	s.Thanos = &monitoringv1.ThanosSpec{
		Version:             ptrTo("v0.41.0"),
		ObjectStorageConfig: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "thanos-objstore"}, Key: "bucket.yaml"},
		TracingConfigFile:   "/etc/tracing/tracing.yaml",
		GRPCListenLocal:     false,
		HTTPListenLocal:     true,
		GRPCServerTLSConfig: &monitoringv1.GRPCServerTLSConfig{TLSConfig: monitoringv1.TLSConfig{
			TLSFilesConfig: monitoringv1.TLSFilesConfig{CertFile: "/etc/tls/tls.crt", KeyFile: "/etc/tls/tls.key"},
		}},
		LogLevel: "debug", LogFormat: "json",
		MinTime:           "-7d",
		ReadyTimeout:      "5m",
		GetConfigInterval: "1m",
		Resources:         corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}},
		VolumeMounts:      []corev1.VolumeMount{{Name: "tls", MountPath: "/etc/tls"}},
		AdditionalArgs:    []monitoringv1.Argument{{Name: "shipper.upload-concurrency", Value: "4"}},
	}
}

func TestEveryThanosSpecFieldIsHonouredOrRefused(t *testing.T) {
	honoured := []string{
		"Image", "Version", "Tag", "SHA", "BaseImage", "Resources", "ObjectStorageConfig", "ObjectStorageConfigFile",
		"ListenLocal", "GRPCListenLocal", "HTTPListenLocal", "TracingConfig", "TracingConfigFile", "LogLevel",
		"LogFormat", "MinTime", "BlockDuration", "ReadyTimeout", "GetConfigInterval", "GetConfigTimeout",
		"VolumeMounts", "AdditionalArgs",
		// Honoured for the files Thanos reads; material from Secrets and ConfigMaps, and the
		// settings Thanos's server has no flag for, are refused below.
		"GRPCServerTLSConfig",
	}
	tlsRefused := map[string]func(*monitoringv1.GRPCServerTLSConfig){
		"spec.thanos.grpcServerTlsConfig.ca": func(c *monitoringv1.GRPCServerTLSConfig) {
			c.CA = monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}, Key: "ca.crt"}}
		},
		"spec.thanos.grpcServerTlsConfig.maxVersion": func(c *monitoringv1.GRPCServerTLSConfig) { c.MaxVersion = ptrTo(monitoringv1.TLSVersion13) },
		"spec.thanos.grpcServerTlsConfig.curves":     func(c *monitoringv1.GRPCServerTLSConfig) { c.Curves = []string{"X25519"} },
	}
	for _, f := range workload.Unclassified(reflect.TypeFor[monitoringv1.ThanosSpec](), honoured, slices.Collect(maps.Keys(tlsRefused))) {
		t.Errorf("ThanosSpec.%s is neither honoured nor refused: classify it", f)
	}
	for field, set := range tlsRefused {
		p := newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Thanos = &monitoringv1.ThanosSpec{GRPCServerTLSConfig: &monitoringv1.GRPCServerTLSConfig{}}
			set(s.Thanos.GRPCServerTLSConfig)
		}))
		if err := Validate(p); !workload.CheckRefusal(err, field) {
			t.Errorf("%s: Validate = %v, want an UnsupportedField error naming the field", field, err)
		}
	}
}

func TestTheThanosSidecarSetsPrometheusBlockFlagsOnlyWhenItUploads(t *testing.T) {
	cases := []struct {
		name string
		spec func(*monitoringv1.PrometheusSpec)
		want []string
	}{
		{"a sidecar without object storage leaves compaction alone", func(s *monitoringv1.PrometheusSpec) { s.Thanos = &monitoringv1.ThanosSpec{} }, nil},
		{"an uploading sidecar turns compaction off with a fixed block size", func(s *monitoringv1.PrometheusSpec) {
			s.Thanos = &monitoringv1.ThanosSpec{ObjectStorageConfigFile: ptrTo("/etc/objstore.yaml")}
		}, []string{"--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h"}},
		{"blockSize sets the size the sidecar uploads", func(s *monitoringv1.PrometheusSpec) {
			s.Thanos = &monitoringv1.ThanosSpec{ObjectStorageConfigFile: ptrTo("/etc/objstore.yaml"), BlockDuration: "1h"}
		}, []string{"--storage.tsdb.min-block-duration=1h", "--storage.tsdb.max-block-duration=1h"}},
		{"disableCompaction without a sidecar fixes the block size too", func(s *monitoringv1.PrometheusSpec) { s.DisableCompaction = true },
			[]string{"--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := thanosPrometheusArgs(newPrometheus(withSpec(tc.spec))); !slices.Equal(got, tc.want) {
				t.Errorf("args %v, want %v", got, tc.want)
			}
		})
	}
}
