package install

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// The chart is written from the same objects as the base, rendered with
// placeholder values that are then replaced by template actions: a scalar
// placeholder by an expression, a "key: __BLOCK_<value>__" line by a block
// that writes the key only when the value is set.
const (
	phNamespace     = "__NAMESPACE__"
	phImage         = "__IMAGE__"
	phReloaderImage = "__RELOADER_IMAGE__"
	phWatchNS       = "__WATCH_NAMESPACE__"
	phReplicas      = "__REPLICAS__"
	phExtraArgs     = "__EXTRA_ARGS__"
	phBlock         = "__BLOCK_"
	phNSSelector    = "__NAMESPACE_SELECTOR__"
)

var scalarActions = strings.NewReplacer(
	phNamespace, "{{ $.Release.Namespace }}",
	phImage, `{{ include "lookout.image" $ }}`,
	phReloaderImage, `{{ include "lookout.reloaderImage" $ }}`,
	phWatchNS, "{{ . }}",
	phReplicas, "{{ $.Values.replicas }}",
)

// escapeActions keeps text that looks like a template action (the alerts'
// {{ $labels.x }}) as it is.
var escapeActions = strings.NewReplacer("{{", `{{"{{"}}`, "}}", `{{"}}"}}`)

var (
	nsSelectorLine = regexp.MustCompile(`(?m)^( *)namespaceSelector: ` + phNSSelector + `$`)
	blockLine      = regexp.MustCompile(`(?m)^( *)(- )?([A-Za-z]+): ` + phBlock + `([A-Za-z.]+)__$`)
	listLine       = regexp.MustCompile(`(?m)^( *)- ` + phExtraArgs + `$`)
)

// template turns objects rendered with placeholders into a template.
func template(objs []runtime.Object, edit func(map[string]any)) (string, error) {
	var docs []string
	for _, o := range objs {
		m, err := toMap(o)
		if err != nil {
			return "", err
		}
		if edit != nil {
			edit(m)
		}
		y, err := yaml.Marshal(m)
		if err != nil {
			return "", err
		}
		docs = append(docs, string(y))
	}
	s := escapeActions.Replace(strings.Join(docs, "---\n"))
	s = scalarActions.Replace(s)
	s = blockLine.ReplaceAllStringFunc(s, func(line string) string {
		g := blockLine.FindStringSubmatch(line)
		indent, key, value := g[1], g[3], g[4]
		return fmt.Sprintf("%[1]s{{- with $.Values.%[3]s }}\n%[1]s%[2]s:\n%[1]s  {{- toYaml . | nindent %[4]d }}\n%[1]s{{- end }}",
			indent, key, value, len(indent)+2)
	})
	s = nsSelectorLine.ReplaceAllStringFunc(s, func(line string) string {
		indent := nsSelectorLine.FindStringSubmatch(line)[1]
		return fmt.Sprintf("%[1]snamespaceSelector:\n%[1]s{{- if $.Values.namespaces }}\n%[1]s  matchNames:\n%[1]s  {{- toYaml $.Values.namespaces | nindent %[2]d }}\n%[1]s{{- else }}\n%[1]s  any: true\n%[1]s{{- end }}",
			indent, len(indent)+2)
	})
	s = listLine.ReplaceAllStringFunc(s, func(line string) string {
		indent := listLine.FindStringSubmatch(line)[1]
		return fmt.Sprintf("%[1]s{{- if $.Values.namespaces }}\n%[1]s- --namespaces={{ join \",\" $.Values.namespaces }}\n%[1]s{{- end }}\n"+
			"%[1]s{{- if not $.Values.webhook.enabled }}\n%[1]s- --webhook=false\n%[1]s{{- end }}\n"+
			"%[1]s{{- with $.Values.extraArgs }}\n%[1]s{{- toYaml . | nindent %[2]d }}\n%[1]s{{- end }}", indent, len(indent))
	})
	if strings.Contains(s, "__") && regexp.MustCompile(`__[A-Z_]+__`).MatchString(s) {
		return "", fmt.Errorf("placeholder left in template: %s", regexp.MustCompile(`__[A-Z_]+__`).FindString(s))
	}
	return s, nil
}

