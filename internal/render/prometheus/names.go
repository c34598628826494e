package prometheus

import (
	"github.com/lookout-operator/lookout/internal/render/workload"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations Lookout puts on what it generates. The controller finds owned
// objects with LabelPrometheus (+ LabelPrometheusNamespace for objects outside the
// Prometheus's namespace, which cannot carry an owner reference).
const (
	// LabelPrometheus holds the name of the Prometheus an object was generated for.
	LabelPrometheus = "lookout.dev/prometheus"
	// LabelPrometheusNamespace holds the namespace of that Prometheus.
	LabelPrometheusNamespace = "lookout.dev/prometheus-namespace"
	// LabelShared marks an object several Prometheus objects co-own (the governing
	// Service): each owner must apply it under its own field manager, see Shared.
	LabelShared = workload.LabelShared
	// AnnotationOwner is "<namespace>/<name>" of the Prometheus that owns an object
	// without an owner reference (cluster-scoped RBAC, RBAC in other namespaces); the
	// controller deletes those objects from its finalizer.
	AnnotationOwner = "lookout.dev/owner"
)

// Labels that the existing operator puts on Prometheus pods and StatefulSet selectors
// (docs/compatibility.md). They must stay exactly like this: a StatefulSet selector is immutable.
const (
	labelAppName    = "app.kubernetes.io/name"
	labelInstance   = "app.kubernetes.io/instance"
	labelManagedBy  = "app.kubernetes.io/managed-by"
	labelOpName     = "operator.prometheus.io/name"
	labelShard      = "operator.prometheus.io/shard"
	labelPrometheus = "prometheus"
	// labelVersion is the Prometheus version on the pods.
	labelVersion = "app.kubernetes.io/version"

	// selectorManagedBy is the managed-by value in pod selectors, kept from the existing
	// operator so that migrated StatefulSets keep their selector.
	selectorManagedBy = "prometheus-operator"
	// labelOperatedPrometheus is the existing operator's label on the governing Service.
	labelOperatedPrometheus = "operated-prometheus"

	annotationDefaultContainer = "kubectl.kubernetes.io/default-container"
)

// Defaults and fixed names.
const (
	// DefaultOperatorName is the app.kubernetes.io/managed-by value when Options.OperatorName is empty.
	DefaultOperatorName = "lookout"
	// DefaultVersion is the Prometheus version deployed when spec.version is empty.
	DefaultVersion = "v3.15.0"
	// DefaultBaseImage is the Prometheus image deployed, tagged with the version, when
	// neither spec.image nor spec.baseImage is set.
	DefaultBaseImage = "quay.io/prometheus/prometheus"
	// DefaultGoverningServiceName is the headless Service shared by all Prometheus pods of
	// a namespace unless spec.serviceName is set.
	DefaultGoverningServiceName = "prometheus-operated"
	// ConfigSecretKey is the key of the gzipped prometheus.yaml in the config Secret.
	ConfigSecretKey = "prometheus.yaml.gz"
	// WebConfigSecretKey is the key of the web config file in the web-config Secret.
	WebConfigSecretKey = "web-config.yaml"

	defaultRetention = "24h"
	webPortName      = "web"
	webPort          = 9090
	reloaderPortName = workload.ReloaderPortName
	reloaderPort     = workload.ReloaderPort
	storageDir       = "/prometheus"
	// storageSubPath is where the existing operator keeps the TSDB inside the data volume
	// (unless storage.disableMountSubPath); the same sub path keeps data after a migration.
	storageSubPath = "prometheus-db"

	// maxStatefulSetNameLength leaves room for the "-<10 character hash>" the StatefulSet
	// controller appends in the controller-revision-hash label, which is limited to 63.
	maxStatefulSetNameLength = 52
)

// ConfigSecretName is the name of the Secret holding the gzipped prometheus.yaml.
func ConfigSecretName(name string) string { return Server.ConfigSecretName(name) }

// WebConfigSecretName is the name of the Secret holding the web config file.
func WebConfigSecretName(name string) string { return Server.WebConfigSecretName(name) }

// ServiceName is the name of the ClusterIP Service in front of all pods of a Prometheus.
func ServiceName(name string) string { return Server.ServiceName(name) }

// StatefulSetName is the name of the StatefulSet running one shard.
func StatefulSetName(name string, shard int32) string { return Server.StatefulSetName(name, shard) }

// VolumeClaimTemplateName is the name of the data volume (and of the PVC template, unless
// spec.storage.volumeClaimTemplate.metadata.name overrides it).
func VolumeClaimTemplateName(name string) string { return Server.VolumeClaimTemplateName(name) }

// GoverningServiceName is the headless Service named in the StatefulSets' serviceName.
func GoverningServiceName(p *monitoringv1.Prometheus) string {
	if p.Spec.ServiceName != nil && *p.Spec.ServiceName != "" {
		return *p.Spec.ServiceName
	}
	return FlavourOf(p).GoverningService
}

// WebPortName is the name of Prometheus's web port (9090) on the container, the probes
// and the Services: spec.portName, "web" when empty, as with the existing operator
// (kube-prometheus-stack sets "http-web" so that a service mesh picks the protocol).
func WebPortName(p *monitoringv1.Prometheus) string {
	if p.Spec.PortName != "" {
		return p.Spec.PortName
	}
	return webPortName
}

// ServiceAccountName is the ServiceAccount the pods run as: spec.serviceAccountName, else
// the namespace's "default", as with the existing operator (the pod template leaves the
// field empty, as it does; the apiserver then runs the pods as "default"). The generated
// RBAC binds this account.
func ServiceAccountName(p *monitoringv1.Prometheus) string {
	if p.Spec.ServiceAccountName != "" {
		return p.Spec.ServiceAccountName
	}
	return defaultServiceAccount
}

// defaultServiceAccount is the account every namespace has, which pods that name none run as.
const defaultServiceAccount = "default"

// RBACName is the name of every Role, RoleBinding, ClusterRole and ClusterRoleBinding
// generated for a Prometheus. RBAC names may contain ':' while namespace and object names
// may not, so the name cannot collide with another Prometheus's (a '-' separator would
// make ns "a-b"/name "c" and ns "a"/name "b-c" collide in a shared discovery namespace).
func RBACName(p *monitoringv1.Prometheus) string {
	return "lookout:" + FlavourOf(p).rbacKind + ":" + p.Namespace + ":" + p.Name
}

// ShardCount is the number of StatefulSets: spec.shards, at least 1.
func ShardCount(p *monitoringv1.Prometheus) int32 {
	if p.Spec.Shards == nil || *p.Spec.Shards < 1 {
		return 1
	}
	return *p.Spec.Shards
}

// PodLabels are the labels every pod of the Prometheus carries, whatever its shard; they
// select the pods of all shards (the ClusterIP Service, status.selector).
func PodLabels(name string) map[string]string { return Server.PodLabels(name) }

// SelectorLabels are the StatefulSet selector of one shard: PodLabels plus the shard.
func SelectorLabels(name string, shard int32) map[string]string {
	return Server.SelectorLabels(name, shard)
}

// Shared reports whether obj is co-owned by several Prometheus objects. Apply must send
// such an object under a field manager of its own per owner (e.g. "lookout/<owner uid>"):
// with one manager, each owner's apply would remove the others' owner references, and
// deleting whichever owner came last would delete the object under the others. When a
// Prometheus stops wanting a shared object, the controller removes only its own owner
// reference (apply an empty configuration under that manager) instead of deleting it.
func Shared(obj metav1.Object) bool { return workload.Shared(obj) }

func operatorName(opts Options) string {
	if opts.OperatorName != "" {
		return opts.OperatorName
	}
	return DefaultOperatorName
}

// objectLabels are the labels of every generated object but the shared governing Service.
func objectLabels(p *monitoringv1.Prometheus, opts Options) map[string]string {
	return map[string]string{
		labelAppName:             FlavourOf(p).AppName,
		labelInstance:            p.Name,
		labelManagedBy:           operatorName(opts),
		FlavourOf(p).OwnerLabel:  p.Name,
		LabelPrometheusNamespace: p.Namespace,
	}
}

func ownerReference(p *monitoringv1.Prometheus, controller bool) metav1.OwnerReference {
	return FlavourOf(p).ownerReference(p.Name, p.UID, controller)
}

// ownedMeta is the metadata of a namespaced object in the Prometheus's namespace.
func ownedMeta(p *monitoringv1.Prometheus, opts Options, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       p.Namespace,
		Labels:          objectLabels(p, opts),
		OwnerReferences: []metav1.OwnerReference{ownerReference(p, true)},
	}
}

// unownedMeta is the metadata of an object that cannot point at the Prometheus: a
// cluster-scoped one (namespace "") or one in another namespace, where an owner reference
// would be treated as absent by the garbage collector and the object deleted at once.
func unownedMeta(p *monitoringv1.Prometheus, opts Options, namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Namespace:   namespace,
		Labels:      objectLabels(p, opts),
		Annotations: map[string]string{AnnotationOwner: p.Namespace + "/" + p.Name},
	}
}

func ptrTo[T any](v T) *T { return &v }

// AnnotationService, set to "true" on a Prometheus, makes Lookout create the ClusterIP
// Service prometheus-<name> in front of every shard's pods (web and reloader ports).
// Without it no such Service is created, as with prometheus-operator.
const AnnotationService = "lookout.dev/service"
