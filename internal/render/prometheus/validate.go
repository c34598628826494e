package prometheus

import (
	"github.com/lookout-operator/lookout/internal/render/thanos"
	"github.com/lookout-operator/lookout/internal/render/workload"

	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// SpecError and its reasons are the shared workload ones.
type SpecError = workload.SpecError

// Reasons of a SpecError, usable as condition reasons.
const (
	ReasonInvalidSpec      = workload.ReasonInvalidSpec
	ReasonUnsupportedField = workload.ReasonUnsupportedField
)

var (
	invalid       = workload.Invalid
	unsupported   = workload.Unsupported
	parseDuration = workload.ParseDuration
	ptrValue      = workload.Value[bool]
)

// Validate checks the parts of a Prometheus spec that would make a broken StatefulSet
// (nonsense retention, negative replicas or shards, bad resource quantities, invalid
// image, ...) and the fields Lookout does not support yet. It returns the first problem
// as a *SpecError; the caller sets Reconciled=False and leaves the running StatefulSet
// untouched. The checks also run offline (lookout render), where no CRD schema applies.
func Validate(p *monitoringv1.Prometheus) error {
	checks := []func(*monitoringv1.Prometheus) *SpecError{
		validateNames,
		validateCounts,
		validateImage,
		validateRetention,
		validateShardRetention,
		validateResources,
		validateStorage,
		validatePodMetadata,
		validatePodSpec,
		validateFlags,
		validateLogFiles,
		validateUnsupported,
		validateThanos,
	}
	for _, check := range checks {
		// Return the *SpecError only when set: a nil *SpecError in an error is not nil.
		if err := check(p); err != nil {
			return err
		}
	}
	return nil
}

func validateNames(p *monitoringv1.Prometheus) *SpecError {
	if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
		return invalid("metadata.name", "%q cannot name the generated Services and StatefulSets: %s", p.Name, strings.Join(errs, "; "))
	}
	if longest := FlavourOf(p).StatefulSetName(p.Name, ShardCount(p)-1); len(longest) > maxStatefulSetNameLength {
		return invalid("metadata.name", "the StatefulSet name %q is %d characters long, more than the %d a StatefulSet can have (its pods' controller-revision-hash label is limited to 63); use a shorter name",
			longest, len(longest), maxStatefulSetNameLength)
	}
	if p.Spec.ServiceName != nil && *p.Spec.ServiceName != "" {
		if errs := validation.IsDNS1035Label(*p.Spec.ServiceName); len(errs) > 0 {
			return invalid("spec.serviceName", "%q is not a valid Service name: %s", *p.Spec.ServiceName, strings.Join(errs, "; "))
		}
	}
	if n := p.Spec.PortName; n != "" {
		if errs := validation.IsValidPortName(n); len(errs) > 0 {
			return invalid("spec.portName", "%q cannot name the web port: %s", n, strings.Join(errs, "; "))
		}
		// A Service's target port names one port of the pod.
		if n == reloaderPortName || p.Spec.Thanos != nil && (n == thanos.GRPCPortName || n == thanosHTTPPortName) {
			return invalid("spec.portName", "%q is the name of another port of the pod; choose another", n)
		}
	}
	return workload.CheckObjectNames(p.Spec.ServiceAccountName, p.Spec.Secrets, p.Spec.ConfigMaps)
}

func validateCounts(p *monitoringv1.Prometheus) *SpecError {
	s := &p.Spec
	if s.Replicas != nil && *s.Replicas < 0 {
		return invalid("spec.replicas", "must not be negative, got %d", *s.Replicas)
	}
	if s.Shards != nil && *s.Shards < 0 {
		return invalid("spec.shards", "must not be negative, got %d", *s.Shards)
	}
	if s.MinReadySeconds != nil && *s.MinReadySeconds < 0 {
		return invalid("spec.minReadySeconds", "must not be negative, got %d", *s.MinReadySeconds)
	}
	if s.TerminationGracePeriodSeconds != nil && *s.TerminationGracePeriodSeconds < 0 {
		return invalid("spec.terminationGracePeriodSeconds", "must not be negative, got %d", *s.TerminationGracePeriodSeconds)
	}
	if s.MaximumStartupDurationSeconds != nil && *s.MaximumStartupDurationSeconds < 60 {
		return invalid("spec.maximumStartupDurationSeconds", "must be at least 60, got %d", *s.MaximumStartupDurationSeconds)
	}
	if s.Web != nil && s.Web.MaxConnections != nil && *s.Web.MaxConnections < 0 {
		return invalid("spec.web.maxConnections", "must not be negative, got %d", *s.Web.MaxConnections)
	}
	if q := s.Query; q != nil {
		if q.MaxConcurrency != nil && *q.MaxConcurrency < 1 {
			return invalid("spec.query.maxConcurrency", "must be at least 1, got %d", *q.MaxConcurrency)
		}
		if q.MaxSamples != nil && *q.MaxSamples < 0 {
			return invalid("spec.query.maxSamples", "must not be negative, got %d", *q.MaxSamples)
		}
	}
	return nil
}

