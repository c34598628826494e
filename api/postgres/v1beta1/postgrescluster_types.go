package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pgc,categories=postgres-operator
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`,description="Ready instances out of the desired ones"
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.primary`,description="The instance that is primary"
// +kubebuilder:printcolumn:name="Version",type=integer,JSONPath=`.spec.postgresVersion`,description="PostgreSQL major version"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PostgresCluster is a replicated PostgreSQL: a primary and streaming
// replicas, the Services and Secrets applications connect with, and the
// monitoring of it.
type PostgresCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PostgresClusterSpec   `json:"spec,omitempty"`
	Status PostgresClusterStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PostgresClusterList is a list of PostgresClusters.
type PostgresClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgresCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PostgresCluster{}, &PostgresClusterList{})
}

// PostgresClusterSpec is the desired state of a PostgresCluster. The fields
// of PGO's API that Lookout does not honour are kept as written (any JSON,
// x-kubernetes-preserve-unknown-fields) so that a PGO manifest applies, and
// refused by name when set.
type PostgresClusterSpec struct {
	// The major version of PostgreSQL; the operator refuses a major it has no
	// binaries for, naming those it has.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=18
	PostgresVersion int `json:"postgresVersion"`

	// The image of the PostgreSQL containers; the operator's default for the
	// major version when empty.
	// +optional
	Image string `json:"image,omitempty"`

	// The port PostgreSQL listens on.
	// +optional
	// +kubebuilder:default=5432
	// +kubebuilder:validation:Minimum=1024
	Port *int32 `json:"port,omitempty"`

	// The sets of PostgreSQL instances that replicate the data of the cluster.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	InstanceSets []PostgresInstanceSetSpec `json:"instances"`

	// Users to create in PostgreSQL and the databases they own. Without it,
	// one user and one database named after the cluster; an empty list
	// creates none. Removing a user drops neither the role nor its access.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Users []PostgresUserSpec `json:"users,omitempty"`

	// +optional
	Patroni *PatroniSpec `json:"patroni,omitempty"`

	// The Service in front of the primary (<cluster>-primary).
	// +optional
	Service *ServiceSpec `json:"service,omitempty"`

	// The Service in front of the replicas (<cluster>-replicas).
	// +optional
	ReplicaService *ServiceSpec `json:"replicaService,omitempty"`

	// pgBackRest archiving to repositories, scheduled and manual backups.
	// +optional
	Backups *Backups `json:"backups,omitempty"`

	// What a new cluster is restored from instead of initdb.
	// +optional
	DataSource *DataSource `json:"dataSource,omitempty"`

	// Stops PostgreSQL: every instance is scaled to zero; Services, Secrets
	// and volumes stay.
	// +optional
	Shutdown *bool `json:"shutdown,omitempty"`

	// Suspends the rollout of spec changes: the operator changes nothing it
	// runs until it is unset.
	// +optional
	Paused *bool `json:"paused,omitempty"`

	// A connection pooler (PgBouncer) in front of the primary; see
	// pgbouncer_types.go.
	// +optional
	Proxy *PostgresProxySpec `json:"proxy,omitempty"`

	// Documented by PGO, not honoured by Lookout (refused when set).

	// +optional
	Metadata *apiextensionsv1.JSON `json:"metadata,omitempty"`
	// +optional
	CustomTLSSecret *apiextensionsv1.JSON `json:"customTLSSecret,omitempty"`
	// +optional
	CustomReplicationClientTLSSecret *apiextensionsv1.JSON `json:"customReplicationTLSSecret,omitempty"`
	// +optional
	DatabaseInitSQL *apiextensionsv1.JSON `json:"databaseInitSQL,omitempty"`
	// +optional
	DisableDefaultPodScheduling *apiextensionsv1.JSON `json:"disableDefaultPodScheduling,omitempty"`
	// +optional
	ImagePullPolicy *apiextensionsv1.JSON `json:"imagePullPolicy,omitempty"`
	// +optional
	ImagePullSecrets *apiextensionsv1.JSON `json:"imagePullSecrets,omitempty"`
	// +optional
	OpenShift *apiextensionsv1.JSON `json:"openshift,omitempty"`
	// +optional
	PostGISVersion *apiextensionsv1.JSON `json:"postGISVersion,omitempty"`
	// +optional
	UserInterface *apiextensionsv1.JSON `json:"userInterface,omitempty"`
	// +optional
	Monitoring *apiextensionsv1.JSON `json:"monitoring,omitempty"`
	// +optional
	Instrumentation *apiextensionsv1.JSON `json:"instrumentation,omitempty"`
	// +optional
	Standby *apiextensionsv1.JSON `json:"standby,omitempty"`
	// +optional
	SupplementalGroups *apiextensionsv1.JSON `json:"supplementalGroups,omitempty"`
	// +optional
	Config *apiextensionsv1.JSON `json:"config,omitempty"`
	// +optional
	Authentication *apiextensionsv1.JSON `json:"authentication,omitempty"`
}

