package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/render"
	"github.com/lookout-operator/lookout/internal/render/rules"
	"github.com/lookout-operator/lookout/internal/selection"
)

// explainKind is one kind explain understands.
type explainKind struct {
	kind     string // as in Verdicts
	newObj   func() client.Object
	selector func(*monitoringv1.Prometheus) (*selection.Selector, error)
	// produced lists what an accepted object became in the rendered output.
	produced func(obj client.Object, d *render.Desired) []string
}

var explainKinds = map[string]explainKind{
	"servicemonitor": {
		kind:     monitoringv1.ServiceMonitorsKind,
		newObj:   func() client.Object { return &monitoringv1.ServiceMonitor{} },
		selector: selection.ServiceMonitors,
		produced: func(obj client.Object, d *render.Desired) []string {
			return jobsWithPrefix(string(d.Config()), "serviceMonitor/"+obj.GetNamespace()+"/"+obj.GetName()+"/")
		},
	},
	"podmonitor": {
		kind:     monitoringv1.PodMonitorsKind,
		newObj:   func() client.Object { return &monitoringv1.PodMonitor{} },
		selector: selection.PodMonitors,
		produced: func(obj client.Object, d *render.Desired) []string {
			return jobsWithPrefix(string(d.Config()), "podMonitor/"+obj.GetNamespace()+"/"+obj.GetName()+"/")
		},
	},
	"probe": {
		kind:     monitoringv1.ProbesKind,
		newObj:   func() client.Object { return &monitoringv1.Probe{} },
		selector: selection.Probes,
		produced: func(obj client.Object, d *render.Desired) []string {
			return jobsWithPrefix(string(d.Config()), "probe/"+obj.GetNamespace()+"/"+obj.GetName())
		},
	},
	"scrapeconfig": {
		kind:     monitoringv1alpha1.ScrapeConfigsKind,
		newObj:   func() client.Object { return &monitoringv1alpha1.ScrapeConfig{} },
		selector: selection.ScrapeConfigs,
		produced: func(obj client.Object, d *render.Desired) []string {
			return jobsWithPrefix(string(d.Config()), "scrapeConfig/"+obj.GetNamespace()+"/"+obj.GetName())
		},
	},
	"prometheusrule": {
		kind:     monitoringv1.PrometheusRuleKind,
		newObj:   func() client.Object { return &monitoringv1.PrometheusRule{} },
		selector: selection.Rules,
		produced: func(obj client.Object, d *render.Desired) []string {
			file := rules.FileName(obj.(*monitoringv1.PrometheusRule))
			for _, o := range d.Objects {
				if cm, ok := o.(*corev1.ConfigMap); ok {
					if _, ok := cm.Data[file]; ok {
						return []string{"rule file " + file + " in ConfigMap " + cm.Name}
					}
				}
			}
			return []string{"rule file " + file}
		},
	},
}

// ExplainKinds names the kinds explain accepts.
func ExplainKinds() []string {
	return []string{"servicemonitor", "podmonitor", "probe", "scrapeconfig", "prometheusrule", "alertmanagerconfig", "postgrescluster"}
}

// ExplainOptions configure Explain.
type ExplainOptions struct {
	Kind          string // servicemonitor | podmonitor | probe | scrapeconfig | prometheusrule | alertmanagerconfig | postgrescluster
	Key           string // namespace/name
	ReloaderImage string
}

// Explain tells which Prometheus objects select one monitor or rule and
// which do not, with the exact reason, and what an accepted one became.
func Explain(ctx context.Context, c client.Reader, o ExplainOptions, out io.Writer) error {
	kind := strings.ToLower(strings.TrimSuffix(o.Kind, "s"))
	if kind == "alertmanagerconfig" {
		ns, name, found := strings.Cut(o.Key, "/")
		if !found {
			ns, name = "default", o.Key
		}
		return explainAlertmanagerConfig(ctx, c, ns, name, o.ReloaderImage, out)
	}
	if kind == "postgrescluster" || kind == "pgc" {
		ns, name, found := strings.Cut(o.Key, "/")
		if !found {
			ns, name = "default", o.Key
		}
		return explainPostgresCluster(ctx, c, ns, name, out)
	}
	k, ok := explainKinds[kind]
	if !ok {
		return fmt.Errorf("cannot explain %q: want one of %s", o.Kind, strings.Join(ExplainKinds(), ", "))
	}
	ns, name, found := strings.Cut(o.Key, "/")
	if !found {
		ns, name = "default", o.Key
	}
	obj := k.newObj()
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return fmt.Errorf("get %s %s/%s: %w", k.kind, ns, name, err)
	}
	nsLabels, err := namespaceLabels(ctx, c, ns)
	if err != nil {
		return err
	}

	var proms monitoringv1.PrometheusList
	if err := c.List(ctx, &proms); err != nil {
		return fmt.Errorf("list Prometheus objects: %w", err)
	}
	fmt.Fprintf(out, "%s %s/%s (generation %d)\n", k.kind, ns, name, obj.GetGeneration())
	if len(proms.Items) == 0 {
		fmt.Fprintln(out, "  no Prometheus objects exist: nothing can select it")
		return nil
	}
	for i := range proms.Items {
		p := &proms.Items[i]
		sel, err := k.selector(p)
		if err != nil {
			fmt.Fprintf(out, "  ✗ Prometheus %s/%s: its selector is invalid: %v\n", p.Namespace, p.Name, err)
			continue
		}
		v := sel.Match(ns, obj.GetLabels(), nsLabels)
		if !v.Selected {
			fmt.Fprintf(out, "  ✗ Prometheus %s/%s does not select it: %s\n", p.Namespace, p.Name, v.Message)
			continue
		}
		d, err := RenderOne(ctx, c, p, o.ReloaderImage)
		if err != nil {
			fmt.Fprintf(out, "  ? Prometheus %s/%s selects it, but cannot be rendered: %v\n", p.Namespace, p.Name, err)
			continue
		}
		for _, verdict := range d.Verdicts {
			if verdict.Kind != k.kind || verdict.Namespace != ns || verdict.Name != name {
				continue
			}
			if !verdict.Accepted {
				fmt.Fprintf(out, "  ✗ Prometheus %s/%s selects it but rejects it: %s: %s\n", p.Namespace, p.Name, verdict.Reason, verdict.Message)
				break
			}
			fmt.Fprintf(out, "  ✓ Prometheus %s/%s selects and accepts it:\n", p.Namespace, p.Name)
			for _, item := range k.produced(obj, d) {
				fmt.Fprintf(out, "      %s\n", item)
			}
		}
	}
	return nil
}

// namespaceLabels are the labels of Namespace ns; none when it does not exist.
func namespaceLabels(ctx context.Context, c client.Reader, ns string) (map[string]string, error) {
	var nsObj corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
		if apierrors.IsNotFound(err) {
			return map[string]string{}, nil
		}
		return nil, err
	}
	return nsObj.Labels, nil
}

func jobsWithPrefix(config, prefix string) []string {
	var out []string
	for _, line := range strings.Split(config, "\n") {
		if job, ok := strings.CutPrefix(line, "- job_name: "); ok && strings.HasPrefix(job, prefix) {
			out = append(out, "job "+job)
		}
	}
	if len(out) == 0 {
		out = append(out, "no job (the monitor has no endpoints)")
	}
	return out
}