func validateImage(p *monitoringv1.Prometheus) *SpecError {
	if err := imageSpec(p).Check(); err != nil {
		return err
	}
	switch p.Spec.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent:
	default:
		return invalid("spec.imagePullPolicy", "%q is not one of Always, Never, IfNotPresent", p.Spec.ImagePullPolicy)
	}
	return nil
}

// imageSpec is the Prometheus's image fields with Lookout's defaults.
func imageSpec(p *monitoringv1.Prometheus) workload.ImageSpec {
	return workload.ImageSpec{Image: p.Spec.Image, BaseImage: p.Spec.BaseImage, Tag: p.Spec.Tag, SHA: p.Spec.SHA,
		Version: p.Spec.Version, DefaultBase: DefaultBaseImage, DefaultVersion: DefaultVersion}
}

// ParsedVersion is the Prometheus version p runs: spec.version, else the default.
func ParsedVersion(p *monitoringv1.Prometheus) (workload.Version, error) {
	return imageSpec(p).ParsedVersion()
}

func validateRetention(p *monitoringv1.Prometheus) *SpecError {
	if r := string(p.Spec.Retention); r != "" {
		if _, err := parseDuration(r); err != nil {
			return invalid("spec.retention", "%v", err)
		}
	}
	if s := string(p.Spec.RetentionSize); s != "" && !workload.ByteSizeRE.MatchString(s) {
		return invalid("spec.retentionSize", "%q is not a valid size: use a number followed by B, KB, MB, GB, TB, PB or EB (or KiB, MiB, ...), e.g. %q", s, "50GB")
	}
	return nil
}

func validateResources(p *monitoringv1.Prometheus) *SpecError {
	return workload.CheckResources("spec.resources", p.Spec.Resources)
}

func validateStorage(p *monitoringv1.Prometheus) *SpecError {
	return workload.CheckStorage(p.Spec.Storage)
}

func validatePodMetadata(p *monitoringv1.Prometheus) *SpecError {
	return workload.CheckPodMetadata(p.Spec.PodMetadata)
}

func validatePodSpec(p *monitoringv1.Prometheus) *SpecError {
	s := &p.Spec
	if err := workload.CheckStatefulSetPolicies(s.PodManagementPolicy, s.UpdateStrategy); err != nil {
		return err
	}
	for i, c := range s.TopologySpreadConstraints {
		if a := c.AdditionalLabelSelectors; a != nil {
			switch *a {
			case monitoringv1.ResourceNameLabelSelector, monitoringv1.ShardAndResourceNameLabelSelector:
			default:
				return invalid(fmt.Sprintf("spec.topologySpreadConstraints[%d].additionalLabelSelectors", i), "%q is not one of OnResource, OnShard", *a)
			}
		}
	}
	for _, cs := range []struct {
		field string
		list  []corev1.Container
	}{{"spec.containers", s.Containers}, {"spec.initContainers", s.InitContainers}} {
		for i, c := range cs.list {
			if c.Name == "" {
				return invalid(fmt.Sprintf("%s[%d].name", cs.field, i), "is required: a patch names the generated container it changes, or the container it adds")
			}
		}
	}
	if err := workload.CheckUserVolumes(volumes(&monitoringv1.Prometheus{ObjectMeta: p.ObjectMeta, Spec: specWithoutUserVolumes(s)}), s.Volumes, s.VolumeMounts); err != nil {
		return err
	}
	return workload.CheckPodSecurityContext(s.SecurityContext)
}