// set puts v at the dotted path of m (maps only; "containers.0" indexes a list).
func set(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	var cur any = m
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[p] = v
				return
			}
			cur = c[p]
		case []any:
			var idx int
			fmt.Sscanf(p, "%d", &idx)
			if last {
				c[idx] = v
				return
			}
			cur = c[idx]
		}
	}
}

func chart(out map[string][]byte) error {
	o := Options{Namespace: phNamespace, Image: phImage, ReloaderImage: phReloaderImage}
	o.defaults()
	dir := ChartDir + "/"
	// No crds/: Helm stores the whole chart in the release Secret, and the
	// ten CRDs alone take it past the 1 MiB an object may have (the install
	// test found it). They are applied first, server-side, from config/crd.
	add := func(name, cond string, objs []runtime.Object, edit func(map[string]any)) error {
		t, err := template(objs, edit)
		if err != nil {
			return fmt.Errorf("chart template %s: %w", name, err)
		}
		if cond != "" {
			t = "{{- if " + cond + " }}\n" + t + "{{- end }}\n"
		}
		out[dir+"templates/"+name] = []byte(generatedHeader + t)
		return nil
	}
	// The release namespace is created by Helm (--create-namespace); its
	// Pod Security label is in the README.
	if err := add("serviceaccount.yaml", "", []runtime.Object{ServiceAccount(o)}, nil); err != nil {
		return err
	}
	rbac := RBAC(o)
	// RBAC(o) with all namespaces: ClusterRole+Binding (cluster scope), the
	// watched ClusterRole+Binding, the operator Role+Binding.
	if err := add("rbac.yaml", "", append(append([]runtime.Object{}, rbac[:2]...), rbac[4:]...), nil); err != nil {
		return err
	}
	watchedAll, err := template(rbac[2:4], nil)
	if err != nil {
		return err
	}
	watchedNS, err := template(WatchedRBAC(Options{Namespace: phNamespace, WatchNamespaces: []string{phWatchNS}}), nil)
	if err != nil {
		return err
	}
	out[dir+"templates/rbac-watched.yaml"] = []byte(generatedHeader +
		"{{- if not .Values.namespaces }}\n" + watchedAll +
		"{{- else }}\n{{- range .Values.namespaces }}\n---\n" + watchedNS + "{{- end }}\n{{- end }}\n")

	err = add("deployment.yaml", "", []runtime.Object{Deployment(o)}, func(m map[string]any) {
		set(m, "spec.replicas", phReplicas)
		pod := "spec.template.spec."
		set(m, pod+"securityContext", phBlock+"podSecurityContext__")
		set(m, pod+"affinity", phBlock+"affinity__")
		set(m, pod+"nodeSelector", phBlock+"nodeSelector__")
		set(m, pod+"tolerations", phBlock+"tolerations__")
		c := pod + "containers.0."
		set(m, c+"resources", phBlock+"resources__")
		set(m, c+"securityContext", phBlock+"securityContext__")
		args := Args(o)
		list := make([]any, 0, len(args)+1)
		for _, a := range args {
			list = append(list, a)
		}
		set(m, c+"args", append(list, phExtraArgs))
	})
	if err != nil {
		return err
	}
	if err := add("pdb.yaml", "gt (int .Values.replicas) 1", []runtime.Object{PodDisruptionBudget(o)}, nil); err != nil {
		return err
	}
	if err := add("networkpolicy.yaml", ".Values.networkPolicy.enabled", []runtime.Object{NetworkPolicy(o)}, nil); err != nil {
		return err
	}
	if err := add("metrics-service.yaml", "", []runtime.Object{MetricsService(o)}, nil); err != nil {
		return err
	}
	if err := add("webhook.yaml", ".Values.webhook.enabled", []runtime.Object{WebhookService(o), WebhookConfiguration(o)}, nil); err != nil {
		return err
	}
	self := []runtime.Object{ServiceMonitor(o), ReloaderPodMonitor(o), PrometheusRule(o), Dashboard(o)}
	if err := add("selfmonitoring.yaml", ".Values.selfMonitoring.enabled", self, func(m map[string]any) {
		if m["kind"] == "PodMonitor" {
			set(m, "spec.namespaceSelector", phNSSelector)
		}
	}); err != nil {
		return err
	}

	out[dir+"templates/_helpers.tpl"] = []byte(`{{/* Generated by ` + "`go run ./hack/install`" + ` from internal/install; do not edit. */}}
{{- define "lookout.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- define "lookout.reloaderImage" -}}
{{ .Values.reloaderImage.repository }}:{{ .Values.reloaderImage.tag | default .Chart.AppVersion }}
{{- end }}
`)
	out[dir+"Chart.yaml"] = []byte(generatedHeader + `apiVersion: v2
name: lookout
description: Lookout, a Kubernetes operator for Prometheus serving the monitoring.coreos.com API
type: application
version: ` + strings.TrimPrefix(Version, "v") + `
appVersion: ` + Version + `
`)
	values, err := valuesYAML()
	if err != nil {
		return err
	}
	out[dir+"values.yaml"] = values
	out[dir+".helmignore"] = []byte("# Generated by `go run ./hack/install`.\n.git/\n*.swp\n")
	return nil
}

