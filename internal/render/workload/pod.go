package workload

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation"
)

// CheckResources refuses negative quantities and requests above limits: the pods would
// be refused.
func CheckResources(field string, r corev1.ResourceRequirements) *SpecError {
	for _, kind := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for _, res := range sortedResourceNames(kind.list) {
			if q := kind.list[res]; q.Sign() < 0 {
				return Invalid(fmt.Sprintf("%s.%s.%s", field, kind.name, res), "must not be negative, got %s", q.String())
			}
		}
	}
	for _, res := range sortedResourceNames(r.Requests) {
		limit, ok := r.Limits[res]
		if req := r.Requests[res]; ok && req.Cmp(limit) > 0 {
			return Invalid(fmt.Sprintf("%s.requests.%s", field, res), "%s is more than the limit %s; the pods would be refused",
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

// CheckStorage checks spec.storage.
func CheckStorage(st *monitoringv1.StorageSpec) *SpecError {
	if st == nil {
		return nil
	}
	switch {
	case st.EmptyDir != nil:
		if st.EmptyDir.SizeLimit != nil && st.EmptyDir.SizeLimit.Sign() < 0 {
			return Invalid("spec.storage.emptyDir.sizeLimit", "must not be negative, got %s", st.EmptyDir.SizeLimit.String())
		}
	case st.Ephemeral != nil:
		if st.Ephemeral.VolumeClaimTemplate == nil {
			return Invalid("spec.storage.ephemeral.volumeClaimTemplate", "is required")
		}
		return CheckClaimSpec("spec.storage.ephemeral.volumeClaimTemplate.spec", st.Ephemeral.VolumeClaimTemplate.Spec)
	case HasVolumeClaimTemplate(st):
		if n := st.VolumeClaimTemplate.Name; n != "" {
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				return Invalid("spec.storage.volumeClaimTemplate.metadata.name", "%q is not a valid volume name: %s", n, strings.Join(errs, "; "))
			}
		}
		return CheckClaimSpec("spec.storage.volumeClaimTemplate.spec", st.VolumeClaimTemplate.Spec)
	}
	return nil
}

// CheckClaimSpec refuses a PersistentVolumeClaim spec without a positive storage request.
func CheckClaimSpec(field string, spec corev1.PersistentVolumeClaimSpec) *SpecError {
	size, ok := spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return Invalid(field+".resources.requests.storage", "is required: the PersistentVolumeClaims could not be created without it")
	}
	if size.Sign() <= 0 {
		return Invalid(field+".resources.requests.storage", "must be positive, got %s", size.String())
	}
	return CheckResources(field+".resources", corev1.ResourceRequirements{Requests: spec.Resources.Requests, Limits: spec.Resources.Limits})
}

// HasVolumeClaimTemplate reports whether spec.storage.volumeClaimTemplate was written:
// the field is a struct, not a pointer, so "unset" is its zero value.
func HasVolumeClaimTemplate(st *monitoringv1.StorageSpec) bool {
	return st != nil && !apiequality.Semantic.DeepEqual(st.VolumeClaimTemplate, monitoringv1.EmbeddedPersistentVolumeClaim{})
}

// DataVolumeName is the name of the data volume: the PVC template's name when one is
// given, def otherwise.
func DataVolumeName(st *monitoringv1.StorageSpec, def string) string {
	if st != nil && st.EmptyDir == nil && st.Ephemeral == nil && st.VolumeClaimTemplate.Name != "" {
		return st.VolumeClaimTemplate.Name
	}
	return def
}

// VolumeClaimTemplate is the PVC template named name, or nil when the data lives in a pod
// volume. It carries exactly what the user wrote (plus the access mode the API requires)
// and no labels of ours: the templates of an existing StatefulSet cannot be changed, and
// they name the PVCs that hold the data.
func VolumeClaimTemplate(st *monitoringv1.StorageSpec, name string) *corev1.PersistentVolumeClaim {
	if st == nil || st.EmptyDir != nil || st.Ephemeral != nil || !HasVolumeClaimTemplate(st) {
		return nil
	}
	t := st.VolumeClaimTemplate.DeepCopy()
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   t.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: t.Labels, Annotations: t.Annotations},
		Spec:       t.Spec,
		Status:     t.Status,
	}
	if len(pvc.Spec.AccessModes) == 0 {
		pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return pvc
}

// DataVolumeSource is the pod volume holding the data, or nil when a PVC template does.
func DataVolumeSource(st *monitoringv1.StorageSpec) *corev1.VolumeSource {
	switch {
	case st != nil && st.EmptyDir != nil:
		return &corev1.VolumeSource{EmptyDir: st.EmptyDir.DeepCopy()}
	case st != nil && st.Ephemeral != nil:
		return &corev1.VolumeSource{Ephemeral: st.Ephemeral.DeepCopy()}
	case HasVolumeClaimTemplate(st):
		return nil
	}
	return &corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
}

