package pginstance

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// NewCommand is `lookout instance`, the entrypoint of a PostgreSQL container.
func NewCommand() *cobra.Command {
	var o Options
	cmd := &cobra.Command{
		Use:   "instance",
		Short: "Run one PostgreSQL instance of a PostgresCluster (the entrypoint of its container)",
		Long: "Runs postgres as its child: initdb for a new cluster's first primary, pg_basebackup for a replica,\n" +
			"pg_rewind for a former primary. Holds the cluster's Lease while primary, takes over a lost primary\n" +
			"when it can prove it holds every acknowledged commit, and serves " + pgcontract.PathLive + ", " +
			pgcontract.PathReady + ", " + pgcontract.PathMetrics + " and " + pgcontract.PathStatus + ".\n" +
			"Pod name, namespace and IP come from $" + pgcontract.EnvPodName + ", $" + pgcontract.EnvPodNamespace + " and $" + pgcontract.EnvPodIP + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			m, err := NewManager(o, log)
			if err != nil {
				return err
			}
			return m.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Cluster, "cluster", "", "the PostgresCluster this instance belongs to")
	f.StringVar(&o.PGDATA, "pgdata", pgcontract.PGDATA(15), "the data directory")
	f.StringVar(&o.BinDir, "bin-dir", "", "where postgres, initdb, pg_basebackup and pg_rewind of the data directory's major are (default: found in --postgres-bin-dirs)")
	f.StringSliceVar(&o.BinDirGlobs, "postgres-bin-dirs", pgcontract.DefaultBinDirGlobs, "globs of each major's bin directory (<...>/<major>/bin): a major upgrade finds the new major's there")
	f.StringVar(&o.Listen, "listen", ":8008", "the manager's HTTP address")
	f.StringVar(&o.SocketDir, "socket-dir", "", "private directory for postgres's Unix socket and password file (default $TMPDIR/lookout-pg)")
	f.StringVar(&o.TLSDir, "tls-dir", pgcontract.TLSDir, "tls.crt, tls.key and ca.crt of the instance; TLS is off when absent")
	f.StringVar(&o.SecretsDir, "secrets-dir", pgcontract.SecretsDir, "directory holding "+pgcontract.ReplicationPasswordFile)
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster)")
	f.StringVar(&o.PostgresUser, "postgres-user", "postgres", "the OS user postgres runs as when the manager runs as root")
	f.StringVar(&o.PgBackRest, "pgbackrest", "pgbackrest", "the pgbackrest program (looked up in $PATH)")
	f.StringVar(&o.BackRestConfDir, "pgbackrest-conf-dir", pgcontract.BackupConfDir, "pgBackRest option files of the cluster's repositories (credentials)")
	f.StringVar(&o.BackRestRestoreConfDir, "pgbackrest-restore-conf-dir", pgcontract.RestoreConfDir, "pgBackRest option files of the repository a new cluster is restored from")
	return cmd
}
