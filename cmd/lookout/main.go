// Command lookout is the Lookout operator and its command-line tools.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

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
	}
	// Installed as kubectl-lookout, it is the kubectl plugin `kubectl lookout`.
	if filepath.Base(os.Args[0]) == "kubectl-lookout" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl lookout"}
	}
	root.AddCommand(newOperatorCommand(), newRenderCommand(), newExplainCommand(), newVersionCommand())
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
