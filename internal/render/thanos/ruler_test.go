package thanos

import (
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/render/golden"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

type trOpt func(*monitoringv1.ThanosRuler)

func newThanosRuler(opts ...trOpt) *monitoringv1.ThanosRuler {
	tr := &monitoringv1.ThanosRuler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "global", UID: "7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6"},
		Spec:       monitoringv1.ThanosRulerSpec{QueryEndpoints: []string{"thanos-query.monitoring.svc:9090"}},
	}
	for _, o := range opts {
		o(tr)
	}
	return tr
}

func options() Options {
	return Options{
		RuleConfigMaps: []map[string]string{{"team-a-app-uid.yaml": "groups:\n  - name: app\n    partial_response_strategy: warn\n    rules:\n      - alert: Up\n        expr: up == 0\n"}},
		ReloaderImage:  "ghcr.io/lookout/lookout-reloader:v1.0.0",
	}
}

func secretKey(name, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func TestGolden(t *testing.T) {
	cases := []struct {
		file string
		tr   *monitoringv1.ThanosRuler
	}{
		{file: "minimal.yaml", tr: newThanosRuler()},
		{
			file: "storage-and-every-flag.yaml",
			tr: newThanosRuler(func(tr *monitoringv1.ThanosRuler) {
				s := &tr.Spec
				s.Replicas = ptr.To[int32](2)
				s.Version = ptr.To("v0.40.1")
				s.QueryEndpoints = []string{"dnssrv+_http._tcp.thanos-query.monitoring.svc", "http://query-b:9090"}
				s.AlertManagersURL = []string{"http://alertmanager-operated.monitoring.svc:9093"}
				s.ObjectStorageConfig = secretKey("thanos-objstore", "bucket.yaml")
				s.AlertRelabelConfigs = secretKey("thanos-relabel", "relabel.yaml")
				s.TracingConfigFile = "/etc/tracing/config.yaml"
				s.Labels = map[string]string{"cluster": "eu-1", "region": `with "quotes"`}
				s.AlertDropLabels = []string{"cluster", ReplicaLabel}
				s.EvaluationInterval, s.Retention = "30s", "7d"
				s.ResendDelay, s.RuleOutageTolerance, s.RuleGracePeriod, s.RuleQueryOffset = ptr.To[monitoringv1.Duration]("2m"), ptr.To[monitoringv1.Duration]("1h"), ptr.To[monitoringv1.Duration]("10m"), ptr.To[monitoringv1.Duration]("15s")
				s.RuleConcurrentEval = ptr.To[int32](4)
				s.ExternalPrefix, s.RoutePrefix, s.AlertQueryURL = "/ruler", "/ruler", "https://query.example.com"
				s.LogLevel, s.LogFormat = "debug", "json"
				s.EnableFeatures = []monitoringv1.EnableFeature{"promql-experimental-functions"}
				s.GRPCServerTLSConfig = &monitoringv1.GRPCServerTLSConfig{TLSConfig: monitoringv1.TLSConfig{
					TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/tls/ca.crt", CertFile: "/etc/tls/tls.crt", KeyFile: "/etc/tls/tls.key"},
					SafeTLSConfig:  monitoringv1.SafeTLSConfig{MinVersion: ptr.To(monitoringv1.TLSVersion12)},
				}}
				s.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
					Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("10Gi"),
					}}},
				}}
				s.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
				s.AdditionalArgs = []monitoringv1.Argument{{Name: "query.timeout", Value: "1m"}}
			}),
		},
		{
			file: "query-and-alertmanager-configs-pod-settings.yaml",
			tr: newThanosRuler(func(tr *monitoringv1.ThanosRuler) {
				s := &tr.Spec
				s.QueryEndpoints = nil
				s.QueryConfig = secretKey("thanos-query", "query.yaml")
				s.AlertManagersConfig = secretKey("thanos-alertmanagers", "alertmanagers.yaml")
				s.ObjectStorageConfigFile = ptr.To("/etc/objstore/bucket.yaml")
				s.ServiceName = ptr.To("my-ruler")
				s.ServiceAccountName = "thanos-ruler"
				s.ListenLocal = true
				s.PodMetadata = &monitoringv1.EmbeddedObjectMetadata{Labels: map[string]string{"team": "platform"}}
				s.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
				s.Volumes = []corev1.Volume{{Name: "objstore", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "objstore"}}}}
				s.VolumeMounts = []corev1.VolumeMount{{Name: "objstore", MountPath: "/etc/objstore"}}
				s.Containers = []corev1.Container{{Name: "thanos-ruler", Env: []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}}}}
				s.MinReadySeconds = ptr.To[int32](10)
			}),
		},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			objs, err := Objects(tc.tr, options())
			if err != nil {
				t.Fatal(err)
			}
			golden.Objects(t, filepath.Join("testdata", tc.file), objs)
		})
	}
}

