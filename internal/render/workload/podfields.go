package workload

import (
	"reflect"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// PodFields are the pod-level spec fields the workload kinds share (Alertmanager,
// ThanosRuler, ...), gathered so that each kind checks and renders them the same way.
type PodFields struct {
	Replicas, MinReadySeconds     *int32
	TerminationGracePeriodSeconds *int64
	ImagePullPolicy               corev1.PullPolicy
	ImagePullSecrets              []corev1.LocalObjectReference
	Resources                     corev1.ResourceRequirements
	Storage                       *monitoringv1.StorageSpec
	PodMetadata                   *monitoringv1.EmbeddedObjectMetadata
	PodManagementPolicy           *monitoringv1.PodManagementPolicyType
	UpdateStrategy                *monitoringv1.StatefulSetUpdateStrategy
	SecurityContext               *corev1.PodSecurityContext
	Containers, InitContainers    []corev1.Container
	NodeSelector                  map[string]string
	Tolerations                   []corev1.Toleration
	Affinity                      *corev1.Affinity
	TopologySpreadConstraints     []corev1.TopologySpreadConstraint
	PriorityClassName             string
	SchedulerName                 string
	EnableServiceLinks            *bool
	HostUsers                     *bool
	HostAliases                   []monitoringv1.HostAlias
	DNSPolicy                     *monitoringv1.DNSPolicy
	DNSConfig                     *monitoringv1.PodDNSConfig
}

// PodFieldsOf copies the fields of a workload kind's spec (a pointer to the API's spec
// struct) that have a PodFields field of the same name and type. The kinds' spec types
// share these names, so a new kind needs no field-by-field copy of its own.
func PodFieldsOf(spec any) PodFields {
	var f PodFields
	src := reflect.ValueOf(spec).Elem()
	dst := reflect.ValueOf(&f).Elem()
	for i := range dst.NumField() {
		field := dst.Type().Field(i)
		if v := src.FieldByName(field.Name); v.IsValid() && v.Type() == field.Type {
			dst.Field(i).Set(v)
		}
	}
	return f
}

// StatefulSet is the StatefulSet running spec: replicas (already defaulted), the
// immutable selector, the pod template's labels (spec.podMetadata's, then the selector's
// and extra) and annotations, the policies, and a PVC template named claim when
// spec.storage asks for one.
func (f PodFields) StatefulSet(meta metav1.ObjectMeta, replicas int32, selector, extra map[string]string, serviceName, defaultContainer, claim string, spec corev1.PodSpec) *appsv1.StatefulSet {
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: meta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:        Ptr(replicas),
			Selector:        &metav1.LabelSelector{MatchLabels: selector},
			ServiceName:     serviceName,
			MinReadySeconds: Value(f.MinReadySeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      PodLabels(f.PodMetadata, selector, extra),
					Annotations: PodAnnotations(f.PodMetadata, defaultContainer),
				},
				Spec: spec,
			},
		},
	}
	ApplyStatefulSetPolicies(&sts.Spec, f.PodManagementPolicy, f.UpdateStrategy)
	if pvc := VolumeClaimTemplate(f.Storage, claim); pvc != nil {
		sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{*pvc}
	}
	return sts
}

// Check refuses values that would make a broken StatefulSet or pod, naming the field.
func (f PodFields) Check() *SpecError {
	for _, c := range []struct {
		field string
		v     *int32
	}{{"spec.replicas", f.Replicas}, {"spec.minReadySeconds", f.MinReadySeconds}} {
		if c.v != nil && *c.v < 0 {
			return Invalid(c.field, "must not be negative, got %d", *c.v)
		}
	}
	if f.TerminationGracePeriodSeconds != nil && *f.TerminationGracePeriodSeconds < 0 {
		return Invalid("spec.terminationGracePeriodSeconds", "must not be negative, got %d", *f.TerminationGracePeriodSeconds)
	}
	switch f.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent:
	default:
		return Invalid("spec.imagePullPolicy", "%q is not one of Always, Never, IfNotPresent", f.ImagePullPolicy)
	}
	if err := CheckResources("spec.resources", f.Resources); err != nil {
		return err
	}
	if err := CheckStorage(f.Storage); err != nil {
		return err
	}
	if err := CheckPodMetadata(f.PodMetadata); err != nil {
		return err
	}
	if err := CheckStatefulSetPolicies(f.PodManagementPolicy, f.UpdateStrategy); err != nil {
		return err
	}
	if err := CheckPodSecurityContext(f.SecurityContext); err != nil {
		return err
	}
	if _, err := MergeContainers("spec.containers", nil, f.Containers); err != nil {
		return err
	}
	if _, err := MergeContainers("spec.initContainers", nil, f.InitContainers); err != nil {
		return err
	}
	return nil
}

