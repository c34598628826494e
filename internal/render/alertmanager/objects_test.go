package alertmanager

import (
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/render/golden"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

type amOpt func(*monitoringv1.Alertmanager)

func newAlertmanager(opts ...amOpt) *monitoringv1.Alertmanager {
	am := &monitoringv1.Alertmanager{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main", UID: "3c1d6b0e-5f2a-4e8b-9d7c-1a2b3c4d5e6f"},
	}
	for _, o := range opts {
		o(am)
	}
	return am
}

func options() Options {
	return Options{ConfigGzip: []byte("gzipped-config"), ReloaderImage: "ghcr.io/lookout/lookout-reloader:v1.0.0"}
}

func TestGolden(t *testing.T) {
	cases := []struct {
		file string
		am   *monitoringv1.Alertmanager
		opts Options
	}{
		{file: "minimal.yaml", am: newAlertmanager(), opts: options()},
		{
			file: "cluster-storage-resources.yaml",
			am: newAlertmanager(func(am *monitoringv1.Alertmanager) {
				am.Spec.Replicas = ptr.To[int32](3)
				am.Spec.Retention = "240h"
				am.Spec.ExternalURL = "https://alerts.example.com"
				am.Spec.RoutePrefix = "/am"
				am.Spec.LogLevel, am.Spec.LogFormat = "debug", "json"
				am.Spec.ClusterGossipInterval, am.Spec.ClusterPushpullInterval, am.Spec.ClusterPeerTimeout = "400ms", "2m", "30s"
				am.Spec.ClusterAdvertiseAddress = "10.0.0.1:9094"
				am.Spec.AdditionalPeers = []string{"other-am.example:9094"}
				am.Spec.Storage = &monitoringv1.StorageSpec{VolumeClaimTemplate: monitoringv1.EmbeddedPersistentVolumeClaim{
					Spec: corev1.PersistentVolumeClaimSpec{
						StorageClassName: ptr.To("fast"),
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceStorage: resource.MustParse("5Gi"),
						}},
					},
				}}
				am.Spec.Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("200Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("400Mi")},
				}
				am.Spec.Limits = &monitoringv1.AlertmanagerLimitsSpec{MaxSilences: ptr.To[int32](1000), MaxPerSilenceBytes: ptr.To[monitoringv1.ByteSize]("5KiB")}
				am.Spec.Web = &monitoringv1.AlertmanagerWebSpec{GetConcurrency: ptr.To[uint32](16), Timeout: ptr.To[uint32](30),
					WebConfigFileFields: monitoringv1.WebConfigFileFields{HTTPConfig: &monitoringv1.WebHTTPConfig{HTTP2: ptr.To(false)}}}
				am.Spec.EnableFeatures = []string{"receiver-name-in-metrics"}
				am.Spec.AdditionalArgs = []monitoringv1.Argument{{Name: "data.maintenance-interval", Value: "10m"}}
			}),
			opts: options(),
		},
		{
			file: "pod-settings-and-patches.yaml",
			am: newAlertmanager(func(am *monitoringv1.Alertmanager) {
				am.Spec.ServiceAccountName = "alertmanager-main"
				am.Spec.PodMetadata = &monitoringv1.EmbeddedObjectMetadata{Labels: map[string]string{"team": "platform"}, Annotations: map[string]string{"note": "x"}}
				am.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
				am.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "monitoring", Effect: corev1.TaintEffectNoSchedule}}
				am.Spec.PriorityClassName = "system-cluster-critical"
				am.Spec.Secrets = []string{"smtp-tls"}
				am.Spec.ConfigMaps = []string{"templates"}
				am.Spec.Volumes = []corev1.Volume{{Name: "extra", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
				am.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "extra", MountPath: "/extra"}}
				am.Spec.MinReadySeconds = ptr.To[int32](10)
				am.Spec.ListenLocal = true
				// A patch of the generated container and an extra sidecar.
				am.Spec.Containers = []corev1.Container{
					{Name: "alertmanager", Env: []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}}},
					{Name: "oauth-proxy", Image: "quay.io/oauth2-proxy/oauth2-proxy:v7.6.0", Args: []string{"--upstream=http://127.0.0.1:9093"}},
				}
			}),
			opts: func() Options {
				o := options()
				o.Files = map[string][]byte{"custom.tmpl": []byte(`{{ define "x" }}x{{ end }}`)}
				return o
			}(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			objs, err := Objects(tc.am, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden.Objects(t, filepath.Join("testdata", tc.file), objs)
		})
	}
}

func TestASingleReplicaDoesNotGossipAndTwoReplicasPeerThroughTheGoverningService(t *testing.T) {
	args := generatedArgs(newAlertmanager())
	if !slices.Contains(args, "--cluster.listen-address=") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--cluster.peer=") }) {
		t.Errorf("one replica: want gossip off and no peers, got %v", args)
	}
	args = generatedArgs(newAlertmanager(func(am *monitoringv1.Alertmanager) { am.Spec.Replicas = ptr.To[int32](2) }))
	for _, want := range []string{
		"--cluster.listen-address=[$(POD_IP)]:9094",
		"--cluster.peer=alertmanager-main-0.alertmanager-operated:9094",
		"--cluster.peer=alertmanager-main-1.alertmanager-operated:9094",
		"--cluster.label=monitoring/main",
		"--cluster.peer-name=$(POD_NAME)",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("two replicas: args lack %s: %v", want, args)
		}
	}
}

