package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/render"
	"github.com/lookout-operator/lookout/internal/selection"
)

// OutputAlertmanager prints an Alertmanager's generated alertmanager.yaml.
const OutputAlertmanager = "alertmanager"

// renderAlertmanagers is Render for Alertmanager objects: -o alertmanager prints the
// generated alertmanager.yaml, -o objects the Kubernetes objects, -o verdicts which
// AlertmanagerConfigs are accepted.
func renderAlertmanagers(ctx context.Context, c client.Reader, o RenderOptions, out, errOut io.Writer) error {
	ams, err := selectAlertmanagers(ctx, c, o.Alertmanager)
	if err != nil {
		return err
	}
	if len(ams) > 1 && o.Output == OutputAlertmanager {
		return fmt.Errorf("%d Alertmanager objects in the input; choose one with --alertmanager NAMESPACE/NAME", len(ams))
	}
	for i, am := range ams {
		d, err := RenderAlertmanager(ctx, c, am, o.ReloaderImage)
		if err != nil {
			return err
		}
		for _, v := range d.Verdicts {
			if !v.Accepted {
				fmt.Fprintf(errOut, "rejected: %s %s/%s by Alertmanager %s/%s: %s: %s\n", v.Kind, v.Namespace, v.Name, am.Namespace, am.Name, v.Reason, v.Message)
			}
		}
		switch o.Output {
		case OutputAlertmanager:
			_, err = out.Write(d.Config)
		case OutputVerdicts:
			fmt.Fprintf(out, "Alertmanager %s/%s\n", am.Namespace, am.Name)
			writeVerdictLines(out, d.Verdicts)
		case OutputObjects, "":
			if i > 0 {
				fmt.Fprintln(out, "---")
			}
			err = writeObjects(out, d.Objects)
		default:
			return fmt.Errorf("output %q does not apply to an Alertmanager: want alertmanager, objects or verdicts", o.Output)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// RenderAlertmanager gathers and renders one Alertmanager from a reader.
func RenderAlertmanager(ctx context.Context, c client.Reader, am *monitoringv1.Alertmanager, reloaderImage string) (*render.AlertmanagerDesired, error) {
	g, err := (&gather.Cluster{Cache: c, Live: c}).Alertmanager(ctx, am)
	if err != nil {
		return nil, fmt.Errorf("Alertmanager %s/%s: %w", am.Namespace, am.Name, err)
	}
	g.Inputs.ReloaderImage = reloaderImage
	d, err := render.Alertmanager(g.Inputs)
	if err != nil {
		return nil, fmt.Errorf("Alertmanager %s/%s: %w", am.Namespace, am.Name, err)
	}
	return d, nil
}

func selectAlertmanagers(ctx context.Context, c client.Reader, key string) ([]*monitoringv1.Alertmanager, error) {
	var list monitoringv1.AlertmanagerList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	return selectByKey(list.Items, key, monitoringv1.AlertmanagersKind)
}

// explainAlertmanagerConfig tells, for every Alertmanager, whether it selects the
// AlertmanagerConfig ns/name and why not; when it does, whether it accepted it and the
// route it became in the generated alertmanager.yaml.
func explainAlertmanagerConfig(ctx context.Context, c client.Reader, ns, name, reloaderImage string, out io.Writer) error {
	var obj monitoringv1alpha1.AlertmanagerConfig
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &obj); err != nil {
		return fmt.Errorf("get AlertmanagerConfig %s/%s: %w", ns, name, err)
	}
	nsLabels, err := namespaceLabels(ctx, c, ns)
	if err != nil {
		return err
	}
	var ams monitoringv1.AlertmanagerList
	if err := c.List(ctx, &ams); err != nil {
		return fmt.Errorf("list Alertmanager objects: %w", err)
	}
	fmt.Fprintf(out, "AlertmanagerConfig %s/%s (generation %d)\n", ns, name, obj.Generation)
	if len(ams.Items) == 0 {
		fmt.Fprintln(out, "  no Alertmanager objects exist: nothing can select it")
		return nil
	}
	for i := range ams.Items {
		am := &ams.Items[i]
		global := am.Spec.AlertmanagerConfiguration != nil && am.Namespace == ns && am.Spec.AlertmanagerConfiguration.Name == name
		sel, err := selection.AlertmanagerConfigs(am)
		if err != nil {
			fmt.Fprintf(out, "  ✗ Alertmanager %s/%s: its selector is invalid: %v\n", am.Namespace, am.Name, err)
			continue
		}
		if v := sel.Match(ns, obj.Labels, nsLabels); !v.Selected && !global {
			fmt.Fprintf(out, "  ✗ Alertmanager %s/%s does not select it: %s\n", am.Namespace, am.Name, v.Message)
			continue
		}
		d, err := RenderAlertmanager(ctx, c, am, reloaderImage)
		if err != nil {
			fmt.Fprintf(out, "  ? Alertmanager %s/%s selects it, but cannot be rendered: %v\n", am.Namespace, am.Name, err)
			continue
		}
		if global {
			fmt.Fprintf(out, "  ✓ Alertmanager %s/%s uses it as its whole configuration (spec.alertmanagerConfiguration)\n", am.Namespace, am.Name)
			continue
		}
		for _, verdict := range d.Verdicts {
			if verdict.Kind != monitoringv1alpha1.AlertmanagerConfigKind || verdict.Namespace != ns || verdict.Name != name {
				continue
			}
			if !verdict.Accepted {
				fmt.Fprintf(out, "  ✗ Alertmanager %s/%s selects it but rejects it: %s: %s\n", am.Namespace, am.Name, verdict.Reason, verdict.Message)
				break
			}
			fmt.Fprintf(out, "  ✓ Alertmanager %s/%s selects and accepts it; it became this route:\n", am.Namespace, am.Name)
			for _, line := range routesOf(d.Config, ns+"/"+name+"/") {
				fmt.Fprintf(out, "      %s\n", line)
			}
		}
	}
	return nil
}

// routesOf returns, as YAML lines, the child routes of the top route whose receiver
// carries prefix (the receivers of one AlertmanagerConfig are named
// "<namespace>/<name>/<receiver>").
func routesOf(config []byte, prefix string) []string {
	var doc struct {
		Route struct {
			Routes []map[string]any `json:"routes"`
		} `json:"route"`
	}
	if err := yaml.Unmarshal(config, &doc); err != nil {
		return []string{"(the generated config does not parse: " + err.Error() + ")"}
	}
	var lines []string
	for _, r := range doc.Route.Routes {
		if recv, _ := r["receiver"].(string); !strings.HasPrefix(recv, prefix) {
			continue
		}
		b, err := yaml.Marshal(r)
		if err != nil {
			continue
		}
		lines = append(lines, strings.Split(strings.TrimRight(string(b), "\n"), "\n")...)
	}
	if len(lines) == 0 {
		lines = []string{"(no route: the config has no route naming its receivers)"}
	}
	return lines
}
