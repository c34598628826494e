// Package postgres renders the desired objects of one PostgresCluster: a
// StatefulSet per instance, the Services and Secrets applications use (PGO's
// names and keys), the cluster's certificates, the instance managers' config
// and RBAC, disruption budgets and the monitoring of it. It is pure: what
// must be random (passwords, salts, keys, instance names) comes from the
// Secrets and StatefulSets that already exist, else from the seeded source in
// Inputs; the clock is Inputs.Now.
package postgres

import (
	"fmt"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// Object names, as PGO names them where applications or users see them.

// PrimaryServiceName is the read-write Service.
func PrimaryServiceName(cluster string) string { return cluster + "-primary" }

// ReplicaServiceName is the read-only Service.
func ReplicaServiceName(cluster string) string { return cluster + "-replicas" }

// PodsServiceName is the headless Service that gives each instance pod a DNS
// name (the StatefulSets' serviceName).
func PodsServiceName(cluster string) string { return cluster + "-pods" }

// UserSecretName is the Secret an application connects with.
func UserSecretName(cluster, user string) string { return cluster + "-pguser-" + user }

// ClusterCertSecretName holds the server certificate, its key and the
// cluster CA's certificate (PGO's name).
func ClusterCertSecretName(cluster string) string { return cluster + "-cluster-cert" }

// ClusterCASecretName holds the cluster CA's certificate and key; only the
// operator reads it.
func ClusterCASecretName(cluster string) string { return cluster + "-cluster-ca" }

// ReplicationSecretName holds the replication user's password.
func ReplicationSecretName(cluster string) string { return cluster + "-replication" }

// InstanceRBACName names the instances' ServiceAccount, Role and RoleBinding.
func InstanceRBACName(cluster string) string { return cluster + "-instance" }

// MonitorName names the PodMonitor and PrometheusRule of a cluster.
func MonitorName(cluster string) string { return cluster + "-postgres" }

// SetName is the name of instance set i: its own, else its index as PGO
// numbers it ("00", "01").
func SetName(set *postgresv1beta1.PostgresInstanceSetSpec, i int) string {
	if set.Name != "" {
		return set.Name
	}
	return fmt.Sprintf("%02d", i)
}

// PodName is the pod of an instance: the one pod of its StatefulSet.
func PodName(instance string) string { return instance + "-0" }

// Keys of the generated Secrets.
const (
	// The keys of a user Secret, PGO's.
	KeyUser     = "user"
	KeyPassword = "password"
	KeyDBName   = "dbname"
	KeyHost     = "host"
	KeyPort     = "port"
	KeyURI      = "uri"
	KeyJDBCURI  = "jdbc-uri"
	KeyVerifier = "verifier"

	KeyCACert  = "ca.crt"
	KeyCAKey   = "ca.key"
	KeyTLSCert = "tls.crt"
	KeyTLSKey  = "tls.key"
)

// SelectorLabels select every pod of a cluster.
func SelectorLabels(cluster string) map[string]string {
	return map[string]string{pgcontract.LabelCluster: cluster}
}

// Reasons of the errors a spec gets (Reconciled=False); UnsupportedField and
// InvalidSpec are workload's.
const (
	ReasonUnsupportedVersion   = "UnsupportedPostgresVersion"
	ReasonInvalidParameter     = "InvalidParameter"
	ReasonNoInstances          = "NoInstances"
	ReasonVolumeShrink         = "VolumeShrink"
	ReasonInvalidUser          = "InvalidUser"
	ReasonUnknownTarget        = "UnknownSwitchoverTarget"
	ReasonInvalidConfiguration = "InvalidDynamicConfiguration"
)