// PodSpec is the pod spec with the generated containers (patched by spec.containers and
// spec.initContainers) and volumes, and the scheduling fields as the spec sets them;
// defaultGrace is the termination grace period when the spec sets none.
func (f PodFields) PodSpec(containers, initContainers []corev1.Container, volumes []corev1.Volume, serviceAccount string, defaultGrace int64) (corev1.PodSpec, *SpecError) {
	containers, err := MergeContainers("spec.containers", containers, f.Containers)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	initContainers, err = MergeContainers("spec.initContainers", initContainers, f.InitContainers)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	spec := corev1.PodSpec{
		InitContainers:                initContainers,
		Containers:                    containers,
		Volumes:                       volumes,
		ServiceAccountName:            serviceAccount,
		SecurityContext:               PodSecurityContext(f.SecurityContext),
		TerminationGracePeriodSeconds: Ptr(ValueOr(f.TerminationGracePeriodSeconds, defaultGrace)),
		NodeSelector:                  f.NodeSelector,
		Tolerations:                   f.Tolerations,
		Affinity:                      f.Affinity,
		TopologySpreadConstraints:     f.TopologySpreadConstraints,
		PriorityClassName:             f.PriorityClassName,
		SchedulerName:                 f.SchedulerName,
		ImagePullSecrets:              f.ImagePullSecrets,
		EnableServiceLinks:            f.EnableServiceLinks,
		HostUsers:                     f.HostUsers,
		HostAliases:                   HostAliases(f.HostAliases),
	}
	spec.DNSPolicy, spec.DNSConfig = DNS(f.DNSPolicy, f.DNSConfig)
	return spec, nil
}

// Unclassified lists the fields of a spec type (by Go name and JSON name) that are in
// neither honoured (Go names) nor refused (JSON paths "spec.<json name>"): every field a
// kind does not honour must be refused by name, and the kinds' tests use this to notice a
// field the API adds.
func Unclassified(spec reflect.Type, honoured []string, refused []string) []string {
	var out []string
	for i := range spec.NumField() {
		f := spec.Field(i)
		json, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !slices.Contains(honoured, f.Name) && !slices.Contains(refused, "spec."+json) {
			out = append(out, f.Name+" ("+json+")")
		}
	}
	return out
}

// CheckRefusal reports whether err is an UnsupportedField error naming field.
func CheckRefusal(err error, field string) bool {
	se, ok := err.(*SpecError)
	return ok && se.Reason == ReasonUnsupportedField && strings.Contains(se.Message, field)
}

// maxStatefulSetNameLength keeps the pods' controller-revision-hash label (the name plus
// a hash) within 63 characters.
const maxStatefulSetNameLength = 52

// CheckNames refuses an object name that cannot name its StatefulSet (statefulSet), and
// a spec.serviceName that cannot name a Service.
func CheckNames(name, statefulSet string, serviceName *string) *SpecError {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return Invalid("metadata.name", "%q cannot name the generated StatefulSet: %s", name, strings.Join(errs, "; "))
	}
	if len(statefulSet) > maxStatefulSetNameLength {
		return Invalid("metadata.name", "the StatefulSet name %q is %d characters long, more than the %d a StatefulSet can have (its pods' controller-revision-hash label is limited to 63); use a shorter name",
			statefulSet, len(statefulSet), maxStatefulSetNameLength)
	}
	if serviceName != nil && *serviceName != "" {
		if errs := validation.IsDNS1035Label(*serviceName); len(errs) > 0 {
			return Invalid("spec.serviceName", "%q is not a valid Service name: %s", *serviceName, strings.Join(errs, "; "))
		}
	}
	return nil
}

// OwnedMeta is the metadata of object name generated for owner, a monitoring.coreos.com/v1
// workload of kind: in the owner's namespace, controlled by it, labelled with the
// app.kubernetes.io labels (app, the owner's name as instance, managed by Lookout) and
// ownerLabel set to the owner's name, by which the controller finds what it owns.
func OwnedMeta(kind, app, ownerLabel string, owner metav1.Object, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: owner.GetNamespace(),
		Labels: map[string]string{
			"app.kubernetes.io/name":       app,
			"app.kubernetes.io/instance":   owner.GetName(),
			"app.kubernetes.io/managed-by": "lookout",
			ownerLabel:                     owner.GetName(),
		},
		OwnerReferences: []metav1.OwnerReference{OwnerReference(kind, owner.GetName(), owner.GetUID(), true)},
	}
}
