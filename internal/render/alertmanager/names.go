// Package alertmanager renders the cluster objects of one Alertmanager: its StatefulSet,
// the governing Service, the generated config Secret and the web-config Secret. The
// alertmanager.yaml itself is merged by the amconfig package. Pure, like all of render.
package alertmanager

import (
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Labels on what Lookout generates for an Alertmanager. The controller finds owned
// objects with LabelAlertmanager.
const (
	// LabelAlertmanager holds the name of the Alertmanager an object was generated for.
	LabelAlertmanager = "lookout.dev/alertmanager"

	labelAppName   = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelManagedBy = "app.kubernetes.io/managed-by"
	// labelAlertmanager is the existing operator's selector label.
	labelAlertmanager = "alertmanager"
	// labelOperatedAlertmanager is the existing operator's label on the governing Service.
	labelOperatedAlertmanager = "operated-alertmanager"

	appName = "alertmanager"
	// selectorManagedBy is the managed-by value in pod selectors, kept from the existing
	// operator so that a migrated StatefulSet keeps its (immutable) selector.
	selectorManagedBy = "prometheus-operator"
)

// Defaults and fixed names.
const (
	// DefaultVersion is the Alertmanager version deployed when spec.version is empty: the
	// existing operator's, so that a switch does not roll the pods back to an older release.
	DefaultVersion = "v0.33.1"
	// DefaultBaseImage is the image deployed, tagged with the version, when neither
	// spec.image nor spec.baseImage is set.
	DefaultBaseImage = "quay.io/prometheus/alertmanager"
	// DefaultGoverningServiceName is the headless Service shared by the Alertmanager pods
	// of a namespace unless spec.serviceName is set.
	DefaultGoverningServiceName = "alertmanager-operated"
	// ConfigSecretKey is the key of the gzipped alertmanager.yaml in the generated Secret.
	ConfigSecretKey = "alertmanager.yaml.gz"
	// UserConfigKey is the key of the base config in the user's Secret.
	UserConfigKey = "alertmanager.yaml"
	// WebConfigSecretKey is the key of the web config file in the web-config Secret.
	WebConfigSecretKey = "web-config.yaml"
	// DefaultRetention is --data.retention when spec.retention is empty.
	DefaultRetention = "120h"

	webPortName = "web"
	webPort     = 9093
	meshPort    = 9094
	// The mesh port names of the existing operator's governing Service.
	meshTCPPortName = "tcp-mesh"
	meshUDPPortName = "udp-mesh"
)

// StatefulSetName is the name of the StatefulSet.
func StatefulSetName(name string) string { return "alertmanager-" + name }

// ConfigSecretName is the Secret holding the generated, gzipped alertmanager.yaml.
func ConfigSecretName(name string) string { return "alertmanager-" + name + "-generated" }

// UserConfigSecretName is the Secret the base config is read from: spec.configSecret,
// else alertmanager-<name>.
func UserConfigSecretName(am *monitoringv1.Alertmanager) string {
	if am.Spec.ConfigSecret != "" {
		return am.Spec.ConfigSecret
	}
	return "alertmanager-" + am.Name
}

// WebConfigSecretName is the Secret holding the web config file.
func WebConfigSecretName(name string) string { return "alertmanager-" + name + "-web-config" }

// VolumeClaimTemplateName is the name of the data volume and PVC template.
func VolumeClaimTemplateName(name string) string { return "alertmanager-" + name + "-db" }

// GoverningServiceName is the headless Service named in the StatefulSet's serviceName.
func GoverningServiceName(am *monitoringv1.Alertmanager) string {
	if am.Spec.ServiceName != nil && *am.Spec.ServiceName != "" {
		return *am.Spec.ServiceName
	}
	return DefaultGoverningServiceName
}

// PeerAddress is how replica i is reached by its peers: its DNS name under the governing
// Service and the mesh port.
func PeerAddress(am *monitoringv1.Alertmanager, i int32) string {
	return StatefulSetName(am.Name) + "-" + strconv.Itoa(int(i)) + "." + GoverningServiceName(am) + ":" + strconv.Itoa(meshPort)
}

// SelectorLabels are the StatefulSet's pod selector: the existing operator's labels.
func SelectorLabels(name string) map[string]string {
	return map[string]string{
		labelAppName:      appName,
		labelManagedBy:    selectorManagedBy,
		labelInstance:     name,
		labelAlertmanager: name,
	}
}

// Replicas is spec.replicas, 1 when unset.
func Replicas(am *monitoringv1.Alertmanager) int32 { return workload.ValueOr(am.Spec.Replicas, 1) }

func ownerReference(am *monitoringv1.Alertmanager, controller bool) metav1.OwnerReference {
	return workload.OwnerReference(monitoringv1.AlertmanagersKind, am.Name, am.UID, controller)
}

func ownedMeta(am *monitoringv1.Alertmanager, name string) metav1.ObjectMeta {
	return workload.OwnedMeta(monitoringv1.AlertmanagersKind, appName, LabelAlertmanager, am, name)
}

// ConfigDir is where the generated Secret (config and template files) is mounted in the
// Alertmanager container.
const ConfigDir = configDir