// PostgresInstanceSetSpec is a set of PostgreSQL instances with the same pod
// and volume settings.
type PostgresInstanceSetSpec struct {
	// Names the set in object names, pod host names and labels; "00", "01"
	// ... (its index) when empty. The cluster's name and this one together
	// are at most 46 characters.
	// +optional
	// +kubebuilder:default=""
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	Name string `json:"name"`

	// The number of instances of the set. PGO's minimum is 1; Lookout takes
	// 0 for a set as long as another set has instances.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// The PersistentVolumeClaim of each instance's data directory (pgdata).
	// +kubebuilder:validation:Required
	DataVolumeClaimSpec corev1.PersistentVolumeClaimSpec `json:"dataVolumeClaimSpec"`

	// A separate PersistentVolumeClaim for the write-ahead log (pgwal).
	// +optional
	WALVolumeClaimSpec *corev1.PersistentVolumeClaimSpec `json:"walVolumeClaimSpec,omitempty"`

	// Compute resources of the PostgreSQL container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Scheduling constraints of the instance pods (not validated by the CRD's
	// schema: the full core type would make it large; the apiserver checks
	// it when the StatefulSet is written).
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

	// The least number of instances of the set a voluntary disruption leaves
	// available (a PodDisruptionBudget per set).
	// +optional
	// +kubebuilder:validation:XIntOrString
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`

	// Documented by PGO, not honoured by Lookout (refused when set).

	// +optional
	Metadata *apiextensionsv1.JSON `json:"metadata,omitempty"`
	// +optional
	Containers *apiextensionsv1.JSON `json:"containers,omitempty"`
	// +optional
	PriorityClassName *apiextensionsv1.JSON `json:"priorityClassName,omitempty"`
	// +optional
	Sidecars *apiextensionsv1.JSON `json:"sidecars,omitempty"`
	// +optional
	TablespaceVolumes *apiextensionsv1.JSON `json:"tablespaceVolumes,omitempty"`
	// +optional
	Volumes *apiextensionsv1.JSON `json:"volumes,omitempty"`
}

// PostgresUserSpec is a PostgreSQL role, the databases it owns, and the
// Secret applications connect with (<cluster>-pguser-<name>).
type PostgresUserSpec struct {
	// The role's name; a lowercase PostgreSQL identifier that is also a DNS
	// label (it names a Secret).
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Databases the role owns; created when missing.
	// +listType=set
	// +optional
	Databases []string `json:"databases,omitempty"`

	// Role attributes added to CREATE/ALTER ROLE, e.g. "CREATEDB LOGIN".
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[^;]*$`
	// +optional
	Options string `json:"options,omitempty"`

	// +optional
	Password *PostgresPasswordSpec `json:"password,omitempty"`
}

