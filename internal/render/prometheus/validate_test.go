package prometheus

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

func TestValidateRejects(t *testing.T) {
	cases := []struct {
		name   string
		p      *monitoringv1.Prometheus
		field  string
		reason string
		// message must contain all of these.
		message []string
	}{
		{"rejects negative replicas", newPrometheus(withReplicas(-1)), "spec.replicas", ReasonInvalidSpec, []string{"must not be negative", "-1"}},
		{"rejects negative shards", newPrometheus(withShards(-2)), "spec.shards", ReasonInvalidSpec, []string{"must not be negative", "-2"}},
		{"rejects a retention in an unknown unit", newPrometheus(withRetention("10x")), "spec.retention", ReasonInvalidSpec, []string{`"10x"`, "y, w, d, h, m, s, ms", "15d"}},
		{"rejects a retention with units out of order", newPrometheus(withRetention("1h1d")), "spec.retention", ReasonInvalidSpec, []string{`"1h1d"`}},
		{"rejects a retention with a sign", newPrometheus(withRetention("-1d")), "spec.retention", ReasonInvalidSpec, []string{`"-1d"`}},
		{"rejects a retention longer than Prometheus can hold", newPrometheus(withRetention("300y")), "spec.retention", ReasonInvalidSpec, []string{"292 years"}},
		{"rejects a retention size without unit", newPrometheus(withRetentionSize("50")), "spec.retentionSize", ReasonInvalidSpec, []string{`"50"`, "50GB"}},
		{"rejects a retention size in bits", newPrometheus(withRetentionSize("50Gb")), "spec.retentionSize", ReasonInvalidSpec, []string{`"50Gb"`}},
		{
			"rejects a negative resource request",
			newPrometheus(withResources(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Gi")}, nil)),
			"spec.resources.requests.memory", ReasonInvalidSpec, []string{"must not be negative", "-1Gi"},
		},
		{
			"rejects a request above its limit",
			newPrometheus(withResources(
				corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
				corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")})),
			"spec.resources.requests.memory", ReasonInvalidSpec, []string{"4Gi", "more than the limit 2Gi"},
		},
		{
			"rejects a volume claim template without a storage request",
			newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
				s.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptrTo("fast")},
				}}
			})),
			"spec.storage.volumeClaimTemplate.spec.resources.requests.storage", ReasonInvalidSpec, []string{"is required"},
		},
		{"rejects a zero storage request", newPrometheus(withVolumeClaimTemplate("fast", "0")), "spec.storage.volumeClaimTemplate.spec.resources.requests.storage", ReasonInvalidSpec, []string{"must be positive"}},
		{"rejects an image with upper-case repository", newPrometheus(withImage("quay.io/Prometheus/prometheus:v3.0.0")), "spec.image", ReasonInvalidSpec, []string{"not a valid image reference"}},
		{"rejects an image with spaces", newPrometheus(withImage("prometheus: v3")), "spec.image", ReasonInvalidSpec, []string{"not a valid image reference"}},
		{"rejects an image with an empty tag", newPrometheus(withImage("prometheus:")), "spec.image", ReasonInvalidSpec, []string{"not a valid image reference"}},
		{"rejects a version that is not semantic", newPrometheus(withVersion("latest")), "spec.version", ReasonInvalidSpec, []string{`"latest"`, "semantic version"}},
		{"rejects a base image that makes an invalid reference", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.BaseImage = "Registry/Prom" })), "spec.baseImage", ReasonInvalidSpec, []string{"not a valid image reference"}},
		{"rejects an alert resend delay that is not a duration", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.Rules.Alert.ResendDelay = "1 minute" })), "spec.rules.alert.resendDelay", ReasonInvalidSpec, []string{`"1 minute"`}},
		{"rejects the alert grace period also given as an additional argument", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Rules.Alert.ForGracePeriod = "5m"
			s.AdditionalArgs = []monitoringv1.Argument{{Name: "rules.alert.for-grace-period", Value: "1m"}}
		})), "spec.additionalArgs[0].name", ReasonInvalidSpec, []string{"--rules.alert.for-grace-period is set by Lookout"}},
		{"rejects a name too long for the StatefulSet", newPrometheus(withName("monitoring", strings.Repeat("a", 42))), "metadata.name", ReasonInvalidSpec, []string{"more than the 52"}},
		{"rejects a name too long once the shard suffix is added", newPrometheus(withName("monitoring", strings.Repeat("a", 35)), withShards(2)), "metadata.name", ReasonInvalidSpec, []string{"-shard-1"}},
		{"rejects a name with dots, which Services cannot have", newPrometheus(withName("monitoring", "a.b")), "metadata.name", ReasonInvalidSpec, []string{`"a.b"`}},
		{"rejects an invalid pod label value", newPrometheus(withPodMetadata(map[string]string{"team": "a b"}, nil)), "spec.podMetadata.labels.team", ReasonInvalidSpec, []string{`"a b"`}},
		{"rejects an unknown log level", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.LogLevel = "verbose" })), "spec.logLevel", ReasonInvalidSpec, []string{"debug, info, warn, error"}},
		{
			"rejects an additional argument Lookout already sets",
			newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
				s.AdditionalArgs = []monitoringv1.Argument{{Name: "storage.tsdb.retention.time", Value: "1d"}}
			})),
			"spec.additionalArgs[0].name", ReasonInvalidSpec, []string{"set by Lookout"},
		},
		{
			"rejects the negated form of an argument Lookout already sets",
			newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
				s.AdditionalArgs = []monitoringv1.Argument{{Name: "no-web.enable-lifecycle"}}
			})),
			"spec.additionalArgs[0].name", ReasonInvalidSpec, []string{"set by Lookout"},
		},
		{"rejects a startup duration under a minute", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.MaximumStartupDurationSeconds = ptrTo(int32(30)) })), "spec.maximumStartupDurationSeconds", ReasonInvalidSpec, []string{"at least 60"}},
		{"rejects a container patch without a name", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.Containers = []corev1.Container{{Image: "x"}} })), "spec.containers[0].name", ReasonInvalidSpec, []string{"is required"}},
		{"rejects an init container patch without a name", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.InitContainers = []corev1.Container{{Image: "x"}} })), "spec.initContainers[0].name", ReasonInvalidSpec, []string{"is required"}},
		{"rejects a volume that takes a generated volume's name", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Volumes = []corev1.Volume{{Name: "config-out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		})), "spec.volumes[0].name", ReasonInvalidSpec, []string{`"config-out"`, "Lookout generates"}},
		{"rejects a volume mount naming no volume", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/data"}}
		})), "spec.volumeMounts[0].name", ReasonInvalidSpec, []string{`"missing"`, "spec.volumes"}},
		{"rejects a query log file on the read-only root filesystem", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.QueryLogFile = "/var/log/query.log" })),
			"spec.queryLogFile", ReasonInvalidSpec, []string{"read-only root filesystem", "spec.volumeMounts"}},
		{"rejects a scrape failure log file path that is not clean", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.ScrapeFailureLogFile = ptrTo("logs/../x.log") })),
			"spec.scrapeFailureLogFile", ReasonInvalidSpec, []string{"absolute, clean"}},
		{"reports the Thanos sidecar's TLS material from a Secret as unsupported", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Thanos = &monitoringv1.ThanosSpec{GRPCServerTLSConfig: &monitoringv1.GRPCServerTLSConfig{TLSConfig: monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{
				KeySecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}, Key: "tls.key"}}}}}
		})), "spec.thanos.grpcServerTlsConfig.keySecret", ReasonUnsupportedField, []string{"Secrets"}},
		{"refuses a Thanos sidecar minTime that is neither a time nor a duration", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Thanos = &monitoringv1.ThanosSpec{MinTime: "yesterday"}
		})), "spec.thanos.minTime", ReasonInvalidSpec, []string{"RFC3339"}},
		{
			"rejects web TLS without a key",
			newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
				s.Web = &monitoringv1.PrometheusWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{CertFile: ptrTo("/c.crt")}}}
			})),
			"spec.web.tlsConfig", ReasonInvalidSpec, []string{"private key"},
		},
		{"rejects a receiver message version Prometheus does not know", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.RemoteWriteReceiverMessageVersions = []monitoringv1.RemoteWriteMessageVersion{"V3.0"}
		})), "spec.remoteWriteReceiverMessageVersions[0]", ReasonInvalidSpec, []string{`"V3.0"`}},
		{
			"reports the OTLP receiver before Prometheus v2.47 as unsupported",
			newPrometheus(withVersion("v2.46.0"), withSpec(func(s *monitoringv1.PrometheusSpec) { s.EnableOTLPReceiver = ptrTo(true) })),
			"spec.enableOTLPReceiver", ReasonUnsupportedField, []string{"v2.47"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.p)
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Validate = %v, want a *SpecError", err)
			}
			if se.Field != tc.field || se.Reason != tc.reason {
				t.Errorf("field %q reason %q, want %q %q (message %q)", se.Field, se.Reason, tc.field, tc.reason, se.Message)
			}
			if !strings.HasPrefix(se.Message, tc.field) {
				t.Errorf("message %q does not name the field %s", se.Message, tc.field)
			}
			for _, m := range tc.message {
				if !strings.Contains(se.Message, m) {
					t.Errorf("message %q lacks %q", se.Message, m)
				}
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	cases := []struct {
		name string
		p    *monitoringv1.Prometheus
	}{
		{"accepts an empty spec", newPrometheus()},
		{"accepts zero replicas (scaled down)", newPrometheus(withReplicas(0))},
		{"accepts zero shards as one", newPrometheus(withShards(0))},
		{"accepts a compound retention", newPrometheus(withRetention("1y2w3d4h5m6s7ms"))},
		{"accepts a zero retention", newPrometheus(withRetention("0"))},
		{"accepts fractional retention sizes in binary units", newPrometheus(withRetentionSize("1.5TiB"))},
		{"accepts an image with registry port and digest", newPrometheus(withImage("registry.local:5000/mirror/prometheus:v3.15.0@sha256:" + strings.Repeat("ab", 32)))},
		{"accepts a short version", newPrometheus(withVersion("3.5"))},
		{"accepts a name at the length limit", newPrometheus(withName("monitoring", strings.Repeat("a", 41)))},
		{"accepts requests equal to limits", newPrometheus(withResources(
			corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2048Mi")}))},
		{"accepts the OTLP receiver on Prometheus v3", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.EnableOTLPReceiver = ptrTo(true) }))},
		{"accepts the alert timing of spec.rules.alert", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Rules.Alert = monitoringv1.RulesAlert{ForOutageTolerance: "2h", ForGracePeriod: "15m", ResendDelay: "2m"}
		}))},
		{"accepts an unrelated additional argument", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.AdditionalArgs = []monitoringv1.Argument{{Name: "storage.tsdb.no-lockfile"}}
		}))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Validate(tc.p); err != nil {
				t.Errorf("Validate = %v", err)
			}
		})
	}
}

