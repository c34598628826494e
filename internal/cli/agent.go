package cli

import (
	"context"
	"fmt"
	"io"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/render"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
)

// AllAgents as RenderOptions.PrometheusAgent renders every PrometheusAgent of the input.
const AllAgents = "all"

// renderAgents renders the PrometheusAgent objects RenderOptions.PrometheusAgent names.
func renderAgents(ctx context.Context, c client.Reader, o RenderOptions, out, errOut io.Writer) error {
	var list monitoringv1alpha1.PrometheusAgentList
	if err := c.List(ctx, &list); err != nil {
		return err
	}
	key := o.PrometheusAgent
	if key == AllAgents {
		key = ""
	}
	agents, err := selectByKey(list.Items, key, monitoringv1alpha1.PrometheusAgentsKind)
	if err != nil {
		return err
	}
	if len(agents) > 1 && o.Output == OutputConfig {
		return fmt.Errorf("%d PrometheusAgent objects in the input; choose one with --prometheus-agent NAMESPACE/NAME", len(agents))
	}
	for i, a := range agents {
		d, err := RenderAgent(ctx, c, a, o.ReloaderImage)
		if err != nil {
			return err
		}
		if err := writeDesired(out, errOut, o.Output, i, monitoringv1alpha1.PrometheusAgentsKind, a, d); err != nil {
			return err
		}
	}
	return nil
}

// RenderAgent gathers and renders one PrometheusAgent exactly as the controller does.
func RenderAgent(ctx context.Context, c client.Reader, a *monitoringv1alpha1.PrometheusAgent, reloaderImage string) (*render.Desired, error) {
	g, err := (&gather.Cluster{Cache: c, Live: c}).Prometheus(ctx, promrender.AgentView(a), nil)
	if err != nil {
		return nil, fmt.Errorf("PrometheusAgent %s/%s: %w", a.Namespace, a.Name, err)
	}
	g.Inputs.ReloaderImage = reloaderImage
	d, err := render.PrometheusAgent(a, g.Inputs)
	if err != nil {
		return nil, fmt.Errorf("PrometheusAgent %s/%s: %w", a.Namespace, a.Name, err)
	}
	return d, nil
}