func valuesYAML() ([]byte, error) {
	block := func(v any) (string, error) {
		m, err := toMapAny(v)
		if err != nil {
			return "", err
		}
		y, err := yaml.Marshal(m)
		if err != nil {
			return "", err
		}
		return "  " + strings.ReplaceAll(strings.TrimRight(string(y), "\n"), "\n", "\n  "), nil
	}
	d := Deployment(Options{})
	r := Resources()
	res, err := block(&r)
	if err != nil {
		return nil, err
	}
	aff, err := block(d.Spec.Template.Spec.Affinity)
	if err != nil {
		return nil, err
	}
	psc, err := block(PodSecurityContext())
	if err != nil {
		return nil, err
	}
	sc, err := block(ContainerSecurityContext())
	if err != nil {
		return nil, err
	}
	return []byte(generatedHeader + `# Operator image; tag defaults to the chart's appVersion.
image:
  repository: ` + ImageRepo + `
  tag: ""
# Image of the config-reloader sidecar the operator puts next to Prometheus and Alertmanager.
reloaderImage:
  repository: ` + ReloaderRepo + `
  tag: ""
# Replicas elect a leader; every replica serves the webhook. A PodDisruptionBudget keeps one when there are more than one.
replicas: 2
# Namespaces to watch; empty watches all of them. With a list, the namespaced objects' permissions
# are a Role in each of these namespaces instead of a ClusterRole.
namespaces: []
webhook:
  # The validating admission webhook and AlertmanagerConfig conversion (the operator manages its certificate).
  enabled: true
selfMonitoring:
  # ServiceMonitor, PrometheusRule and Grafana dashboard ConfigMap for the operator itself.
  enabled: true
networkPolicy:
  # Only webhook and metrics in; only DNS and the apiserver out.
  enabled: true
# More operator flags, e.g. [--log-level=debug, --workers=8].
extraArgs: []
resources:
` + res + `
nodeSelector: {}
tolerations: []
affinity:
` + aff + `
podSecurityContext:
` + psc + `
securityContext:
` + sc + `
`), nil
}

func toMapAny(v any) (map[string]any, error) {
	m, err := toMap(v)
	if err != nil {
		return nil, err
	}
	return m, nil
}
