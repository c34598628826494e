package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PostgresProxySpec is PGO's spec.proxy: a connection pooler in front of the
// primary.
type PostgresProxySpec struct {
	// PgBouncer pods that pool client connections to the current primary and
	// hold them through a switchover.
	// +kubebuilder:validation:Required
	PGBouncer *PGBouncerPodSpec `json:"pgBouncer"`
}

// PGBouncerPodSpec is a PgBouncer Deployment (<cluster>-pgbouncer) with its
// Service. Its pods run `lookout pgbouncer`, which writes PgBouncer's
// configuration and runs Debian's pgbouncer as its child.
type PGBouncerPodSpec struct {
	// Number of PgBouncer pods.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// Port on which PgBouncer listens for clients.
	// +optional
	// +kubebuilder:default=5432
	// +kubebuilder:validation:Minimum=1024
	Port *int32 `json:"port,omitempty"`

	// Image that runs `/bin/lookout pgbouncer` and has pgbouncer installed;
	// the operator's PostgreSQL image when empty.
	// +optional
	Image string `json:"image,omitempty"`

	// Compute resources of the PgBouncer container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Scheduling constraints of the PgBouncer pods (checked by the apiserver
	// when the Deployment is written).
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// PgBouncer's configuration.
	// +optional
	Config PGBouncerConfiguration `json:"config,omitempty"`

	// The Service <cluster>-pgbouncer.
	// +optional
	Service *ServiceSpec `json:"service,omitempty"`

	// The least number of PgBouncer pods a voluntary disruption leaves
	// available (a PodDisruptionBudget); one when replicas is more than one.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`

	// Documented by PGO, not honoured by Lookout (refused when set).

	// +optional
	Metadata *apiextensionsv1.JSON `json:"metadata,omitempty"`
	// +optional
	CustomTLSSecret *apiextensionsv1.JSON `json:"customTLSSecret,omitempty"`
	// +optional
	Containers *apiextensionsv1.JSON `json:"containers,omitempty"`
	// +optional
	PriorityClassName *apiextensionsv1.JSON `json:"priorityClassName,omitempty"`
	// +optional
	Sidecars *apiextensionsv1.JSON `json:"sidecars,omitempty"`
}

// PGBouncerConfiguration is PgBouncer's configuration, in PGO's shape.
type PGBouncerConfiguration struct {
	// Settings of the [pgbouncer] section. Those Lookout owns (listening,
	// authentication, TLS, files, admin users) are refused by name.
	// +optional
	Global map[string]string `json:"global,omitempty"`

	// Databases of the [databases] section: the database a client asks for
	// and a libpq-style connection string without host, hostaddr or port
	// (Lookout points every database at the current primary). Without it,
	// one "*" entry for the primary.
	// +optional
	Databases map[string]string `json:"databases,omitempty"`

	// Per-user settings of the [users] section, e.g. "pool_mode=session".
	// +optional
	Users map[string]string `json:"users,omitempty"`

	// Documented by PGO, not honoured by Lookout (refused when set): files
	// included in pgbouncer.ini could change what Lookout owns.

	// +optional
	Files *apiextensionsv1.JSON `json:"files,omitempty"`
}

// PGBouncerPodStatus is PGO's status.proxy.pgBouncer.
type PGBouncerPodStatus struct {
	// Total number of ready pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Total number of non-terminated pods.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}

// PostgresProxyStatus is PGO's status.proxy.
type PostgresProxyStatus struct {
	// +optional
	PGBouncer PGBouncerPodStatus `json:"pgBouncer,omitempty"`
}
