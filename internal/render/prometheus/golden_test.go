package prometheus

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// marshalObjects renders objects as one multi-document YAML stream, the form
// `lookout render` prints.
func marshalObjects(t *testing.T, objs []workload.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		out, err := yaml.Marshal(o)
		if err != nil {
			t.Fatalf("marshal %T %s: %v", o, o.GetName(), err)
		}
		buf.Write(out)
	}
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	cases := []struct {
		file string
		p    *monitoringv1.Prometheus
		opts Options
	}{
		{
			file: "minimal.yaml",
			p:    newPrometheus(),
			opts: newOptions(),
		},
		{
			file: "replicas-retention-storage-resources.yaml",
			p: newPrometheus(
				withReplicas(3),
				withRetention("15d"),
				withRetentionSize("45GiB"),
				withVolumeClaimTemplate("fast", "50Gi"),
				withResources(
					corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
					corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
				),
			),
			opts: newOptions(),
		},
		{
			file: "shards.yaml",
			p:    newPrometheus(withShards(2), withReplicas(2)),
			opts: newOptions(),
		},
		{
			file: "existing-service-account.yaml",
			p:    newPrometheus(withServiceAccountName("prometheus-k8s")),
			opts: newOptions(serviceAccountExists()),
		},
		{
			file: "all-namespaces.yaml",
			p:    newPrometheus(),
			opts: newOptions(discoveringEverywhere(), discoveringNodes()),
		},
		{
			file: "other-discovery-namespaces.yaml",
			p:    newPrometheus(),
			opts: newOptions(discoveringIn("team-b", "monitoring", "team-a")),
		},
		{
			file: "pod-settings.yaml",
			p: newPrometheus(
				withVersion("v3.5.0"),
				withPodMetadata(map[string]string{"team": "platform", "prometheus": "not-overridden"}, map[string]string{"example.com/owner": "platform"}),
				withSpec(func(s *monitoringv1.PrometheusSpec) {
					s.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
					s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "monitoring", Effect: corev1.TaintEffectNoSchedule}}
					s.PriorityClassName = "system-cluster-critical"
					s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
					s.Secrets = []string{"etcd-client-tls"}
					s.ConfigMaps = []string{"extra.files"}
					s.ExternalURL = "https://prometheus.example.com"
					s.RoutePrefix = "/prom"
					s.EnableFeatures = []monitoringv1.EnableFeature{"exemplar-storage"}
					s.Web = &monitoringv1.PrometheusWebSpec{PageTitle: ptrTo("Platform")}
					s.Web.HTTPConfig = &monitoringv1.WebHTTPConfig{Headers: &monitoringv1.WebHTTPHeaders{XFrameOptions: "Deny"}}
				}),
			),
			opts: newOptions(),
		},
		{
			file: "pod-patches-volumes-host-network.yaml",
			p: newPrometheus(
				withVersion("v3.5.0"),
				withSpec(func(s *monitoringv1.PrometheusSpec) {
					s.PodMetadata = &monitoringv1.EmbeddedObjectMetadata{Name: "prometheus-pod"}
					s.HostNetwork = true
					s.ListenLocal = true
					s.QueryLogFile = "query.log"
					s.AllowOverlappingBlocks = true // v3 always allows them: no flag
					s.TSDB = &monitoringv1.TSDBSpec{ChunkEncoding: &monitoringv1.ChunkEncodingSpec{Floats: ptrTo(monitoringv1.ChunkEncodingFloatsXor2)}}
					s.Containers = []corev1.Container{
						{Name: "prometheus", Env: []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "3GiB"}},
							VolumeMounts: []corev1.VolumeMount{{Name: "extra", MountPath: "/etc/extra"}}},
						{Name: "oauth-proxy", Image: "example.com/oauth-proxy:v7", Args: []string{"--upstream=http://127.0.0.1:9090"}},
					}
					s.InitContainers = []corev1.Container{{Name: "init-chown", Image: "busybox:1.36", Command: []string{"true"}}}
					s.Volumes = []corev1.Volume{
						{Name: "extra", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}}},
						{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					}
					s.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
				}),
			),
			opts: newOptions(),
		},
		{
			file: "web-tls.yaml",
			p: newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
				s.Web = &monitoringv1.PrometheusWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{
					TLSConfig: &monitoringv1.WebTLSConfig{
						Cert:           monitoringv1.SecretOrConfigMap{Secret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "prometheus-tls"}, Key: "tls.crt"}},
						KeySecret:      corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "prometheus-tls"}, Key: "tls.key"},
						ClientCA:       monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "clients"}, Key: "ca.crt"}},
						ClientAuthType: ptrTo("VerifyClientCertIfGiven"),
						MinVersion:     ptrTo("TLS12"),
					},
					HTTPConfig: &monitoringv1.WebHTTPConfig{HTTP2: ptrTo(true)},
				}}
			})),
			opts: newOptions(),
		},
		{file: "thanos-sidecar.yaml", p: newPrometheus(withSpec(withThanosSidecar)), opts: newOptions()},
		{
			// No lifecycle API: the reloader signals Prometheus in the pod's shared process
			// namespace, with a route prefix in the URL it confirms the reload from.
			file: "process-signal.yaml",
			p: newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
				s.ReloadStrategy = ptrTo(monitoringv1.ProcessSignalReloadStrategyType)
				s.RoutePrefix = "/prom"
			})),
			opts: newOptions(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			got := marshalObjects(t, mustObjects(t, tc.p, tc.opts))
			path := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("objects differ from %s (run with -update to accept):\n%s", path, lineDiff(string(want), string(got)))
			}
		})
	}
}

// lineDiff shows the first differing lines; enough to see what changed.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var buf strings.Builder
	shown := 0
	for i := 0; (i < len(w) || i < len(g)) && shown < 10; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&buf, "line %d:\n- %s\n+ %s\n", i+1, wl, gl)
			shown++
		}
	}
	return buf.String()
}