func TestEveryThanosRulerSpecFieldIsHonouredOrRefused(t *testing.T) {
	honoured := []string{
		"Version", "PodMetadata", "Image", "ImagePullPolicy", "ImagePullSecrets", "Paused", "Replicas", "NodeSelector",
		"SchedulerName", "Resources", "Affinity", "Tolerations", "TopologySpreadConstraints", "SecurityContext",
		"DNSPolicy", "DNSConfig", "EnableServiceLinks", "PriorityClassName", "ServiceName", "ServiceAccountName",
		"Storage", "Volumes", "VolumeMounts", "ObjectStorageConfig", "ObjectStorageConfigFile", "ListenLocal",
		"PodManagementPolicy", "UpdateStrategy", "QueryEndpoints", "QueryConfig", "AlertManagersURL",
		"AlertManagersConfig", "RuleSelector", "RuleNamespaceSelector", "EnforcedNamespaceLabel",
		"ExcludedFromEnforcement", "PrometheusRulesExcludedFromEnforce", "LogLevel", "LogFormat",
		"EvaluationInterval", "ResendDelay", "RuleOutageTolerance", "RuleQueryOffset", "RuleConcurrentEval",
		"RuleGracePeriod", "Retention", "Containers", "InitContainers", "TracingConfig", "TracingConfigFile",
		"Labels", "AlertDropLabels", "ExternalPrefix", "RoutePrefix", "AlertQueryURL", "MinReadySeconds",
		"AlertRelabelConfigs", "AlertRelabelConfigFile", "HostAliases", "AdditionalArgs",
		"TerminationGracePeriodSeconds", "EnableFeatures", "HostUsers",
		// Honoured for the values that work; the others are refused below.
		"PortName", "GRPCServerTLSConfig",
	}
	refused := map[string]func(*monitoringv1.ThanosRuler){
		"spec.remoteWrite": func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.RemoteWrite = []monitoringv1.RemoteWriteSpec{{URL: "http://receiver:19291/api/v1/receive"}}
		},
		"spec.web":      func(tr *monitoringv1.ThanosRuler) { tr.Spec.Web = &monitoringv1.ThanosRulerWebSpec{} },
		"spec.portName": func(tr *monitoringv1.ThanosRuler) { tr.Spec.PortName = "http" },
		"spec.grpcServerTlsConfig.cert": func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.GRPCServerTLSConfig = &monitoringv1.GRPCServerTLSConfig{TLSConfig: monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{
				Cert: monitoringv1.SecretOrConfigMap{Secret: secretKey("tls", "tls.crt")}}}}
		},
		"spec.grpcServerTlsConfig.cipherSuites": func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.GRPCServerTLSConfig = &monitoringv1.GRPCServerTLSConfig{CipherSuites: []string{"TLS_AES_128_GCM_SHA256"}}
		},
	}
	for _, f := range workload.Unclassified(reflect.TypeFor[monitoringv1.ThanosRulerSpec](), honoured, slices.Collect(maps.Keys(refused))) {
		t.Errorf("ThanosRulerSpec.%s is neither honoured nor refused: classify it", f)
	}
	for field, set := range refused {
		if err := Validate(newThanosRuler(set)); !workload.CheckRefusal(err, field) {
			t.Errorf("%s: Validate = %v, want an UnsupportedField error naming the field", field, err)
		}
	}
}

