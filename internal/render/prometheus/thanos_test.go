package prometheus

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	commoncfg "github.com/prometheus/common/config"
	"go.yaml.in/yaml/v2"
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

func withWebTLS(s *monitoringv1.PrometheusSpec) {
	s.Web = &monitoringv1.PrometheusWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
		Cert:      monitoringv1.SecretOrConfigMap{Secret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "prometheus-tls"}, Key: "tls.crt"}},
		KeySecret: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "prometheus-tls"}, Key: "tls.key"},
	}}}
}

// flagValue is the value of --name among args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func TestTheThanosSidecarTalksHTTPSToAPrometheusThatServesIt(t *testing.T) {
	plain := newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.Thanos = &monitoringv1.ThanosSpec{} }))
	args, _ := thanosSidecarArgs(plain)
	if url, _ := flagValue(args, "prometheus.url"); url != "http://localhost:9090/" {
		t.Errorf("without web TLS --prometheus.url = %q, want http://localhost:9090/", url)
	}
	if c, ok := flagValue(args, "prometheus.http-client"); ok {
		t.Errorf("without web TLS the sidecar gets a client configuration %q", c)
	}

	p := newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
		withWebTLS(s)
		s.Thanos = &monitoringv1.ThanosSpec{}
	}))
	if err := Validate(p); err != nil {
		t.Fatal(err)
	}
	args, _ = thanosSidecarArgs(p)
	if url, _ := flagValue(args, "prometheus.url"); url != "https://localhost:9090/" {
		t.Errorf("with web TLS --prometheus.url = %q, want https://localhost:9090/", url)
	}
	raw, ok := flagValue(args, "prometheus.http-client")
	if !ok {
		t.Fatalf("with web TLS the sidecar has no --prometheus.http-client: %v", args)
	}
	// Thanos's client configuration has the keys of Prometheus's (and becomes one): read it
	// strictly with Prometheus's own type.
	var cfg commoncfg.HTTPClientConfig
	if err := yaml.UnmarshalStrict([]byte(raw), &cfg); err != nil {
		t.Fatalf("--prometheus.http-client %q: %v", raw, err)
	}
	if err := cfg.Validate(); err != nil || !cfg.TLSConfig.InsecureSkipVerify {
		t.Errorf("--prometheus.http-client %q: %v, insecure_skip_verify %v; want a valid config that skips verification on loopback", raw, err, cfg.TLSConfig.InsecureSkipVerify)
	}

	// Thanos exits when given the client configuration both inline and as a file.
	both := newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
		withWebTLS(s)
		s.Thanos = &monitoringv1.ThanosSpec{AdditionalArgs: []monitoringv1.Argument{{Name: "prometheus.http-client-file", Value: "/etc/client.yaml"}}}
	}))
	if err := Validate(both); err == nil || !strings.Contains(err.Error(), "spec.thanos.additionalArgs[0].name") {
		t.Errorf("Validate of --prometheus.http-client-file in additionalArgs = %v, want an error naming it", err)
	}

	// Thanos before v0.24 has no flag for it, and could not reach Prometheus.
	old := newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
		withWebTLS(s)
		s.Thanos = &monitoringv1.ThanosSpec{Version: ptrTo("v0.23.2")}
	}))
	if err := Validate(old); !workload.CheckRefusal(err, "spec.web.tlsConfig") {
		t.Errorf("Validate of web TLS with Thanos v0.23.2 = %v, want an UnsupportedField error on spec.web.tlsConfig", err)
	}
}

func TestTheThanosSidecarLogsLikePrometheusUnlessToldOtherwise(t *testing.T) {
	cases := []struct {
		name          string
		thanos        monitoringv1.ThanosSpec
		level, format string
	}{
		{"falls back to Prometheus's", monitoringv1.ThanosSpec{}, "warn", "json"},
		{"keeps its own", monitoringv1.ThanosSpec{LogLevel: "debug", LogFormat: "logfmt"}, "debug", "logfmt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
				s.LogLevel, s.LogFormat = "warn", "json"
				s.Thanos = &tc.thanos
			}))
			args, _ := thanosSidecarArgs(p)
			level, _ := flagValue(args, "log.level")
			format, _ := flagValue(args, "log.format")
			if level != tc.level || format != tc.format {
				t.Errorf("--log.level=%q --log.format=%q, want %q %q", level, format, tc.level, tc.format)
			}
		})
	}
}

func TestTheThanosSidecarGetsOnlyFlagsItsVersionKnows(t *testing.T) {
	tls := func(version string, set func(*monitoringv1.GRPCServerTLSConfig)) *monitoringv1.Prometheus {
		return newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Thanos = &monitoringv1.ThanosSpec{Version: ptrTo(version), GRPCServerTLSConfig: &monitoringv1.GRPCServerTLSConfig{TLSConfig: monitoringv1.TLSConfig{
				TLSFilesConfig: monitoringv1.TLSFilesConfig{CertFile: "/etc/tls/tls.crt", KeyFile: "/etc/tls/tls.key"},
			}}}
			set(s.Thanos.GRPCServerTLSConfig)
		}))
	}
	refused := map[string]*monitoringv1.Prometheus{
		"spec.thanos.grpcServerTlsConfig.minVersion": tls("v0.36.1", func(c *monitoringv1.GRPCServerTLSConfig) {
			c.MinVersion = ptrTo(monitoringv1.TLSVersion12)
		}),
		"spec.thanos.grpcServerTlsConfig.cipherSuites": tls("v0.41.0", func(c *monitoringv1.GRPCServerTLSConfig) {
			c.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}
		}),
		"spec.thanos.getConfigInterval": newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Thanos = &monitoringv1.ThanosSpec{Version: ptrTo("v0.28.1"), GetConfigInterval: "1m"}
		})),
	}
	for field, p := range refused {
		err := Validate(p)
		if !workload.CheckRefusal(err, field) || !strings.Contains(err.Error(), "needs Thanos") {
			t.Errorf("%s: Validate = %v, want an UnsupportedField error naming the field and the Thanos version it needs", field, err)
		}
	}

	p := tls("v0.42.0", func(c *monitoringv1.GRPCServerTLSConfig) {
		c.MinVersion = ptrTo(monitoringv1.TLSVersion12)
		c.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}
		c.Curves = []string{"X25519", "CurveP256"}
	})
	if err := Validate(p); err != nil {
		t.Fatal(err)
	}
	args, _ := thanosSidecarArgs(p)
	for _, want := range []string{
		"--grpc-server-tls-min-version=1.2",
		"--grpc-server-tls-ciphers=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "--grpc-server-tls-ciphers=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		"--grpc-server-tls-curves=X25519", "--grpc-server-tls-curves=CurveP256",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("Thanos v0.42.0 sidecar args lack %s: %v", want, args)
		}
	}
	bad := tls("v0.42.0", func(c *monitoringv1.GRPCServerTLSConfig) { c.Curves = []string{"P-256"} })
	if err := Validate(bad); err == nil || !strings.Contains(err.Error(), "spec.thanos.grpcServerTlsConfig.curves[0]") {
		t.Errorf("Validate of an unknown curve = %v, want an error naming curves[0]", err)
	}
}