// CheckPodMetadata checks spec.podMetadata's labels and annotations.
func CheckPodMetadata(pm *monitoringv1.EmbeddedObjectMetadata) *SpecError {
	if pm == nil {
		return nil
	}
	for _, k := range SortedKeys(pm.Labels) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return Invalid("spec.podMetadata.labels", "%q is not a valid label name: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(pm.Labels[k]); len(errs) > 0 {
			return Invalid("spec.podMetadata.labels."+k, "%q is not a valid label value: %s", pm.Labels[k], strings.Join(errs, "; "))
		}
	}
	for _, k := range SortedKeys(pm.Annotations) {
		if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
			return Invalid("spec.podMetadata.annotations", "%q is not a valid annotation name: %s", k, strings.Join(errs, "; "))
		}
	}
	return nil
}

// CheckObjectNames checks names the pods mount or run as.
func CheckObjectNames(serviceAccount string, secrets, configMaps []string) *SpecError {
	if serviceAccount != "" {
		if errs := validation.IsDNS1123Subdomain(serviceAccount); len(errs) > 0 {
			return Invalid("spec.serviceAccountName", "%q is not a valid ServiceAccount name: %s", serviceAccount, strings.Join(errs, "; "))
		}
	}
	for i, s := range secrets {
		if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
			return Invalid(fmt.Sprintf("spec.secrets[%d]", i), "%q is not a valid Secret name: %s", s, strings.Join(errs, "; "))
		}
	}
	for i, c := range configMaps {
		if errs := validation.IsDNS1123Subdomain(c); len(errs) > 0 {
			return Invalid(fmt.Sprintf("spec.configMaps[%d]", i), "%q is not a valid ConfigMap name: %s", c, strings.Join(errs, "; "))
		}
	}
	return nil
}

// CheckStatefulSetPolicies checks spec.podManagementPolicy and spec.updateStrategy.
func CheckStatefulSetPolicies(pm *monitoringv1.PodManagementPolicyType, us *monitoringv1.StatefulSetUpdateStrategy) *SpecError {
	if pm != nil {
		switch *pm {
		case monitoringv1.OrderedReadyPodManagement, monitoringv1.ParallelPodManagement:
		default:
			return Invalid("spec.podManagementPolicy", "%q is not one of OrderedReady, Parallel", *pm)
		}
	}
	if us != nil {
		switch us.Type {
		case monitoringv1.RollingUpdateStatefulSetStrategyType, monitoringv1.OnDeleteStatefulSetStrategyType:
		default:
			return Invalid("spec.updateStrategy.type", "%q is not one of RollingUpdate, OnDelete", us.Type)
		}
	}
	return nil
}

// ApplyStatefulSetPolicies sets the StatefulSet's pod management policy (Parallel unless
// the spec says otherwise) and update strategy (RollingUpdate unless it says otherwise).
func ApplyStatefulSetPolicies(sts *appsv1.StatefulSetSpec, pm *monitoringv1.PodManagementPolicyType, us *monitoringv1.StatefulSetUpdateStrategy) {
	sts.PodManagementPolicy = appsv1.ParallelPodManagement
	if pm != nil {
		sts.PodManagementPolicy = appsv1.PodManagementPolicyType(*pm)
	}
	sts.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}
	if us != nil {
		sts.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.StatefulSetUpdateStrategyType(us.Type)}
		if us.RollingUpdate != nil {
			sts.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: us.RollingUpdate.MaxUnavailable}
		}
	}
}

var (
	logLevels  = []string{"", "debug", "info", "warn", "error"}
	logFormats = []string{"", "logfmt", "json"}
)

// CheckLogFlags checks spec.logLevel and spec.logFormat.
func CheckLogFlags(level, format string) *SpecError {
	if !slices.Contains(logLevels, level) {
		return Invalid("spec.logLevel", "%q is not one of debug, info, warn, error", level)
	}
	if !slices.Contains(logFormats, format) {
		return Invalid("spec.logFormat", "%q is not one of logfmt, json", format)
	}
	return nil
}

// Defaults for a pod without spec.securityContext: the "nobody" user the Prometheus and
// Alertmanager images run as (so data written by an unconfigured existing deployment
// stays readable), and a group the kubelet hands the data volume to.
const (
	defaultRunAsUser  = 65534
	defaultRunAsGroup = 65534
	defaultFSGroup    = 2000
)

