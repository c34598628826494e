package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/cli"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/scheme"
	"github.com/lookout-operator/lookout/internal/version"
)

func newRenderCommand() *cobra.Command {
	o := cli.RenderOptions{}
	cmd := &cobra.Command{
		Use:   "render -f FILE_OR_DIR... [--prometheus NAMESPACE/NAME | --alertmanager NAMESPACE/NAME]",
		Short: "Render Prometheus or Alertmanager objects from YAML files, offline, exactly as the operator would",
		Long: `render reads Prometheus, Alertmanager, ServiceMonitor, PrometheusRule,
AlertmanagerConfig, Secret, Namespace and ServiceAccount objects from files and prints
what the operator would write: every Kubernetes object (-o objects), the
prometheus.yaml (-o config), the rule files (-o rules), an Alertmanager's
alertmanager.yaml (-o alertmanager), or which monitors, rules and AlertmanagerConfigs
are accepted (-o verdicts). With --alertmanager (or -o alertmanager) the Alertmanager
is rendered instead of the Prometheus. No cluster is needed. Rejections are listed
on stderr.`,
		Example: `  lookout render -f examples/ -o config
  lookout render -f manifests/ --prometheus monitoring/k8s -o rules
  lookout render -f examples/ -o alertmanager
  lookout render -f examples/ --prometheus-agent default/edge -o config
  lookout render -f hippo.yaml --postgrescluster all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(o.Files) == 0 {
				return fmt.Errorf("give the input with -f (files or directories, - for stdin)")
			}
			return cli.Render(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringSliceVarP(&o.Files, "filename", "f", nil, "Files or directories with the objects (repeatable)")
	cmd.Flags().StringVar(&o.Prometheus, "prometheus", "", "The Prometheus to render, NAMESPACE/NAME (default: all)")
	cmd.Flags().StringVar(&o.Alertmanager, "alertmanager", "", "Render this Alertmanager, NAMESPACE/NAME, instead of the Prometheus objects")
	cmd.Flags().StringVar(&o.PrometheusAgent, "prometheus-agent", "", "Render this PrometheusAgent, NAMESPACE/NAME (all: every one), instead of the Prometheus objects")
	cmd.Flags().StringVar(&o.PostgresCluster, "postgrescluster", "", "Render this PostgresCluster, NAMESPACE/NAME (all: every one), instead of the Prometheus objects")
	cmd.Flags().StringVar(&o.PostgresImage, "postgres-image", version.Image("lookout-postgres"), "Image of the PostgreSQL instances (as given to the operator)")
	cmd.Flags().StringSliceVar(&o.PostgresBinDirs, "postgres-bin-dirs", pgcontract.DefaultBinDirGlobs, "PostgreSQL bin directories (as given to the operator)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", cli.OutputObjects, "objects, config, rules, verdicts or alertmanager")
	cmd.Flags().StringVar(&o.ReloaderImage, "reloader-image", version.ReloaderImage(), "Image of the config-reloader sidecar (as given to the operator)")
	return cmd
}

func newExplainCommand() *cobra.Command {
	o := cli.ExplainOptions{}
	var files []string
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "explain KIND NAMESPACE/NAME",
		Short: "Explain which Prometheus or Alertmanager objects select a monitor, rule or AlertmanagerConfig, and why not; or a PostgresCluster's primary, failover and replicas",
		Long: `explain answers "why is my ServiceMonitor not scraped?" and "why is my
AlertmanagerConfig not applied?": for every Prometheus (Alertmanager) it says whether
it selects the object, and if not the exact reason (the label that does not match,
the namespace that is not selected); if it does, whether the object was accepted
(and the jobs, rule file or route it produced) or rejected, with the message.
For a PostgresCluster it says who is primary, whether the spec was applied, why no
failover or switchover happened (or would), and how far behind each replica is.
It reads the cluster of your kubeconfig, or files with -f.`,
		Example: `  lookout explain servicemonitor default/example-app
  kubectl lookout explain prometheusrule monitoring/node-rules
  lookout explain alertmanagerconfig default/example-routing
  lookout explain servicemonitor default/app -f manifests/
  lookout explain postgrescluster zoo/hippo`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Kind, o.Key = args[0], args[1]
			var c client.Reader
			if len(files) > 0 {
				objs, err := cli.ReadFiles(files)
				if err != nil {
					return err
				}
				if c, err = cli.FileReader(objs); err != nil {
					return err
				}
			} else {
				cfg, err := restConfig(kubeconfig)
				if err != nil {
					return fmt.Errorf("load Kubernetes client configuration: %w", err)
				}
				if c, err = newClient(cfg); err != nil {
					return err
				}
			}
			return cli.Explain(cmd.Context(), c, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "Read objects from files or directories instead of the cluster")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	cmd.Flags().StringVar(&o.ReloaderImage, "reloader-image", version.ReloaderImage(), "Image of the config-reloader sidecar")
	return cmd
}

func newClient(cfg *rest.Config) (client.Client, error) {
	return client.New(cfg, client.Options{Scheme: scheme.Scheme})
}
