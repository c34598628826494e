package prometheus

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Reasons of a SpecError, usable as condition reasons.
const (
	// ReasonInvalidSpec: a field has a value that would produce a broken StatefulSet.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonUnsupportedField: a field the existing operator honours and Lookout does not
	// yet. Rejecting it is better than silently running something the user did not ask for.
	ReasonUnsupportedField = "UnsupportedField"
)

// SpecError is a problem in a Prometheus spec that the user has to fix; retrying does not help.
type SpecError struct {
	// Field is the path of the offending field, e.g. "spec.retention".
	Field string
	// Reason is ReasonInvalidSpec or ReasonUnsupportedField.
	Reason string
	// Message says what is wrong and how to fix it; it names the field.
	Message string
}

func (e *SpecError) Error() string { return e.Message }

func invalid(field, format string, args ...any) *SpecError {
	return &SpecError{Field: field, Reason: ReasonInvalidSpec, Message: field + ": " + fmt.Sprintf(format, args...)}
}

func unsupported(field, why string) *SpecError {
	return &SpecError{Field: field, Reason: ReasonUnsupportedField, Message: field + " is not supported by Lookout yet: " + why}
}

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
		validateResources,
		validateStorage,
		validatePodMetadata,
		validatePodSpec,
		validateFlags,
		validateUnsupported,
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
	if longest := StatefulSetName(p.Name, ShardCount(p)-1); len(longest) > maxStatefulSetNameLength {
		return invalid("metadata.name", "the StatefulSet name %q is %d characters long, more than the %d a StatefulSet can have (its pods' controller-revision-hash label is limited to 63); use a shorter name",
			longest, len(longest), maxStatefulSetNameLength)
	}
	if p.Spec.ServiceName != nil && *p.Spec.ServiceName != "" {
		if errs := validation.IsDNS1035Label(*p.Spec.ServiceName); len(errs) > 0 {
			return invalid("spec.serviceName", "%q is not a valid Service name: %s", *p.Spec.ServiceName, strings.Join(errs, "; "))
		}
	}
	if n := p.Spec.ServiceAccountName; n != "" {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return invalid("spec.serviceAccountName", "%q is not a valid ServiceAccount name: %s", n, strings.Join(errs, "; "))
		}
	}
	for i, s := range p.Spec.Secrets {
		if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
			return invalid(fmt.Sprintf("spec.secrets[%d]", i), "%q is not a valid Secret name: %s", s, strings.Join(errs, "; "))
		}
	}
	for i, c := range p.Spec.ConfigMaps {
		if errs := validation.IsDNS1123Subdomain(c); len(errs) > 0 {
			return invalid(fmt.Sprintf("spec.configMaps[%d]", i), "%q is not a valid ConfigMap name: %s", c, strings.Join(errs, "; "))
		}
	}
	return nil
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
	if p.Spec.Version != "" {
		if _, err := parseVersion(p.Spec.Version); err != nil {
			return invalid("spec.version", "%v", err)
		}
	}
	field := "spec.image"
	if p.Spec.Image == nil || *p.Spec.Image == "" {
		field = "spec.baseImage"
	}
	image, err := prometheusImage(p)
	if err != nil {
		return invalid("spec.version", "%v", err)
	}
	if !imageRE.MatchString(image) {
		return invalid(field, "%q is not a valid image reference (expected [registry/]repository[:tag][@digest], e.g. %q)",
			image, DefaultBaseImage+":"+DefaultVersion)
	}
	switch p.Spec.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent:
	default:
		return invalid("spec.imagePullPolicy", "%q is not one of Always, Never, IfNotPresent", p.Spec.ImagePullPolicy)
	}
	return nil
}

func validateRetention(p *monitoringv1.Prometheus) *SpecError {
	if r := string(p.Spec.Retention); r != "" {
		if _, err := parseDuration(r); err != nil {
			return invalid("spec.retention", "%v", err)
		}
	}
	if s := string(p.Spec.RetentionSize); s != "" && !byteSizeRE.MatchString(s) {
		return invalid("spec.retentionSize", "%q is not a valid size: use a number followed by B, KB, MB, GB, TB, PB or EB (or KiB, MiB, ...), e.g. %q", s, "50GB")
	}
	return nil
}

func validateResources(p *monitoringv1.Prometheus) *SpecError {
	return checkResources("spec.resources", p.Spec.Resources)
}