func TestValidationNamesTheField(t *testing.T) {
	cases := []struct {
		name  string
		set   func(*monitoringv1.ThanosRuler)
		field string
	}{
		{"refuses a query endpoint with a space", func(tr *monitoringv1.ThanosRuler) { tr.Spec.QueryEndpoints = []string{"query :9090"} }, "spec.queryEndpoints[0]"},
		{"refuses a query endpoint of another scheme", func(tr *monitoringv1.ThanosRuler) { tr.Spec.QueryEndpoints = []string{"ftp://query:21"} }, "spec.queryEndpoints[0]"},
		{"refuses an Alertmanager URL without a host", func(tr *monitoringv1.ThanosRuler) { tr.Spec.AlertManagersURL = []string{"http://:9093"} }, "spec.alertmanagersUrl[0]"},
		{"refuses query endpoints and a query config together", func(tr *monitoringv1.ThanosRuler) { tr.Spec.QueryConfig = secretKey("q", "q.yaml") }, "spec.queryConfig"},
		{"refuses a ruler with nothing to query", func(tr *monitoringv1.ThanosRuler) { tr.Spec.QueryEndpoints = nil }, "spec.queryEndpoints"},
		{"refuses a rule query offset Thanos v0.37 has no flag for", func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.Version, tr.Spec.RuleQueryOffset = ptr.To("v0.37.2"), ptr.To[monitoringv1.Duration]("1m")
		}, "spec.ruleQueryOffset"},
		{"refuses concurrent evaluation on Thanos v0.36", func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.Version, tr.Spec.RuleConcurrentEval = ptr.To("v0.36.1"), ptr.To[int32](2)
		}, "spec.ruleConcurrentEval"},
		{"refuses features on Thanos v0.38", func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.Version, tr.Spec.EnableFeatures = ptr.To("v0.38.0"), []monitoringv1.EnableFeature{"promql-experimental-functions"}
		}, "spec.enableFeatures"},
		{"refuses an outage tolerance on Thanos v0.29", func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.Version, tr.Spec.RuleOutageTolerance = ptr.To("v0.29.0"), ptr.To[monitoringv1.Duration]("1h")
		}, "spec.ruleOutageTolerance"},
		{"refuses a minimum TLS version on Thanos v0.36", func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.Version = ptr.To("v0.36.1")
			tr.Spec.GRPCServerTLSConfig = &monitoringv1.GRPCServerTLSConfig{TLSConfig: monitoringv1.TLSConfig{
				TLSFilesConfig: monitoringv1.TLSFilesConfig{CertFile: "/tls.crt", KeyFile: "/tls.key"},
				SafeTLSConfig:  monitoringv1.SafeTLSConfig{MinVersion: ptr.To(monitoringv1.TLSVersion12)},
			}}
		}, "spec.grpcServerTlsConfig.minVersion"},
		{"refuses a cipher suite Go does not know", func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.Version = ptr.To("v0.42.0")
			tr.Spec.GRPCServerTLSConfig = &monitoringv1.GRPCServerTLSConfig{
				TLSConfig:    monitoringv1.TLSConfig{TLSFilesConfig: monitoringv1.TLSFilesConfig{CertFile: "/tls.crt", KeyFile: "/tls.key"}},
				CipherSuites: []string{"TLS_AES_128_GCM_SHA256", "RC4"},
			}
		}, "spec.grpcServerTlsConfig.cipherSuites[1]"},
		{"refuses a query endpoint given twice", func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.QueryEndpoints = []string{"q:9090", "r:9090", "q:9090"}
		}, "spec.queryEndpoints[2]"},
		{"refuses an object storage Secret without a key", func(tr *monitoringv1.ThanosRuler) { tr.Spec.ObjectStorageConfig = secretKey("objstore", "") }, "spec.objectStorageConfig"},
		{"refuses a retention Thanos cannot parse", func(tr *monitoringv1.ThanosRuler) { tr.Spec.Retention = "a week" }, "spec.retention"},
		{"refuses an evaluation interval Thanos cannot parse", func(tr *monitoringv1.ThanosRuler) { tr.Spec.EvaluationInterval = "often" }, "spec.evaluationInterval"},
		{"refuses the replica label among spec.labels", func(tr *monitoringv1.ThanosRuler) { tr.Spec.Labels = map[string]string{ReplicaLabel: "x"} }, "spec.labels"},
		{"refuses an invalid label name", func(tr *monitoringv1.ThanosRuler) { tr.Spec.Labels = map[string]string{"1bad": "x"} }, "spec.labels"},
		{"refuses a flag Lookout sets", func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.AdditionalArgs = []monitoringv1.Argument{{Name: "eval-interval", Value: "1m"}}
		}, "spec.additionalArgs[0].name"},
		{"refuses the file form of a flag Lookout sets inline", func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.ObjectStorageConfig = secretKey("objstore", "bucket.yaml")
			tr.Spec.AdditionalArgs = []monitoringv1.Argument{{Name: "objstore.config-file", Value: "/etc/bucket.yaml"}}
		}, "spec.additionalArgs[0].name"},
		{"refuses an unknown log level", func(tr *monitoringv1.ThanosRuler) { tr.Spec.LogLevel = "loud" }, "spec.logLevel"},
		{"refuses an invalid image", func(tr *monitoringv1.ThanosRuler) { tr.Spec.Image = "Not An Image" }, "spec.image"},
		{"refuses a TLS certificate without its key", func(tr *monitoringv1.ThanosRuler) {
			tr.Spec.GRPCServerTLSConfig = &monitoringv1.GRPCServerTLSConfig{TLSConfig: monitoringv1.TLSConfig{TLSFilesConfig: monitoringv1.TLSFilesConfig{CertFile: "/tls.crt"}}}
		}, "spec.grpcServerTlsConfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(newThanosRuler(tc.set))
			se, ok := err.(*workload.SpecError)
			if !ok || se.Field != tc.field || !strings.Contains(se.Message, tc.field) {
				t.Errorf("Validate = %v, want an error on %s", err, tc.field)
			}
		})
	}
}

