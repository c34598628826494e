// Command tools builds (or finds cached) the binaries the tests and the demo
// need and prints their paths. Usage: go run ./hack/tools [controlplane] [prometheus (and promtool)] [alertmanager] [controller-gen] [helm] [node] [thanos]
// (default: controlplane prometheus alertmanager helm)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/lookout-operator/lookout/internal/controlplane"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sets := map[string][]controlplane.Tool{
		"controlplane":   controlplane.ControlPlaneTools,
		"prometheus":     {controlplane.Prometheus, controlplane.Promtool},
		"alertmanager":   controlplane.AlertmanagerTools,
		"controller-gen": {controlplane.ControllerGen},
		"helm":           {controlplane.Helm},
		"node":           {controlplane.Kubelet},
		"thanos":         {controlplane.Thanos},
	}
	args := os.Args[1:]
	if len(args) == 0 {
		args = []string{"controlplane", "prometheus", "alertmanager", "helm"}
	}
	for _, a := range args {
		tools, ok := sets[a]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown tool set %q (want controlplane, prometheus, alertmanager, controller-gen, helm, node or thanos)\n", a)
			os.Exit(2)
		}
		for _, t := range tools {
			p, err := t.Ensure(ctx, os.Stderr)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Printf("%s\t%s\n", t.Name, p)
		}
	}
}