// PodSecurityContext passes the "restricted" Pod Security profile by default. A user's
// spec.securityContext is kept (OpenShift, for one, assigns user ids itself), with
// runAsNonRoot and the RuntimeDefault seccomp profile filled in when left out.
func PodSecurityContext(user *corev1.PodSecurityContext) *corev1.PodSecurityContext {
	if user == nil {
		return &corev1.PodSecurityContext{
			RunAsNonRoot:   Ptr(true),
			RunAsUser:      Ptr(int64(defaultRunAsUser)),
			RunAsGroup:     Ptr(int64(defaultRunAsGroup)),
			FSGroup:        Ptr(int64(defaultFSGroup)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}
	sc := user.DeepCopy()
	if sc.RunAsNonRoot == nil && (sc.RunAsUser == nil || *sc.RunAsUser != 0) {
		sc.RunAsNonRoot = Ptr(true)
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	return sc
}

// CheckPodSecurityContext refuses a negative user id.
func CheckPodSecurityContext(sc *corev1.PodSecurityContext) *SpecError {
	if sc != nil && sc.RunAsUser != nil && *sc.RunAsUser < 0 {
		return Invalid("spec.securityContext.runAsUser", "must not be negative, got %d", *sc.RunAsUser)
	}
	return nil
}

// ContainerSecurityContext is the "restricted" profile for every generated container.
func ContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: Ptr(false),
		ReadOnlyRootFilesystem:   Ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// DNS returns the pod's DNS policy and config from the API's types.
func DNS(policy *monitoringv1.DNSPolicy, config *monitoringv1.PodDNSConfig) (corev1.DNSPolicy, *corev1.PodDNSConfig) {
	var p corev1.DNSPolicy
	if policy != nil {
		p = corev1.DNSPolicy(*policy)
	}
	if config == nil {
		return p, nil
	}
	c := &corev1.PodDNSConfig{Nameservers: config.Nameservers, Searches: config.Searches}
	for _, o := range config.Options {
		c.Options = append(c.Options, corev1.PodDNSConfigOption{Name: o.Name, Value: o.Value})
	}
	return p, c
}

// HostAliases converts the API's host aliases.
func HostAliases(in []monitoringv1.HostAlias) []corev1.HostAlias {
	var out []corev1.HostAlias
	for _, h := range in {
		out = append(out, corev1.HostAlias{IP: h.IP, Hostnames: h.Hostnames})
	}
	return out
}

// MergeContainers applies the user's containers to the generated ones the way the
// existing operator does: a container whose name matches a generated one is a
// strategic-merge patch of it (fields set replace, lists merged by their keys: env by
// name, ports by containerPort, volumeMounts by mountPath); any other is added after
// the generated ones, in the user's order. field names the spec field for errors.
func MergeContainers(field string, generated, user []corev1.Container) ([]corev1.Container, *SpecError) {
	if len(user) == 0 {
		return generated, nil
	}
	type podContainers struct {
		Containers []corev1.Container `json:"containers"`
	}
	base, err := json.Marshal(podContainers{Containers: generated})
	if err != nil {
		return nil, Invalid(field, "%v", err)
	}
	patch, err := json.Marshal(podContainers{Containers: user})
	if err != nil {
		return nil, Invalid(field, "%v", err)
	}
	merged, err := strategicpatch.StrategicMergePatch(base, patch, corev1.PodSpec{})
	if err != nil {
		return nil, Invalid(field, "cannot be merged into the generated containers: %v", err)
	}
	var out podContainers
	if err := json.Unmarshal(merged, &out); err != nil {
		return nil, Invalid(field, "cannot be merged into the generated containers: %v", err)
	}
	// The merge keeps the generated order and appends new containers, but the order of
	// the appended ones follows the patch; make both explicit so the output never depends
	// on the merge library's choices.
	byName := make(map[string]corev1.Container, len(out.Containers))
	for _, c := range out.Containers {
		byName[c.Name] = c
	}
	result := make([]corev1.Container, 0, len(out.Containers))
	seen := map[string]bool{}
	for _, c := range generated {
		result = append(result, byName[c.Name])
		seen[c.Name] = true
	}
	for i, c := range user {
		if c.Name == "" {
			return nil, Invalid(fmt.Sprintf("%s[%d].name", field, i), "is required")
		}
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		result = append(result, byName[c.Name])
	}
	return result, nil
}

// PodLabels are a pod template's labels: spec.podMetadata.labels, which never override
// the selector labels, then the selector labels and extra (Lookout's own).
func PodLabels(pm *monitoringv1.EmbeddedObjectMetadata, selector, extra map[string]string) map[string]string {
	l := map[string]string{}
	if pm != nil {
		maps.Copy(l, pm.Labels)
	}
	maps.Copy(l, selector)
	maps.Copy(l, extra)
	return l
}

// PodAnnotations are a pod template's annotations: spec.podMetadata.annotations and the
// container kubectl picks by default.
func PodAnnotations(pm *monitoringv1.EmbeddedObjectMetadata, defaultContainer string) map[string]string {
	a := map[string]string{}
	if pm != nil {
		maps.Copy(a, pm.Annotations)
	}
	a["kubectl.kubernetes.io/default-container"] = defaultContainer
	return a
}

// OwnerReference points at a monitoring.coreos.com/v1 object; a controller one also
// blocks the owner's deletion until the garbage collector has handled the dependent.
func OwnerReference(kind, name string, uid types.UID, controller bool) metav1.OwnerReference {
	ref := metav1.OwnerReference{APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: kind, Name: name, UID: uid}
	if controller {
		ref.Controller = Ptr(true)
		ref.BlockOwnerDeletion = Ptr(true)
	}
	return ref
}

// ConfigVolumes are the volumes every workload's pod has for its generated configuration:
// the config Secret (volume configVolume), an in-memory emptyDir the reloader writes the
// expanded config to ("config-out": it inlines credentials, so it stays off the node's
// disk), the web-config Secret ("web-config") and, unless spec.storage is a claim
// template, the data volume dataVolume.
func ConfigVolumes(configVolume, configSecret, webConfigSecret, dataVolume string, storage *monitoringv1.StorageSpec) []corev1.Volume {
	vols := []corev1.Volume{
		{Name: configVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: configSecret}}},
		{Name: "config-out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "web-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: webConfigSecret}}},
	}
	if src := DataVolumeSource(storage); src != nil {
		vols = append(vols, corev1.Volume{Name: dataVolume, VolumeSource: *src})
	}
	return vols
}