// args is the thanos-ruler container's arguments as rendered for tr.
func args(t *testing.T, tr *monitoringv1.ThanosRuler) []string {
	t.Helper()
	c := rulerPod(t, tr).Spec.Containers[0]
	if c.Name != containerRuler {
		t.Fatalf("first container is %s", c.Name)
	}
	return c.Args
}

func rulerPod(t *testing.T, tr *monitoringv1.ThanosRuler) corev1.PodTemplateSpec {
	t.Helper()
	objs, err := Objects(tr, options())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if sts, ok := o.(*appsv1.StatefulSet); ok {
			return sts.Spec.Template
		}
	}
	t.Fatal("no StatefulSet")
	return corev1.PodTemplateSpec{}
}

func TestListenLocalKeepsTheWebServerOnLoopbackButNotTheStoreAPI(t *testing.T) {
	got := args(t, newThanosRuler(func(tr *monitoringv1.ThanosRuler) { tr.Spec.ListenLocal = true }))
	for _, want := range []string{"--http-address=127.0.0.1:10902", "--grpc-address=:10901"} {
		if !slices.Contains(got, want) {
			t.Errorf("args lack %s: %v", want, got)
		}
	}
}

func TestTheRulerGetsTheExistingOperatorsPodDefaults(t *testing.T) {
	pod := rulerPod(t, newThanosRuler(func(tr *monitoringv1.ThanosRuler) { tr.Spec.Version = ptr.To("v0.38.0") }))
	if got := pod.Labels["app.kubernetes.io/version"]; got != "0.38.0" {
		t.Errorf("pod label app.kubernetes.io/version = %q, want 0.38.0", got)
	}
	if got := pod.Spec.Containers[0].Resources.Requests.Memory(); got.Cmp(resource.MustParse("200Mi")) != 0 {
		t.Errorf("memory request = %v, want the default 200Mi", got)
	}
	for name, r := range map[string]corev1.ResourceRequirements{
		"a request of its own":                              {Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		"a limit alone, which Kubernetes makes the request": {Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}},
	} {
		pod := rulerPod(t, newThanosRuler(func(tr *monitoringv1.ThanosRuler) { tr.Spec.Resources = r }))
		if got := pod.Spec.Containers[0].Resources; !reflect.DeepEqual(got, r) {
			t.Errorf("with %s the resources are %v, want them as given", name, got)
		}
	}
}

func TestThanosV042GetsTheGRPCCipherSuitesAndCurves(t *testing.T) {
	got := args(t, newThanosRuler(func(tr *monitoringv1.ThanosRuler) {
		tr.Spec.Version = ptr.To("v0.42.0")
		tr.Spec.GRPCServerTLSConfig = &monitoringv1.GRPCServerTLSConfig{
			TLSConfig:    monitoringv1.TLSConfig{TLSFilesConfig: monitoringv1.TLSFilesConfig{CertFile: "/tls.crt", KeyFile: "/tls.key"}},
			CipherSuites: []string{"TLS_AES_128_GCM_SHA256"},
			Curves:       []string{"X25519MLKEM768"},
		}
	}))
	for _, want := range []string{"--grpc-server-tls-ciphers=TLS_AES_128_GCM_SHA256", "--grpc-server-tls-curves=X25519MLKEM768"} {
		if !slices.Contains(got, want) {
			t.Errorf("args lack %s: %v", want, got)
		}
	}
}
