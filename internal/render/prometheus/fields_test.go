package prometheus

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// honouredPrometheusFields are the fields of PrometheusSpec and CommonPrometheusFields that
// reach the config, the pods or the selection. docs/compatibility.md says where each goes.
var honouredPrometheusFields = []string{
	// Image and version.
	"Version", "Image", "BaseImage", "Tag", "SHA", "ImagePullPolicy", "ImagePullSecrets",
	// Selection.
	"ServiceMonitorSelector", "ServiceMonitorNamespaceSelector", "PodMonitorSelector", "PodMonitorNamespaceSelector",
	"ProbeSelector", "ProbeNamespaceSelector", "ScrapeConfigSelector", "ScrapeConfigNamespaceSelector",
	"RuleSelector", "RuleNamespaceSelector", "IgnoreNamespaceSelectors",
	// The StatefulSet and its pods.
	"PodMetadata", "Paused", "Replicas", "Shards", "Storage", "PersistentVolumeClaimRetentionPolicy", "Resources",
	"NodeSelector", "SchedulerName", "ServiceAccountName", "Secrets", "ConfigMaps", "Affinity", "Tolerations",
	"TopologySpreadConstraints", "SecurityContext", "DNSPolicy", "DNSConfig", "PodManagementPolicy", "UpdateStrategy",
	"EnableServiceLinks", "PriorityClassName", "MinReadySeconds", "HostAliases", "MaximumStartupDurationSeconds",
	"ServiceName", "TerminationGracePeriodSeconds", "HostUsers",
	// Removed shards: deleted, or kept by the controller (ShardRetentionOf).
	"ShardRetentionPolicy",
	// Flags.
	"LogLevel", "LogFormat", "EnableRemoteWriteReceiver", "EnableOTLPReceiver", "EnableFeatures", "ExternalURL",
	"RoutePrefix", "AdditionalArgs", "WALCompression", "Retention", "RetentionSize", "DisableCompaction",
	"Query", "EnableAdminAPI", "Rules", "AllowOverlappingBlocks", "ListenLocal", "Runtime",
	// No lifecycle API with ProcessSignal, and the reloader signals through a shared process namespace.
	"ReloadStrategy",
	// The pods, patched and extended by the user.
	"Containers", "InitContainers", "Volumes", "VolumeMounts", "HostNetwork",
	// The Thanos sidecar (thanos.go; its own fields in TestEveryThanosSpecFieldIsHonouredOrRefused).
	"Thanos",
	// The config: global section, jobs, rules, alerting, remote.
	"ReplicaExternalLabelName", "PrometheusExternalLabelName", "ScrapeInterval", "ScrapeTimeout", "ScrapeProtocols",
	"ExternalLabels", "EvaluationInterval", "RuleQueryOffset", "AdditionalScrapeConfigs", "ArbitraryFSAccessThroughSMs",
	"OverrideHonorLabels", "OverrideHonorTimestamps", "EnforcedNamespaceLabel", "EnforcedSampleLimit",
	"EnforcedTargetLimit", "EnforcedLabelLimit", "EnforcedLabelNameLengthLimit", "EnforcedLabelValueLengthLimit",
	"EnforcedKeepDroppedTargets", "EnforcedBodySizeLimit", "NameValidationScheme", "NameEscapingScheme",
	"ConvertClassicHistogramsToNHCB", "ScrapeNativeHistograms", "ScrapeClassicHistograms", "ExcludedFromEnforcement",
	"PrometheusRulesExcludedFromEnforce", "PodTargetLabels", "BodySizeLimit", "SampleLimit", "TargetLimit",
	"LabelLimit", "LabelNameLengthLimit", "LabelValueLengthLimit", "KeepDroppedTargets", "ScrapeClasses",
	"ServiceDiscoveryRole", "Alerting", "AdditionalAlertRelabelConfigs", "AdditionalAlertManagerConfigs",
	"RemoteWrite", "RemoteRead", "TSDB", "Exemplars", "TracingConfig", "OTLP", "APIServerConfig",
	// Honoured for the values that work; the others are refused in refusedPrometheusFields.
	"AutomountServiceAccountToken",
	"Web", "RemoteWriteReceiverMessageVersions", "PortName", "RetentionPercentage", "QueryLogFile",
	"ScrapeFailureLogFile", "ShardingStrategy",
}