// UserVolumes are the volumes of spec.secrets and spec.configMaps, one per name.
func UserVolumes(secrets, configMaps []string) []corev1.Volume {
	var vols []corev1.Volume
	for _, s := range Uniq(secrets) {
		vols = append(vols, corev1.Volume{Name: VolumeName("secret", s), VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}})
	}
	for _, c := range Uniq(configMaps) {
		vols = append(vols, corev1.Volume{Name: VolumeName("configmap", c), VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: c}}}})
	}
	return vols
}

// UserMounts mount UserVolumes read-only at <secretsDir>/<name> and <configMapsDir>/<name>.
func UserMounts(secrets, configMaps []string, secretsDir, configMapsDir string) []corev1.VolumeMount {
	var mounts []corev1.VolumeMount
	for _, s := range Uniq(secrets) {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeName("secret", s), MountPath: path.Join(secretsDir, s), ReadOnly: true})
	}
	for _, c := range Uniq(configMaps) {
		mounts = append(mounts, corev1.VolumeMount{Name: VolumeName("configmap", c), MountPath: path.Join(configMapsDir, c), ReadOnly: true})
	}
	return mounts
}

// HostNetwork runs the pod in the host's network namespace when on is set; unless the user
// chose a DNS policy, it becomes ClusterFirstWithHostNet so that cluster DNS names (peers,
// Alertmanagers, remote endpoints) still resolve, as the API documents.
func HostNetwork(spec *corev1.PodSpec, on bool) {
	if !on {
		return
	}
	spec.HostNetwork = true
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
}

// CheckUserVolumes checks spec.volumes and spec.volumeMounts against the generated volumes:
// a user volume must not take a generated volume's name (the pod would be refused), and a
// mount must name a volume of the pod.
func CheckUserVolumes(generated, user []corev1.Volume, mounts []corev1.VolumeMount) *SpecError {
	names := map[string]bool{}
	for _, v := range generated {
		names[v.Name] = true
	}
	for i, v := range user {
		field := fmt.Sprintf("spec.volumes[%d].name", i)
		if errs := validation.IsDNS1123Label(v.Name); len(errs) > 0 {
			return Invalid(field, "%q is not a valid volume name: %s", v.Name, strings.Join(errs, "; "))
		}
		if names[v.Name] {
			return Invalid(field, "%q is the name of a volume Lookout generates or of an earlier entry; choose another", v.Name)
		}
		names[v.Name] = true
	}
	for i, m := range mounts {
		if !names[m.Name] {
			return Invalid(fmt.Sprintf("spec.volumeMounts[%d].name", i), "%q names no volume of the pod; add it to spec.volumes", m.Name)
		}
		if !strings.HasPrefix(m.MountPath, "/") {
			return Invalid(fmt.Sprintf("spec.volumeMounts[%d].mountPath", i), "%q must be an absolute path", m.MountPath)
		}
	}
	return nil
}