func TestTheUsersContainerPatchesMergeIntoTheGeneratedOnes(t *testing.T) {
	am := newAlertmanager(func(am *monitoringv1.Alertmanager) {
		am.Spec.Containers = []corev1.Container{{Name: "alertmanager", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
		am.Spec.InitContainers = []corev1.Container{{Name: "init-config-reloader", Env: []corev1.EnvVar{{Name: "X", Value: "y"}}}}
	})
	spec, err := podSpec(am, options())
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Containers[0]
	if c.Name != "alertmanager" || c.Image == "" || len(c.Args) == 0 || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("patched container lost generated fields or the patch: %+v", c)
	}
	init := spec.InitContainers[0]
	names := []string{}
	for _, e := range init.Env {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"POD_NAME", "POD_NAMESPACE", "X"}) || len(init.Args) == 0 {
		t.Errorf("patched init container: env %v args %v", init.Env, init.Args)
	}
}

// Every field of AlertmanagerSpec is either honoured or refused by name: a field added
// to the API must be classified here, so none can be silently ignored.
func TestEveryAlertmanagerSpecFieldIsHonouredOrRefused(t *testing.T) {
	honoured := []string{
		"PodMetadata", "Image", "ImagePullPolicy", "Version", "Tag", "SHA", "BaseImage", "ImagePullSecrets",
		"Secrets", "ConfigMaps", "ConfigSecret", "LogLevel", "LogFormat", "Replicas", "Retention", "Storage",
		"Volumes", "VolumeMounts", "PersistentVolumeClaimRetentionPolicy", "ExternalURL", "RoutePrefix", "Paused",
		"NodeSelector", "SchedulerName", "Resources", "Affinity", "Tolerations", "TopologySpreadConstraints",
		"SecurityContext", "DNSPolicy", "DNSConfig", "EnableServiceLinks", "ServiceName", "ServiceAccountName",
		"ListenLocal", "PodManagementPolicy", "UpdateStrategy", "Containers", "InitContainers", "PriorityClassName",
		"AdditionalPeers", "ClusterAdvertiseAddress", "ClusterGossipInterval", "ClusterLabel", "ClusterPushpullInterval",
		"ClusterPeerTimeout", "ClusterPeerName", "ForceEnableClusterMode", "AlertmanagerConfigSelector",
		"AlertmanagerConfigNamespaceSelector", "AlertmanagerConfigMatcherStrategy", "MinReadySeconds", "HostAliases",
		"HostNetwork", "Limits", "AlertmanagerConfiguration", "EnableFeatures", "AdditionalArgs",
		"TerminationGracePeriodSeconds", "HostUsers",
		"Web", "PortName", "AutomountServiceAccountToken", "ClusterTLS",
	}
	refused := map[string]func(*monitoringv1.Alertmanager){}
	for _, f := range workload.Unclassified(reflect.TypeFor[monitoringv1.AlertmanagerSpec](), honoured, slices.Collect(maps.Keys(refused))) {
		t.Errorf("AlertmanagerSpec.%s is neither honoured nor refused: classify it", f)
	}
	for field, set := range refused {
		if err := Validate(newAlertmanager(set)); !workload.CheckRefusal(err, field) {
			t.Errorf("%s: Validate = %v, want an UnsupportedField error naming the field", field, err)
		}
	}
}

func TestValidationNamesTheField(t *testing.T) {
	cases := []struct {
		name  string
		set   func(*monitoringv1.Alertmanager)
		field string
	}{
		{"refuses negative replicas", func(am *monitoringv1.Alertmanager) { am.Spec.Replicas = ptr.To[int32](-1) }, "spec.replicas"},
		{"refuses a retention Alertmanager cannot parse", func(am *monitoringv1.Alertmanager) { am.Spec.Retention = "5 days" }, "spec.retention"},
		{"refuses a bad gossip interval", func(am *monitoringv1.Alertmanager) { am.Spec.ClusterGossipInterval = "soon" }, "spec.clusterGossipInterval"},
		{"refuses an invalid image", func(am *monitoringv1.Alertmanager) { am.Spec.Image = ptr.To("Not An Image") }, "spec.image"},
		{"refuses an unknown matcher strategy", func(am *monitoringv1.Alertmanager) {
			am.Spec.AlertmanagerConfigMatcherStrategy.Type = "Sometimes"
		}, "spec.alertmanagerConfigMatcherStrategy.type"},
		{"refuses a flag Lookout sets", func(am *monitoringv1.Alertmanager) {
			am.Spec.AdditionalArgs = []monitoringv1.Argument{{Name: "storage.path", Value: "/tmp"}}
		}, "spec.additionalArgs[0].name"},
		{"refuses a relative external URL", func(am *monitoringv1.Alertmanager) { am.Spec.ExternalURL = "alerts.example.com" }, "spec.externalUrl"},
		{"refuses a container patch without a name", func(am *monitoringv1.Alertmanager) {
			am.Spec.Containers = []corev1.Container{{Image: "x"}}
		}, "spec.containers[0].name"},
		{"refuses an unknown log level", func(am *monitoringv1.Alertmanager) { am.Spec.LogLevel = "loud" }, "spec.logLevel"},
		{"refuses a bad silence size", func(am *monitoringv1.Alertmanager) {
			am.Spec.Limits = &monitoringv1.AlertmanagerLimitsSpec{MaxPerSilenceBytes: ptr.To[monitoringv1.ByteSize]("lots")}
		}, "spec.limits.maxPerSilenceBytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(newAlertmanager(tc.set))
			se, ok := err.(*workload.SpecError)
			if !ok || se.Field != tc.field || !strings.Contains(se.Message, tc.field) {
				t.Errorf("Validate = %v, want an error on %s", err, tc.field)
			}
		})
	}
}