func TestImage(t *testing.T) {
	cases := []struct {
		name string
		p    *monitoringv1.Prometheus
		want string
	}{
		{"defaults to the pinned upstream release", newPrometheus(), "quay.io/prometheus/prometheus:v3.15.0"},
		{"tags the default image with spec.version", newPrometheus(withVersion("v2.55.1")), "quay.io/prometheus/prometheus:v2.55.1"},
		{"completes a short version into a release tag", newPrometheus(withVersion("3.5")), "quay.io/prometheus/prometheus:v3.5.0"},
		{"prefers spec.image over the version", newPrometheus(withVersion("v2.55.1"), withImage("mirror/prometheus:custom")), "mirror/prometheus:custom"},
		{"builds baseImage:tag", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.BaseImage, s.Tag = "mirror/prometheus", "v3.1.0" })), "mirror/prometheus:v3.1.0"},
		{"prefers spec.sha over spec.tag", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.Tag, s.SHA = "v3.1.0", strings.Repeat("0", 64) })), "quay.io/prometheus/prometheus@sha256:" + strings.Repeat("0", 64)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := only(t, find[*appsv1.StatefulSet](mustObjects(t, tc.p, newOptions()))).Spec.Template.Spec
			if got := container(t, pod.Containers, "prometheus").Image; got != tc.want {
				t.Errorf("image %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFlagsFromTheSpec(t *testing.T) {
	cases := []struct {
		name string
		p    *monitoringv1.Prometheus
		want []string
		not  []string
	}{
		{"keeps 24 hours by default", newPrometheus(), []string{"--storage.tsdb.retention.time=24h"}, []string{"--storage.tsdb.retention.size"}},
		{"passes spec.retention", newPrometheus(withRetention("15d")), []string{"--storage.tsdb.retention.time=15d"}, nil},
		{"limits by size alone when only a size is given", newPrometheus(withRetentionSize("10GB")), []string{"--storage.tsdb.retention.size=10GB"}, []string{"--storage.tsdb.retention.time"}},
		{"passes both limits", newPrometheus(withRetention("30d"), withRetentionSize("10GB")), []string{"--storage.tsdb.retention.time=30d", "--storage.tsdb.retention.size=10GB"}, nil},
		{"passes the alert timing of spec.rules.alert", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Rules.Alert = monitoringv1.RulesAlert{ForOutageTolerance: "2h", ForGracePeriod: "15m", ResendDelay: "2m"}
		})), []string{"--rules.alert.for-outage-tolerance=2h --rules.alert.for-grace-period=15m --rules.alert.resend-delay=2m"}, nil},
		{"passes only the alert timing that is set", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.Rules.Alert.ResendDelay = "30s" })),
			[]string{"--rules.alert.resend-delay=30s"}, []string{"--rules.alert.for-"}},
		{"leaves Prometheus's alert timing by default", newPrometheus(), nil, []string{"--rules.alert."}},
		{"writes metadata to the WAL for Remote Write 2.0 before v3.4, next to the features asked for", newPrometheus(withVersion("v3.3.0"), withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.EnableFeatures = []monitoringv1.EnableFeature{"exemplar-storage"}
			s.RemoteWrite = []monitoringv1.RemoteWriteSpec{{URL: "https://a.example.com"}, {URL: "https://b.example.com", MessageVersion: ptrTo(monitoringv1.RemoteWriteMessageVersion2_0)}}
		})), []string{"--enable-feature=exemplar-storage,metadata-wal-records"}, nil},
		{"leaves the WAL alone for Remote Write 1.0", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.RemoteWrite = []monitoringv1.RemoteWriteSpec{{URL: "https://a.example.com", MessageVersion: ptrTo(monitoringv1.RemoteWriteMessageVersion1_0)}}
		})), nil, []string{"--enable-feature"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := only(t, find[*appsv1.StatefulSet](mustObjects(t, tc.p, newOptions()))).Spec.Template.Spec
			args := strings.Join(container(t, pod.Containers, "prometheus").Args, " ")
			for _, w := range tc.want {
				if !strings.Contains(args, w) {
					t.Errorf("args %s lack %s", args, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(args, n) {
					t.Errorf("args %s contain %s", args, n)
				}
			}
		})
	}
}

func TestVolumeNames(t *testing.T) {
	cases := []struct {
		name, prefix, in string
		want             *regexp.Regexp
	}{
		{"keeps a valid name", "secret", "etcd-tls", regexp.MustCompile(`^secret-etcd-tls$`)},
		{"replaces dots and adds a hash of the original", "configmap", "a.b", regexp.MustCompile(`^configmap-a-b-[0-9a-f]{8}$`)},
		{"shortens long names to 63 characters", "secret", strings.Repeat("x", 250), regexp.MustCompile(`^secret-x{47}-[0-9a-f]{8}$`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := workload.VolumeName(tc.prefix, tc.in); !tc.want.MatchString(got) {
				t.Errorf("VolumeName = %q, want %v", got, tc.want)
			}
		})
	}
	t.Run("keeps distinct names distinct", func(t *testing.T) {
		if a, b := workload.VolumeName("secret", "a.b"), workload.VolumeName("secret", "a-b"); a == b {
			t.Errorf("a.b and a-b both map to %q", a)
		}
	})
}
