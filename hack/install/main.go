// Command install writes the install paths from internal/install: the
// kustomize base config/default and its overlays, the bundle
// config/lookout.yaml and the Helm chart charts/lookout. Run from the
// repository root (make manifests does).
package main

import (
	"fmt"
	"os"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/install"
)

func main() {
	root, err := controlplane.RepoRoot()
	if err == nil {
		err = install.Write(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "install:", err)
		os.Exit(1)
	}
}
