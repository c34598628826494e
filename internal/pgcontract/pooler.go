package pgcontract

// The pooler: `lookout pgbouncer`, the entrypoint of the PgBouncer pods of a
// PostgresCluster with spec.proxy.pgBouncer. It writes pgbouncer.ini from the
// PoolerConfig the controller renders, runs Debian's pgbouncer as its child,
// points every database at the instance that holds the Lease, and serves
// PathPause and PathResume to the instance managers, which pause it around a
// planned switchover.

// RolePooler is the role label of the pooler pods (PGO's).
const RolePooler = "pgbouncer"

// PoolerSecretName is the Secret mounted at PoolerConfigDir in every pooler
// pod: PoolerConfigKey, PoolerUserlistKey and the pooler's certificate
// (tls.crt, tls.key, ca.crt).
func PoolerSecretName(cluster string) string { return cluster + "-pgbouncer" }

const (
	PoolerConfigDir   = "/etc/pgbouncer-lookout"
	PoolerConfigKey   = "pooler.json"
	PoolerUserlistKey = "userlist.txt"
)

// The pooler's HTTP server: readiness, and pause/resume for the instance
// managers (POST, with the token of PoolerConfig as a bearer token).
const (
	PoolerPort     = 8009
	PoolerPortName = "pooler"
	PathPause      = "/pause"
	PathResume     = "/resume"
	// PoolerPortNamePgBouncer names PgBouncer's client port on the container
	// and the Service.
	PoolerPortNamePgBouncer = "pgbouncer"
)

// PoolerConfig is what the controller tells every pooler of a cluster.
type PoolerConfig struct {
	// Port is where PgBouncer listens for clients; PostgresPort is the
	// instances' port.
	Port         int `json:"port"`
	PostgresPort int `json:"postgresPort"`
	// Global are the user's [pgbouncer] settings (checked by the
	// controller; the pooler owns listening, authentication, TLS, files).
	Global map[string]string `json:"global,omitempty"`
	// Databases are [databases] entries without host or port; empty means
	// "*" (every database) on the primary.
	Databases map[string]string `json:"databases,omitempty"`
	// Users are [users] entries.
	Users map[string]string `json:"users,omitempty"`
	// Token authenticates the instance managers' pause and resume calls.
	Token string `json:"token"`
}

// Poolers is what the instance managers are told of the poolers, in Config.
type Poolers struct {
	// Token is PoolerConfig.Token.
	Token string `json:"token"`
	// PauseTimeout bounds how long a switchover waits for a pooler to pause
	// (in-flight transactions to finish) before it goes on without it.
	PauseTimeout Duration `json:"pauseTimeout"`
}