// specWithoutUserVolumes is s without spec.volumes: what the generated volumes are made from.
func specWithoutUserVolumes(s *monitoringv1.PrometheusSpec) monitoringv1.PrometheusSpec {
	c := *s
	c.Volumes = nil
	return c
}

func validateFlags(p *monitoringv1.Prometheus) *SpecError {
	s := &p.Spec
	if err := workload.CheckLogFlags(s.LogLevel, s.LogFormat); err != nil {
		return err
	}
	if err := workload.CheckWebTLS("spec.web.tlsConfig", webTLS(p)); err != nil {
		return err
	}
	for i, f := range s.EnableFeatures {
		if f == "" || strings.ContainsAny(string(f), ", ") {
			return invalid(fmt.Sprintf("spec.enableFeatures[%d]", i), "%q is not a feature name", f)
		}
	}
	if q := s.Query; q != nil {
		if q.LookbackDelta != nil {
			if _, err := parseDuration(*q.LookbackDelta); err != nil {
				return invalid("spec.query.lookbackDelta", "%v", err)
			}
		}
		if q.Timeout != nil {
			if _, err := parseDuration(string(*q.Timeout)); err != nil {
				return invalid("spec.query.timeout", "%v", err)
			}
		}
	}
	for _, f := range rulesAlertFlags(p) {
		if f.value != "" {
			if _, err := parseDuration(f.value); err != nil {
				return invalid(f.field, "%v", err)
			}
		}
	}
	// An absolute URL, or a path alone, which Prometheus takes as is (its route prefix is
	// set explicitly).
	if u := s.ExternalURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "/") {
		return invalid("spec.externalUrl", "%q must be an absolute http:// or https:// URL, or a path starting with /", u)
	}
	if r := s.RoutePrefix; r != "" && !strings.HasPrefix(r, "/") {
		return invalid("spec.routePrefix", "%q must start with /", r)
	}
	if m := s.RemoteWriteReceiverMessageVersions; len(m) > 0 {
		if v, _ := imageSpec(p).ParsedVersion(); !v.AtLeast(2, 54) {
			return unsupported("spec.remoteWriteReceiverMessageVersions", "it requires Prometheus v2.54.0 or later, spec.version is "+imageSpec(p).VersionOrDefault())
		}
		seen := map[monitoringv1.RemoteWriteMessageVersion]bool{}
		for i, v := range m {
			field := fmt.Sprintf("spec.remoteWriteReceiverMessageVersions[%d]", i)
			if _, ok := receiverMessages[v]; !ok {
				return invalid(field, "%q is neither %s nor %s", v, monitoringv1.RemoteWriteMessageVersion1_0, monitoringv1.RemoteWriteMessageVersion2_0)
			}
			if seen[v] {
				return invalid(field, "%q is listed twice; Prometheus refuses duplicates", v)
			}
			seen[v] = true
		}
	}
	if ptrValue(s.EnableOTLPReceiver) {
		if v, _ := imageSpec(p).ParsedVersion(); !v.AtLeast(2, 47) {
			return unsupported("spec.enableOTLPReceiver", "it needs Prometheus v2.47 or later, spec.version is "+imageSpec(p).VersionOrDefault())
		}
	}
	return workload.CheckAdditionalArgs(generatedArgs(p), s.AdditionalArgs, "query.max-concurrency", "Prometheus")
}

func validateUnsupported(p *monitoringv1.Prometheus) *SpecError {
	s := &p.Spec
	switch {
	case s.ShardingStrategy != nil && s.ShardingStrategy.Mode != nil && *s.ShardingStrategy.Mode != monitoringv1.AddressShardingStrategyMode:
		return unsupported("spec.shardingStrategy.mode", "targets are sharded by address only (mode Address)")
	case s.ShardingStrategy != nil && s.ShardingStrategy.Topology != nil:
		return unsupported("spec.shardingStrategy.topology", "targets are sharded by address only (mode Address)")
	case s.RetentionPercentage != nil && !s.RetentionPercentage.IsZero():
		return unsupported("spec.retentionPercentage", "retention is set with flags, and storage.tsdb.retention in the config (Prometheus v3.11+) would replace them all; use spec.retention or spec.retentionSize")
	}
	return nil
}
