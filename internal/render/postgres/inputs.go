package postgres

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Inputs is everything rendering one PostgresCluster needs.
type Inputs struct {
	Cluster *postgresv1beta1.PostgresCluster

	// Secrets of the cluster that exist, by name: generated passwords,
	// verifiers, keys and certificates are kept from them.
	Secrets map[string]*corev1.Secret
	// StatefulSets of the cluster that exist: instance names are kept from
	// them (PGO's <cluster>-<set>-<4 characters>).
	StatefulSets []*appsv1.StatefulSet
	// Claims are the PersistentVolumeClaims of the cluster's instances: a
	// spec that would shrink one is refused.
	Claims []*corev1.PersistentVolumeClaim
	// DataSource is the PostgresCluster spec.dataSource.postgresCluster
	// names, when it exists.
	DataSource *postgresv1beta1.PostgresCluster
	// Primary is the instance (StatefulSet) that is primary now, if known:
	// scaling a set down keeps it.
	Primary string

	// Installation is what the operator knows of the PostgreSQL binaries the
	// instances run: which majors, and which parameters each accepts.
	Installation Installation
	// Image is the instance image when spec.image is empty.
	Image string
	// RunAsUser is the uid (and gid, fsGroup) of the instance containers:
	// PostgreSQL refuses to run as root.
	RunAsUser int64
	// Monitoring: the monitoring.coreos.com CRDs are installed, so a
	// PodMonitor and a PrometheusRule are rendered.
	Monitoring bool

	// Seed feeds everything generated for the first time. The same Inputs
	// and Seed give the same objects.
	Seed [32]byte
	// Now is when certificates generated for the first time start to be
	// valid.
	Now time.Time
}

// Installation is the PostgreSQL the operator can run.
type Installation struct {
	// Parameters by major version: the names `postgres --describe-config`
	// lists. A major version missing from the map is not installed.
	Parameters map[int]map[string]bool
}

// Majors lists the installed major versions, in order.
func (in Installation) Majors() []int {
	out := make([]int, 0, len(in.Parameters))
	for m := range in.Parameters {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// Desired is the rendered state of one PostgresCluster.
type Desired struct {
	// Objects in the order they are applied.
	Objects []workload.Object
	// Config is what the instance managers are told (also in Objects, as the
	// config Secret).
	Config pgcontract.Config
	// Instances are the instances (StatefulSet names), by set, in order.
	Instances map[string][]string
}

// Defaults the operator uses when the spec leaves them out.
const (
	DefaultPort          = 5432
	DefaultLeaseSeconds  = 30
	DefaultRunAsUser     = 26 // PGO's postgres uid
	patroniDefaultPort   = 8008
	patroniDefaultPeriod = 10
)
