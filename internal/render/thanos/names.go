// Package thanos renders what Thanos adds to a cluster: the objects of one ThanosRuler
// (its StatefulSet, governing Service and rule ConfigMaps) and the pieces of a Thanos
// container that the ruler and the Prometheus sidecar share (image, secret-backed
// configuration, gRPC TLS). Pure, like all of render.
package thanos

import (
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Labels on what Lookout generates for a ThanosRuler. The controller finds owned objects
// with LabelThanosRuler.
const (
	// LabelThanosRuler holds the name of the ThanosRuler an object was generated for.
	LabelThanosRuler = "lookout.dev/thanos-ruler"

	labelAppName   = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelManagedBy = "app.kubernetes.io/managed-by"
	// labelVersion on the pods holds the Thanos version they run, as with the existing
	// operator.
	labelVersion = "app.kubernetes.io/version"
	// labelRuleConfigMapOwner is the existing operator's label on rule ConfigMaps.
	labelRuleConfigMapOwner = "thanos-ruler-name"
	// labelThanosRuler is the existing operator's selector label.
	labelThanosRuler = "thanos-ruler"

	appName = "thanos-ruler"
	// selectorManagedBy is kept from the existing operator so that a migrated
	// StatefulSet keeps its (immutable) selector.
	selectorManagedBy = "prometheus-operator"
)

// Defaults and fixed names.
const (
	// DefaultVersion is the Thanos version deployed when spec.version is empty.
	DefaultVersion = "v0.41.0"
	// DefaultBaseImage is the image deployed, tagged with the version, when spec.image is
	// not set.
	DefaultBaseImage = "quay.io/thanos/thanos"
	// DefaultGoverningServiceName is the headless Service shared by the ThanosRuler pods
	// of a namespace unless spec.serviceName is set.
	DefaultGoverningServiceName = "thanos-ruler-operated"
	// DefaultEvaluationInterval and DefaultRetention are the existing operator's.
	DefaultEvaluationInterval = "15s"
	DefaultRetention          = "24h"
	// RulesDir holds one directory per rule ConfigMap.
	RulesDir = "/etc/thanos/rules"
	// RuleConfigMapSlots is how many rule ConfigMap names every pod mounts (optional).
	RuleConfigMapSlots = 8
	// ReplicaLabel tells the replicas' alerts and series apart; dropped from alerts so
	// Alertmanager deduplicates them.
	ReplicaLabel = "thanos_ruler_replica"

	// WebPort and GRPCPort are Thanos's defaults.
	WebPort     = 10902
	GRPCPort    = 10901
	webPortName = "web"
	// GRPCPortName names the gRPC port on the pods and governing Services.
	GRPCPortName = "grpc"

	dataDir = "/thanos/data"
)

// StatefulSetName is the name of the StatefulSet.
func StatefulSetName(name string) string { return "thanos-ruler-" + name }

// RuleConfigMapName is the name of rule ConfigMap i.
func RuleConfigMapName(name string, i int) string {
	return "thanos-ruler-" + name + "-rulefiles-" + strconv.Itoa(i)
}

// VolumeClaimTemplateName is the name of the data volume and PVC template.
func VolumeClaimTemplateName(name string) string { return "thanos-ruler-" + name + "-data" }

// GoverningServiceName is the headless Service named in the StatefulSet's serviceName.
func GoverningServiceName(tr *monitoringv1.ThanosRuler) string {
	if tr.Spec.ServiceName != nil && *tr.Spec.ServiceName != "" {
		return *tr.Spec.ServiceName
	}
	return DefaultGoverningServiceName
}

// SelectorLabels are the StatefulSet's pod selector: the existing operator's labels.
func SelectorLabels(name string) map[string]string {
	return map[string]string{
		labelAppName:     appName,
		labelManagedBy:   selectorManagedBy,
		labelInstance:    name,
		labelThanosRuler: name,
	}
}

// Replicas is spec.replicas, 1 when unset.
func Replicas(tr *monitoringv1.ThanosRuler) int32 { return workload.ValueOr(tr.Spec.Replicas, 1) }

func ownerReference(tr *monitoringv1.ThanosRuler, controller bool) metav1.OwnerReference {
	return workload.OwnerReference(monitoringv1.ThanosRulerKind, tr.Name, tr.UID, controller)
}

func ownedMeta(tr *monitoringv1.ThanosRuler, name string) metav1.ObjectMeta {
	return workload.OwnedMeta(monitoringv1.ThanosRulerKind, appName, LabelThanosRuler, tr, name)
}

func ruleFiles(tr *monitoringv1.ThanosRuler) workload.RuleFiles {
	return workload.RuleFiles{Name: func(i int) string { return RuleConfigMapName(tr.Name, i) }, Dir: RulesDir, Slots: RuleConfigMapSlots}
}
