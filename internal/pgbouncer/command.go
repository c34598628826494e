package pgbouncer

import (
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// NewCommand is `lookout pgbouncer`, the entrypoint of a PgBouncer container.
func NewCommand() *cobra.Command {
	var o Options
	cmd := &cobra.Command{
		Use:   "pgbouncer",
		Short: "Run one PgBouncer of a PostgresCluster's pooler (the entrypoint of its container)",
		Long: "Writes pgbouncer.ini and the userlist from " + pgcontract.PoolerConfigDir + ", runs pgbouncer as its child with\n" +
			"every database on the instance that holds the cluster's Lease (repointed when it changes), and serves\n" +
			pgcontract.PathLive + ", " + pgcontract.PathReady + ", and " + pgcontract.PathPause + " and " + pgcontract.PathResume +
			" (POST, with the pooler token) to the instance managers,\nwhich pause it around a switchover.\n" +
			"Pod name and namespace come from $" + pgcontract.EnvPodName + " and $" + pgcontract.EnvPodNamespace + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.PodName, o.Namespace = os.Getenv(pgcontract.EnvPodName), os.Getenv(pgcontract.EnvPodNamespace)
			p, err := New(o, slog.New(slog.NewTextHandler(os.Stderr, nil)))
			if err != nil {
				return err
			}
			return p.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Cluster, "cluster", "", "the PostgresCluster this pooler belongs to")
	f.StringVar(&o.ConfigDir, "config-dir", pgcontract.PoolerConfigDir, "the pooler's Secret: "+pgcontract.PoolerConfigKey+", "+pgcontract.PoolerUserlistKey+", tls.crt, tls.key, ca.crt")
	f.StringVar(&o.RunDir, "run-dir", "", "private directory for pgbouncer.ini and the userlist (default $TMPDIR/lookout-pgbouncer)")
	f.StringVar(&o.Listen, "listen", ":"+strconv.Itoa(pgcontract.PoolerPort), "the pooler's HTTP address")
	f.StringVar(&o.Bin, "pgbouncer", "pgbouncer", "the pgbouncer program (looked up in $PATH)")
	f.StringVar(&o.RunAs, "run-as", "postgres", "the OS user pgbouncer runs as when the pooler runs as root")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster)")
	f.DurationVar(&o.HoldLimit, "hold-limit", 30*time.Second, "the longest a pause lasts without a resume")
	return cmd
}
