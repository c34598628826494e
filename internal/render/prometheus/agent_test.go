package prometheus

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// TestEveryPrometheusAgentSpecFieldIsHonouredOrRefused classifies every field of
// PrometheusAgentSpec and of the CommonPrometheusFields it shares with Prometheus: a new
// field in the API fails here until it is rendered or refused by name.
func TestEveryPrometheusAgentSpecFieldIsHonouredOrRefused(t *testing.T) {
	honoured := []string{
		"Mode", "CommonPrometheusFields",
		"PodMetadata", "ServiceMonitorSelector", "ServiceMonitorNamespaceSelector", "PodMonitorSelector",
		"PodMonitorNamespaceSelector", "ProbeSelector", "ProbeNamespaceSelector", "ScrapeConfigSelector",
		"ScrapeConfigNamespaceSelector", "Version", "Paused", "Image", "ImagePullPolicy", "ImagePullSecrets",
		"Replicas", "Shards", "ReplicaExternalLabelName", "PrometheusExternalLabelName", "LogLevel", "LogFormat",
		"ScrapeInterval", "ScrapeTimeout", "ScrapeProtocols", "ExternalLabels", "EnableRemoteWriteReceiver",
		"EnableOTLPReceiver", "EnableFeatures", "ExternalURL", "RoutePrefix", "Storage",
		"PersistentVolumeClaimRetentionPolicy", "Resources", "NodeSelector", "SchedulerName", "ServiceAccountName",
		"Secrets", "ConfigMaps", "Affinity", "Tolerations", "TopologySpreadConstraints", "RemoteWrite",
		"SecurityContext", "DNSPolicy", "DNSConfig", "PodManagementPolicy", "UpdateStrategy", "EnableServiceLinks",
		"AdditionalScrapeConfigs", "PriorityClassName", "ArbitraryFSAccessThroughSMs", "OverrideHonorLabels",
		"OverrideHonorTimestamps", "IgnoreNamespaceSelectors", "EnforcedNamespaceLabel", "EnforcedSampleLimit",
		"EnforcedTargetLimit", "EnforcedLabelLimit", "EnforcedLabelNameLengthLimit", "EnforcedLabelValueLengthLimit",
		"EnforcedKeepDroppedTargets", "EnforcedBodySizeLimit", "NameValidationScheme", "NameEscapingScheme",
		"ConvertClassicHistogramsToNHCB", "ScrapeNativeHistograms", "ScrapeClassicHistograms", "MinReadySeconds",
		"HostAliases", "AdditionalArgs", "WALCompression", "ExcludedFromEnforcement", "PodTargetLabels",
		"BodySizeLimit", "SampleLimit", "TargetLimit", "LabelLimit", "LabelNameLengthLimit", "LabelValueLengthLimit",
		"KeepDroppedTargets", "MaximumStartupDurationSeconds", "ScrapeClasses", "ServiceDiscoveryRole", "ServiceName",
		"TerminationGracePeriodSeconds", "HostUsers",
		"OTLP", "APIServerConfig", "TracingConfig", "Runtime", "Containers", "InitContainers", "Volumes",
		"VolumeMounts", "ListenLocal", "HostNetwork", "AutomountServiceAccountToken",
		"RemoteWriteReceiverMessageVersions", "ScrapeFailureLogFile", "ReloadStrategy", "TSDB",
		// Honoured for the values that work; the others are refused below.
		"Web", "PortName", "ShardingStrategy",
	}
	daemonSet := func(set func(*monitoringv1alpha1.PrometheusAgentSpec)) func(*monitoringv1alpha1.PrometheusAgentSpec) {
		return func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.Mode = ptr.To(monitoringv1alpha1.DaemonSetPrometheusAgentMode)
			set(s)
		}
	}
	sel := &metav1.LabelSelector{}
	refused := map[string]func(*monitoringv1alpha1.PrometheusAgentSpec){
		"spec.tsdb.outOfOrderTimeWindow": func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.Version = "v2.53.2"
			s.TSDB = &monitoringv1.TSDBSpec{OutOfOrderTimeWindow: ptr.To[monitoringv1.Duration]("10m")}
		},
		"spec.shardingStrategy.mode": func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.ShardingStrategy = &monitoringv1.ShardingStrategy{Mode: ptr.To(monitoringv1.TopologyShardingStrategyMode)}
		},
		"spec.version": func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.Version = "v2.31.1" },
		// DaemonSet mode: one agent per node, pods on that node only.
		"spec.replicas": daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.Replicas = ptr.To[int32](1) }),
		"spec.shards":   daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.Shards = ptr.To[int32](2) }),
		"spec.storage":  daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.Storage = &monitoringv1.StorageSpec{} }),
		"spec.persistentVolumeClaimRetentionPolicy": daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
		}),
		"spec.shardingStrategy": daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.ShardingStrategy = &monitoringv1.ShardingStrategy{}
		}),
		"spec.serviceMonitorSelector":          daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ServiceMonitorSelector = sel }),
		"spec.serviceMonitorNamespaceSelector": daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ServiceMonitorNamespaceSelector = sel }),
		"spec.probeSelector":                   daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ProbeSelector = sel }),
		"spec.probeNamespaceSelector":          daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ProbeNamespaceSelector = sel }),
		"spec.scrapeConfigSelector":            daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ScrapeConfigSelector = sel }),
		"spec.scrapeConfigNamespaceSelector":   daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ScrapeConfigNamespaceSelector = sel }),
		"spec.additionalScrapeConfigs": daemonSet(func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.AdditionalScrapeConfigs = &corev1.SecretKeySelector{}
		}),
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[monitoringv1alpha1.PrometheusAgentSpec](), reflect.TypeFor[monitoringv1.CommonPrometheusFields]()} {
		for i := range typ.NumField() {
			name := typ.Field(i).Name
			json := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
			_, isRefused := refused["spec."+json]
			if !slices.Contains(honoured, name) && !isRefused {
				t.Errorf("%s.%s (%s) is neither honoured nor refused: classify it", typ.Name(), name, json)
			}
		}
	}
	for field, set := range refused {
		a := &monitoringv1alpha1.PrometheusAgent{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "edge"}}
		set(&a.Spec)
		err := ValidateAgent(a)
		se, ok := err.(*workload.SpecError)
		if !ok || se.Reason != workload.ReasonUnsupportedField || !strings.Contains(se.Message, field) {
			t.Errorf("%s: ValidateAgent = %v, want an UnsupportedField error naming the field", field, err)
		}
	}
}