func checkResources(field string, r corev1.ResourceRequirements) *SpecError {
	for _, kind := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for _, res := range sortedResourceNames(kind.list) {
			if q := kind.list[res]; q.Sign() < 0 {
				return invalid(fmt.Sprintf("%s.%s.%s", field, kind.name, res), "must not be negative, got %s", q.String())
			}
		}
	}
	for _, res := range sortedResourceNames(r.Requests) {
		limit, ok := r.Limits[res]
		if req := r.Requests[res]; ok && req.Cmp(limit) > 0 {
			return invalid(fmt.Sprintf("%s.requests.%s", field, res), "%s is more than the limit %s; the pods would be refused",
				req.String(), limit.String())
		}
	}
	return nil
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func validateStorage(p *monitoringv1.Prometheus) *SpecError {
	st := p.Spec.Storage
	if st == nil {
		return nil
	}
	switch {
	case st.EmptyDir != nil:
		if st.EmptyDir.SizeLimit != nil && st.EmptyDir.SizeLimit.Sign() < 0 {
			return invalid("spec.storage.emptyDir.sizeLimit", "must not be negative, got %s", st.EmptyDir.SizeLimit.String())
		}
	case st.Ephemeral != nil:
		if st.Ephemeral.VolumeClaimTemplate == nil {
			return invalid("spec.storage.ephemeral.volumeClaimTemplate", "is required")
		}
		return checkClaimSpec("spec.storage.ephemeral.volumeClaimTemplate.spec", st.Ephemeral.VolumeClaimTemplate.Spec)
	case hasVolumeClaimTemplate(st):
		if n := st.VolumeClaimTemplate.Name; n != "" {
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				return invalid("spec.storage.volumeClaimTemplate.metadata.name", "%q is not a valid volume name: %s", n, strings.Join(errs, "; "))
			}
		}
		return checkClaimSpec("spec.storage.volumeClaimTemplate.spec", st.VolumeClaimTemplate.Spec)
	}
	return nil
}

func checkClaimSpec(field string, spec corev1.PersistentVolumeClaimSpec) *SpecError {
	size, ok := spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return invalid(field+".resources.requests.storage", "is required: the PersistentVolumeClaims could not be created without it")
	}
	if size.Sign() <= 0 {
		return invalid(field+".resources.requests.storage", "must be positive, got %s", size.String())
	}
	if err := checkResources(field+".resources", corev1.ResourceRequirements{
		Requests: spec.Resources.Requests, Limits: spec.Resources.Limits,
	}); err != nil {
		return err
	}
	return nil
}

// hasVolumeClaimTemplate reports whether spec.storage.volumeClaimTemplate was written:
// the field is a struct, not a pointer, so "unset" is its zero value.
func hasVolumeClaimTemplate(st *monitoringv1.StorageSpec) bool {
	return st != nil && !apiequality.Semantic.DeepEqual(st.VolumeClaimTemplate, monitoringv1.EmbeddedPersistentVolumeClaim{})
}

func validatePodMetadata(p *monitoringv1.Prometheus) *SpecError {
	pm := p.Spec.PodMetadata
	if pm == nil {
		return nil
	}
	for _, k := range sortedKeys(pm.Labels) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return invalid("spec.podMetadata.labels", "%q is not a valid label name: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(pm.Labels[k]); len(errs) > 0 {
			return invalid("spec.podMetadata.labels."+k, "%q is not a valid label value: %s", pm.Labels[k], strings.Join(errs, "; "))
		}
	}
	for _, k := range sortedKeys(pm.Annotations) {
		if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
			return invalid("spec.podMetadata.annotations", "%q is not a valid annotation name: %s", k, strings.Join(errs, "; "))
		}
	}
	return nil
}