// PostgresPasswordSpec says how a generated password looks.
type PostgresPasswordSpec struct {
	// ASCII (printable characters) or AlphaNumeric.
	// +kubebuilder:validation:Enum={ASCII,AlphaNumeric}
	// +kubebuilder:default=ASCII
	// +optional
	Type string `json:"type,omitempty"`
}

// Password types.
const (
	PasswordTypeASCII        = "ASCII"
	PasswordTypeAlphaNumeric = "AlphaNumeric"
)

// PatroniSpec holds PGO's Patroni settings; Lookout's instance manager
// honours those that mean something without Patroni.
type PatroniSpec struct {
	// Patroni's dynamic configuration. Lookout honours postgresql.parameters,
	// synchronous_mode, synchronous_mode_strict, synchronous_node_count and
	// maximum_lag_on_failover, and refuses any other key by name.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	DynamicConfiguration *apiextensionsv1.JSON `json:"dynamicConfiguration,omitempty"`

	// How long the primary's lease lasts without renewal: the longest a
	// primary that went silent (not provably dead) keeps its role.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=3
	LeaderLeaseDurationSeconds *int32 `json:"leaderLeaseDurationSeconds,omitempty"`

	// +optional
	Switchover *PatroniSwitchover `json:"switchover,omitempty"`

	// Documented by PGO, not honoured by Lookout (refused when set to other
	// than PGO's default, which the CRD fills in).

	// +optional
	// +kubebuilder:default=8008
	// +kubebuilder:validation:Minimum=1024
	Port *int32 `json:"port,omitempty"`
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	SyncPeriodSeconds *int32 `json:"syncPeriodSeconds,omitempty"`
	// +optional
	Logging *apiextensionsv1.JSON `json:"logging,omitempty"`
}

// PatroniSwitchover describes a switchover that the trigger-switchover
// annotation starts.
type PatroniSwitchover struct {
	// Whether switchovers may be triggered.
	Enabled bool `json:"enabled"`

	// The instance (pod) to become primary; any healthy replica when empty.
	// Required for a Failover.
	// +optional
	TargetInstance *string `json:"targetInstance,omitempty"`

	// Switchover (the primary must be healthy) or Failover (promote
	// targetInstance whatever the primary's state).
	// +kubebuilder:validation:Enum={Switchover,Failover}
	// +kubebuilder:default:=Switchover
	// +optional
	Type string `json:"type,omitempty"`
}

// Switchover types.
const (
	SwitchoverTypeSwitchover = "Switchover"
	SwitchoverTypeFailover   = "Failover"
)

// ServiceSpec is how a Service of the cluster is exposed.
type ServiceSpec struct {
	// +optional
	// +kubebuilder:validation:Enum={ClusterIP,NodePort,LoadBalancer}
	// +kubebuilder:default=ClusterIP
	Type string `json:"type"`

	// The node port of a NodePort or LoadBalancer Service; allocated when
	// empty.
	// +optional
	NodePort *int32 `json:"nodePort,omitempty"`

	// +optional
	// +kubebuilder:validation:Enum={Cluster,Local}
	InternalTrafficPolicy *corev1.ServiceInternalTrafficPolicy `json:"internalTrafficPolicy,omitempty"`

	// +optional
	// +kubebuilder:validation:Enum={Cluster,Local}
	ExternalTrafficPolicy *corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`

	// +optional
	// +kubebuilder:validation:Enum={SingleStack,PreferDualStack,RequireDualStack}
	IPFamilyPolicy *corev1.IPFamilyPolicy `json:"ipFamilyPolicy,omitempty"`

	// +optional
	// +listType=atomic
	IPFamilies []corev1.IPFamily `json:"ipFamilies,omitempty"`

	// Documented by PGO, not honoured by Lookout (refused when set).

	// +optional
	Metadata *apiextensionsv1.JSON `json:"metadata,omitempty"`
}