// refusedPrometheusFields are refused by Validate: each sets a value Lookout does not
// generate, keyed by the field path the refusal must name.
var refusedPrometheusFields = map[string]func(*monitoringv1.PrometheusSpec){
	// The probes and the reloader have no client certificate.
	"spec.web.tlsConfig.clientAuthType": func(s *monitoringv1.PrometheusSpec) {
		s.Web = &monitoringv1.PrometheusWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
			CertFile: ptrTo("/c.crt"), KeyFile: ptrTo("/c.key"), ClientAuthType: ptrTo("RequireAndVerifyClientCert")}}}
	},
	"spec.retentionPercentage": func(s *monitoringv1.PrometheusSpec) { s.RetentionPercentage = ptrTo(resource.MustParse("50")) },
	// Before Prometheus knows the flag.
	"spec.remoteWriteReceiverMessageVersions": func(s *monitoringv1.PrometheusSpec) {
		s.Version = "v2.53.0"
		s.RemoteWriteReceiverMessageVersions = []monitoringv1.RemoteWriteMessageVersion{"V2.0"}
	},
	"spec.shardingStrategy.mode": func(s *monitoringv1.PrometheusSpec) {
		s.ShardingStrategy = &monitoringv1.ShardingStrategy{Mode: ptrTo(monitoringv1.TopologyShardingStrategyMode)}
	},
}

// prometheusSpecFields are the fields of PrometheusSpec with those of the embedded
// CommonPrometheusFields in its place: name and JSON name.
func prometheusSpecFields() [][2]string {
	var out [][2]string
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			out = append(out, [2]string{f.Name, strings.Split(f.Tag.Get("json"), ",")[0]})
		}
	}
	walk(reflect.TypeFor[monitoringv1.PrometheusSpec]())
	return out
}

func TestEveryPrometheusSpecFieldIsHonouredOrRefused(t *testing.T) {
	fields := prometheusSpecFields()
	if len(fields) < 100 {
		t.Fatalf("found %d fields; the embedded CommonPrometheusFields was not walked", len(fields))
	}
	for _, f := range fields {
		name, json := f[0], f[1]
		_, isRefused := refusedPrometheusFields["spec."+json]
		if !slices.Contains(honouredPrometheusFields, name) && !isRefused {
			t.Errorf("PrometheusSpec.%s (%s) is neither honoured nor refused: classify it", name, json)
		}
	}
	for field, set := range refusedPrometheusFields {
		t.Run("refuses "+field, func(t *testing.T) {
			err := Validate(newPrometheus(withSpec(set)))
			se, ok := err.(*workload.SpecError)
			if !ok || se.Reason != workload.ReasonUnsupportedField || !strings.Contains(se.Message, field) {
				t.Errorf("Validate = %v, want an UnsupportedField error naming %s", err, field)
			}
		})
	}
}

// TestHonouredPrometheusFieldsAreRead keeps the honoured list honest: every field in it is
// read somewhere in Lookout's code outside tests (a selector expression naming it).
func TestHonouredPrometheusFieldsAreRead(t *testing.T) {
	read := map[string]bool{}
	fset := token.NewFileSet()
	root := filepath.Join("..", "..") // internal/
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				read[sel.Sel.Name] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := map[string]bool{}
	for _, f := range prometheusSpecFields() {
		spec[f[0]] = true
	}
	for _, name := range honouredPrometheusFields {
		if !spec[name] {
			t.Errorf("%s is listed as honoured but PrometheusSpec has no such field", name)
		}
		if !read[name] {
			t.Errorf("%s is listed as honoured but no code reads it", name)
		}
	}
}

func TestPodPiecesOfNewlyHonouredFields(t *testing.T) {
	p := newPrometheus(withVersion("v3.5.0"), withSpec(func(s *monitoringv1.PrometheusSpec) {
		s.AutomountServiceAccountToken = ptrTo(false)
		s.RemoteWriteReceiverMessageVersions = []monitoringv1.RemoteWriteMessageVersion{monitoringv1.RemoteWriteMessageVersion2_0, monitoringv1.RemoteWriteMessageVersion1_0}
		s.AllowOverlappingBlocks = true
	}))
	sts := only(t, find[*appsv1.StatefulSet](mustObjects(t, p, newOptions())))
	pod := sts.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false", pod.AutomountServiceAccountToken)
	}
	args := pod.Containers[0].Args
	for _, want := range []string{
		"--web.remote-write-receiver.accepted-protobuf-messages=io.prometheus.write.v2.Request",
		"--web.remote-write-receiver.accepted-protobuf-messages=prometheus.WriteRequest",
	} {
		if !slices.Contains(args, want) {
			t.Errorf("args lack %s: %q", want, args)
		}
	}
	if slices.Contains(args, "--storage.tsdb.allow-overlapping-blocks") {
		t.Error("v3 has no --storage.tsdb.allow-overlapping-blocks, but it was written")
	}
	old := newPrometheus(withVersion("v2.38.0"), withSpec(func(s *monitoringv1.PrometheusSpec) { s.AllowOverlappingBlocks = true }))
	if args := only(t, find[*appsv1.StatefulSet](mustObjects(t, old, newOptions()))).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--storage.tsdb.allow-overlapping-blocks") {
		t.Errorf("v2.38 args lack --storage.tsdb.allow-overlapping-blocks: %q", args)
	}
}
