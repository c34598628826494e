// Package pginstance is the instance manager of a PostgresCluster: the
// entrypoint (`lookout instance`) of every PostgreSQL container. It creates or
// clones the data directory, runs postgres as its child, keeps the cluster's
// Lease while it is the primary, takes it over when the primary is lost and
// it may prove it holds every acknowledged commit, and rewinds and follows
// when another instance is primary. It serves probes, metrics and the
// pgcontract.Status document on the manager port.
package pginstance

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// Options are what one instance manager needs to know about itself.
type Options struct {
	Cluster   string
	Namespace string
	PodName   string
	PodIP     string

	PGDATA string
	// BinDir holds the binaries of PGDATA's major; empty: found in
	// BinDirGlobs (pgcontract.DefaultBinDirGlobs), as those of the major a
	// major upgrade moves to are.
	BinDir      string
	BinDirGlobs []string
	// SocketDir holds the Unix socket postgres listens on and the files only
	// the manager and postgres read (the password file, a private copy of
	// the TLS key).
	SocketDir string
	// TLSDir and SecretsDir default to pgcontract's mount paths.
	TLSDir     string
	SecretsDir string
	// Listen is the manager's HTTP address (":8008").
	Listen string
	// Kubeconfig is empty in a pod (in-cluster config).
	Kubeconfig string
	// PostgresUser is the OS user postgres runs as when the manager runs as
	// root (postgres refuses to run as root).
	PostgresUser string

	// PgBackRest is the pgbackrest program; BackRestConfDir and
	// BackRestRestoreConfDir hold the repositories' option files
	// (pgcontract.BackupConfDir and RestoreConfDir by default).
	PgBackRest             string
	BackRestConfDir        string
	BackRestRestoreConfDir string

	// Tick is how often the manager looks at the Lease and at postgres.
	Tick time.Duration
}

// Defaults fills what was left empty from pgcontract and the environment.
func (o *Options) Defaults() {
	if o.Namespace == "" {
		o.Namespace = os.Getenv(pgcontract.EnvPodNamespace)
	}
	if o.PodName == "" {
		o.PodName = os.Getenv(pgcontract.EnvPodName)
	}
	if o.PodIP == "" {
		o.PodIP = os.Getenv(pgcontract.EnvPodIP)
	}
	if o.PGDATA == "" {
		o.PGDATA = pgcontract.PGDATA(15)
	}
	if len(o.BinDirGlobs) == 0 {
		o.BinDirGlobs = pgcontract.DefaultBinDirGlobs
	}
	if o.SocketDir == "" {
		o.SocketDir = filepath.Join(os.TempDir(), "lookout-pg")
	}
	if o.TLSDir == "" {
		o.TLSDir = pgcontract.TLSDir
	}
	if o.SecretsDir == "" {
		o.SecretsDir = pgcontract.SecretsDir
	}
	if o.Listen == "" {
		o.Listen = fmt.Sprintf(":%d", pgcontract.ManagerPort)
	}
	if o.PostgresUser == "" {
		o.PostgresUser = "postgres"
	}
	if o.PgBackRest == "" {
		o.PgBackRest = "pgbackrest"
	}
	if o.BackRestConfDir == "" {
		o.BackRestConfDir = pgcontract.BackupConfDir
	}
	if o.BackRestRestoreConfDir == "" {
		o.BackRestRestoreConfDir = pgcontract.RestoreConfDir
	}
	if o.Tick == 0 {
		o.Tick = 200 * time.Millisecond
	}
}

func (o *Options) validate() error {
	var missing []error
	for name, v := range map[string]string{
		"--cluster": o.Cluster, pgcontract.EnvPodName: o.PodName, pgcontract.EnvPodNamespace: o.Namespace, pgcontract.EnvPodIP: o.PodIP,
	} {
		if v == "" {
			missing = append(missing, fmt.Errorf("%s is required", name))
		}
	}
	return errors.Join(missing...)
}