func validatePodSpec(p *monitoringv1.Prometheus) *SpecError {
	s := &p.Spec
	if s.PodManagementPolicy != nil {
		switch *s.PodManagementPolicy {
		case monitoringv1.OrderedReadyPodManagement, monitoringv1.ParallelPodManagement:
		default:
			return invalid("spec.podManagementPolicy", "%q is not one of OrderedReady, Parallel", *s.PodManagementPolicy)
		}
	}
	if s.UpdateStrategy != nil {
		switch s.UpdateStrategy.Type {
		case monitoringv1.RollingUpdateStatefulSetStrategyType, monitoringv1.OnDeleteStatefulSetStrategyType:
		default:
			return invalid("spec.updateStrategy.type", "%q is not one of RollingUpdate, OnDelete", s.UpdateStrategy.Type)
		}
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
	if s.SecurityContext != nil && s.SecurityContext.RunAsUser != nil && *s.SecurityContext.RunAsUser < 0 {
		return invalid("spec.securityContext.runAsUser", "must not be negative, got %d", *s.SecurityContext.RunAsUser)
	}
	return nil
}

var (
	logLevels  = []string{"", "debug", "info", "warn", "error"}
	logFormats = []string{"", "logfmt", "json"}
)

func validateFlags(p *monitoringv1.Prometheus) *SpecError {
	s := &p.Spec
	if !slices.Contains(logLevels, s.LogLevel) {
		return invalid("spec.logLevel", "%q is not one of debug, info, warn, error", s.LogLevel)
	}
	if !slices.Contains(logFormats, s.LogFormat) {
		return invalid("spec.logFormat", "%q is not one of logfmt, json", s.LogFormat)
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
	if u := s.ExternalURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return invalid("spec.externalUrl", "%q must be an absolute http:// or https:// URL", u)
	}
	if r := s.RoutePrefix; r != "" && !strings.HasPrefix(r, "/") {
		return invalid("spec.routePrefix", "%q must start with /", r)
	}
	if ptrValue(s.EnableOTLPReceiver) {
		v, _ := parseVersion(versionOrDefault(p))
		if v.major < 3 {
			return unsupported("spec.enableOTLPReceiver", "it needs Prometheus v3 or later, spec.version is "+versionOrDefault(p))
		}
	}
	generated := map[string]bool{}
	for _, a := range generatedArgs(p) {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		generated[strings.TrimPrefix(name, "no-")] = true
	}
	for i, a := range s.AdditionalArgs {
		field := fmt.Sprintf("spec.additionalArgs[%d].name", i)
		if a.Name == "" || strings.HasPrefix(a.Name, "-") || strings.ContainsAny(a.Name, "= ") {
			return invalid(field, "%q must be a flag name without leading dashes, e.g. %q", a.Name, "query.max-concurrency")
		}
		if generated[strings.TrimPrefix(a.Name, "no-")] {
			return invalid(field, "--%s is set by Lookout from the Prometheus spec; set the corresponding field instead", a.Name)
		}
	}
	return nil
}

func validateUnsupported(p *monitoringv1.Prometheus) *SpecError {
	s := &p.Spec
	switch {
	case len(s.Containers) > 0:
		return unsupported("spec.containers", "extra or patched containers are not added to the pods; remove the field")
	case len(s.InitContainers) > 0:
		return unsupported("spec.initContainers", "extra or patched init containers are not added to the pods; remove the field")
	case len(s.Volumes) > 0:
		return unsupported("spec.volumes", "extra volumes are not added to the pods; use spec.secrets or spec.configMaps")
	case len(s.VolumeMounts) > 0:
		return unsupported("spec.volumeMounts", "extra volume mounts are not added to the pods; use spec.secrets or spec.configMaps")
	case s.Thanos != nil:
		return unsupported("spec.thanos", "the Thanos sidecar is not generated; remove the field")
	case s.Web != nil && s.Web.TLSConfig != nil:
		return unsupported("spec.web.tlsConfig", "the web server serves plain HTTP only; remove the field")
	case s.ListenLocal:
		return unsupported("spec.listenLocal", "Prometheus always listens on :9090 so that probes and Services reach it")
	case s.HostNetwork:
		return unsupported("spec.hostNetwork", "pods run in the pod network only")
	case s.PortName != "" && s.PortName != webPortName:
		return unsupported("spec.portName", "the web port is always named \"web\"")
	case s.AutomountServiceAccountToken != nil && !*s.AutomountServiceAccountToken:
		return unsupported("spec.automountServiceAccountToken", "Prometheus needs the ServiceAccount token for Kubernetes service discovery and the config reloader for watching its Secret")
	case s.ReloadStrategy != nil && *s.ReloadStrategy == monitoringv1.ProcessSignalReloadStrategyType:
		return unsupported("spec.reloadStrategy", "only HTTP reloads are generated")
	case s.RetentionPercentage != nil && !s.RetentionPercentage.IsZero():
		return unsupported("spec.retentionPercentage", "use spec.retentionSize")
	case len(s.RemoteWriteReceiverMessageVersions) > 0:
		return unsupported("spec.remoteWriteReceiverMessageVersions", "remove the field to accept the Prometheus default")
	case s.QueryLogFile != "" && !strings.HasPrefix(s.QueryLogFile, "/dev/"):
		return unsupported("spec.queryLogFile", "the root filesystem is read-only; only /dev/stdout or /dev/stderr can be written")
	case s.ScrapeFailureLogFile != nil && *s.ScrapeFailureLogFile != "" && !strings.HasPrefix(*s.ScrapeFailureLogFile, "/dev/"):
		return unsupported("spec.scrapeFailureLogFile", "the root filesystem is read-only; only /dev/stdout or /dev/stderr can be written")
	}
	return nil
}

// Duration is the Prometheus duration syntax (the CRD's pattern for Duration): units
// from years down to milliseconds, each at most once, largest first; or "0".
var durationRE = regexp.MustCompile(`^(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?$`)

var durationUnitsMillis = []uint64{365 * 24 * 3600 * 1000, 7 * 24 * 3600 * 1000, 24 * 3600 * 1000, 3600 * 1000, 60 * 1000, 1000, 1}

// parseDuration returns the duration in milliseconds, refusing values that overflow the
// int64 nanoseconds Prometheus stores durations in (it would refuse to start).
func parseDuration(s string) (uint64, error) {
	if s == "0" {
		return 0, nil
	}
	m := durationRE.FindStringSubmatch(s)
	if s == "" || m == nil {
		return 0, fmt.Errorf("%q is not a valid duration: use numbers with the units y, w, d, h, m, s, ms, largest first, e.g. %q", s, "15d")
	}
	const maxMillis = math.MaxInt64 / 1_000_000
	var total uint64
	for i, unit := range durationUnitsMillis {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseUint(m[i+1], 10, 64)
		if err != nil || n > maxMillis/unit || total+n*unit > maxMillis {
			return 0, fmt.Errorf("%q is too long: Prometheus durations must stay under 292 years", s)
		}
		total += n * unit
	}
	return total, nil
}

// byteSizeRE is the Prometheus size syntax (the CRD's pattern for ByteSize).
var byteSizeRE = regexp.MustCompile(`^(?:0|(?:[0-9]*\.)?[0-9]+(?:[KMGTPE]i?)?B)$`)

// imageRE follows the grammar of container image references: an optional registry host
// (with port), lower-case path components, an optional tag and an optional digest.
var imageRE = func() *regexp.Regexp {
	const (
		hostPart  = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		host      = hostPart + `(?:\.` + hostPart + `)*(?::[0-9]+)?`
		component = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
		tag       = `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`
		digest    = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^(?:` + host + `/)?` + component + `(?:/` + component + `)*(?::` + tag + `)?(?:@` + digest + `)?$`)
}()

type version struct {
	major, minor, patch int
	pre                 string
}

// tag is the image tag Prometheus releases use for the version: "v" and the numbers,
// without build metadata (a '+' is not allowed in tags).
func (v version) tag() string {
	t := fmt.Sprintf("v%d.%d.%d", v.major, v.minor, v.patch)
	if v.pre != "" {
		t += "-" + v.pre
	}
	return t
}

var versionRE = regexp.MustCompile(`^v?(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?(?:\.(0|[1-9][0-9]*))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$`)

// parseVersion accepts semantic versions with an optional "v" and missing minor or patch
// numbers ("v3", "3.5"), like the existing operator.
func parseVersion(s string) (version, error) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return version{}, fmt.Errorf("%q is not a semantic version like %q", s, DefaultVersion)
	}
	var v version
	for i, dst := range []*int{&v.major, &v.minor, &v.patch} {
		if m[i+1] != "" {
			n, err := strconv.Atoi(m[i+1])
			if err != nil {
				return version{}, fmt.Errorf("%q is not a semantic version like %q", s, DefaultVersion)
			}
			*dst = n
		}
	}
	v.pre = m[4]
	return v, nil
}

func versionOrDefault(p *monitoringv1.Prometheus) string {
	if p.Spec.Version != "" {
		return p.Spec.Version
	}
	return DefaultVersion
}

// prometheusImage is spec.image, else spec.baseImage (or the default) with spec.sha,
// spec.tag or the version's tag, in the existing operator's order of precedence.
func prometheusImage(p *monitoringv1.Prometheus) (string, error) {
	if p.Spec.Image != nil && strings.TrimSpace(*p.Spec.Image) != "" {
		return strings.TrimSpace(*p.Spec.Image), nil
	}
	base := DefaultBaseImage
	if p.Spec.BaseImage != "" {
		base = p.Spec.BaseImage
	}
	switch {
	case p.Spec.SHA != "":
		return base + "@sha256:" + p.Spec.SHA, nil
	case p.Spec.Tag != "":
		return base + ":" + p.Spec.Tag, nil
	}
	v, err := parseVersion(versionOrDefault(p))
	if err != nil {
		return "", err
	}
	return base + ":" + v.tag(), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
