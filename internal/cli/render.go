package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/render"
	"github.com/lookout-operator/lookout/internal/render/scrape"
)

// Output formats of render.
const (
	OutputObjects  = "objects"  // every Kubernetes object, as a YAML stream
	OutputConfig   = "config"   // the prometheus.yaml
	OutputRules    = "rules"    // every rule file
	OutputVerdicts = "verdicts" // accepted or rejected, per monitor and rule
)

// RenderOptions configure Render.
type RenderOptions struct {
	Files []string
	// Prometheus is "namespace/name"; empty renders every Prometheus found.
	Prometheus string
	// Alertmanager is "namespace/name" of an Alertmanager to render instead (also chosen
	// by Output alertmanager); "" with that output renders every Alertmanager found.
	Alertmanager string
	// PrometheusAgent, NAMESPACE/NAME or "all", renders PrometheusAgent objects instead
	// of the Prometheus objects.
	PrometheusAgent string
	Output          string
	ReloaderImage   string
	// PostgresCluster, NAMESPACE/NAME or "all", renders PostgresClusters instead;
	// PostgresImage and PostgresBinDirs are the operator's --postgres-image and
	// --postgres-bin-dirs.
	PostgresCluster string
	PostgresImage   string
	PostgresBinDirs []string
}

// Render renders Prometheus objects from files, with no cluster, exactly as
// the controller would. Rejections are listed on errOut.
func Render(ctx context.Context, o RenderOptions, out, errOut io.Writer) error {
	objs, err := ReadFiles(o.Files)
	if err != nil {
		return err
	}
	c, err := FileReader(objs)
	if err != nil {
		return err
	}
	if o.Alertmanager != "" || o.Output == OutputAlertmanager {
		return renderAlertmanagers(ctx, c, o, out, errOut)
	}
	if o.PrometheusAgent != "" {
		return renderAgents(ctx, c, o, out, errOut)
	}
	if o.PostgresCluster != "" {
		return renderPostgresClusters(ctx, c, o, out, errOut)
	}
	proms, err := selectPrometheus(ctx, c, o.Prometheus)
	if err != nil {
		return err
	}
	if len(proms) > 1 && (o.Output == OutputConfig || o.Output == OutputRules) {
		return fmt.Errorf("%d Prometheus objects in the input; choose one with --prometheus NAMESPACE/NAME", len(proms))
	}
	for i, p := range proms {
		d, err := RenderOne(ctx, c, p, o.ReloaderImage)
		if err != nil {
			return err
		}
		if err := writeDesired(out, errOut, o.Output, i, monitoringv1.PrometheusesKind, p, d); err != nil {
			return err
		}
	}
	return nil
}

// writeDesired prints the i-th rendered workload (kind, owner) in the output asked for,
// and its rejections on errOut.
func writeDesired(out, errOut io.Writer, output string, i int, kind string, owner client.Object, d *render.Desired) error {
	for _, v := range d.Verdicts {
		if !v.Accepted {
			fmt.Fprintf(errOut, "rejected: %s %s/%s by %s %s/%s: %s: %s\n", v.Kind, v.Namespace, v.Name, kind, owner.GetNamespace(), owner.GetName(), v.Reason, v.Message)
		}
	}
	switch output {
	case OutputConfig:
		_, err := out.Write(d.Config())
		return err
	case OutputRules:
		return writeRules(out, d)
	case OutputVerdicts:
		fmt.Fprintf(out, "%s %s/%s\n", kind, owner.GetNamespace(), owner.GetName())
		writeVerdictLines(out, d.Verdicts)
		return nil
	case OutputObjects, "":
		if i > 0 {
			fmt.Fprintln(out, "---")
		}
		return writeObjects(out, d.Objects)
	}
	return fmt.Errorf("unknown output %q: want objects, config, rules, verdicts or alertmanager", output)
}

// RenderOne gathers and renders one Prometheus from a reader.
func RenderOne(ctx context.Context, c client.Reader, p *monitoringv1.Prometheus, reloaderImage string) (*render.Desired, error) {
	g, err := (&gather.Cluster{Cache: c, Live: c}).Prometheus(ctx, p, nil)
	if err != nil {
		return nil, fmt.Errorf("Prometheus %s/%s: %w", p.Namespace, p.Name, err)
	}
	g.Inputs.ReloaderImage = reloaderImage
	d, err := render.Prometheus(g.Inputs)
	if err != nil {
		return nil, fmt.Errorf("Prometheus %s/%s: %w", p.Namespace, p.Name, err)
	}
	return d, nil
}

func selectPrometheus(ctx context.Context, c client.Reader, key string) ([]*monitoringv1.Prometheus, error) {
	var list monitoringv1.PrometheusList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	return selectByKey(list.Items, key, monitoringv1.PrometheusesKind)
}

// selectByKey keeps the items named key ("namespace/name", or a bare name), or
// all of them when key is empty, sorted by namespace/name.
func selectByKey[T any, PT interface {
	*T
	client.Object
}](items []T, key, kind string) ([]PT, error) {
	var out []PT
	for i := range items {
		o := PT(&items[i])
		if key == "" || key == o.GetNamespace()+"/"+o.GetName() || (!strings.Contains(key, "/") && key == o.GetName()) {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		if key != "" {
			return nil, fmt.Errorf("no %s %s in the input", kind, key)
		}
		return nil, fmt.Errorf("no %s object in the input", kind)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].GetNamespace()+"/"+out[i].GetName() < out[j].GetNamespace()+"/"+out[j].GetName()
	})
	return out, nil
}

// writeObjects prints objects as `kubectl apply` would take them: no status,
// no unset fields.
func writeObjects[T runtime.Object](out io.Writer, objs []T) error {
	for i, obj := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		delete(m, "status")
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		if tmpl := nested(m, "spec", "template", "metadata"); tmpl != nil {
			delete(tmpl, "creationTimestamp")
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(out, "---")
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func nested(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}

func writeRules(out io.Writer, d *render.Desired) error {
	for _, obj := range d.Objects {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		keys := make([]string, 0, len(cm.Data))
		for k := range cm.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(out, "# ConfigMap %s, file %s\n%s", cm.Name, k, cm.Data[k])
			if !strings.HasSuffix(cm.Data[k], "\n") {
				fmt.Fprintln(out)
			}
		}
	}
	return nil
}

func writeVerdictLines(out io.Writer, verdicts []scrape.Verdict) {
	for _, v := range verdicts {
		state := "accepted"
		if !v.Accepted {
			state = "rejected (" + v.Reason + "): " + v.Message
		}
		fmt.Fprintf(out, "  %-15s %s/%s: %s\n", v.Kind, v.Namespace, v.Name, state)
	}
}
