// Command lookout is the Lookout operator and its command-line tools.
package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lookout-operator/lookout/internal/pgbouncer"
	"github.com/lookout-operator/lookout/internal/pginstance"
	"github.com/lookout-operator/lookout/internal/version"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "lookout",
		Short:         "Lookout runs Prometheus on Kubernetes from monitoring.coreos.com objects",
		SilenceUsage:  true,
		SilenceErrors: true,
		// render and explain use controller-runtime's clients, which log
		// through its global logger: unset, it prints a stack trace after
		// 30 s. The operator sets its own from --log-format and --log-level.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if cmd.Name() != "operator" {
				ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
			}
		},
	}
	// Installed as kubectl-lookout, it is the kubectl plugin `kubectl lookout`.
	if filepath.Base(os.Args[0]) == "kubectl-lookout" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl lookout"}
	}
	root.AddCommand(newOperatorCommand(), newRenderCommand(), newExplainCommand(), newVersionCommand(), pginstance.NewCommand(), pginstance.NewBackupCommand(), pgbouncer.NewCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and commit of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "lookout %s (commit %s)\n", version.Version, version.CommitOrUnknown())
			return err
		},
	}
}
