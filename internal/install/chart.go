package install

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/pgcontract"
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
	phEgress        = "__EGRESS__"
	phFullname      = "__FULLNAME__"
	phPodLabels     = "__PODLABELS__"
)

var scalarActions = strings.NewReplacer(
	phNamespace, "{{ $.Release.Namespace }}",
	phImage, `{{ include "lookout.image" $ }}`,
	phReloaderImage, `{{ include "lookout.reloaderImage" $ }}`,
	phWatchNS, "{{ . }}",
	phReplicas, "{{ $.Values.replicas }}",
	phFullname, `{{ include "lookout.fullname" $ }}`,
)

// escapeActions keeps text that looks like a template action (the alerts'
// {{ $labels.x }}) as it is.
var escapeActions = strings.NewReplacer("{{", `{{"{{"}}`, "}}", `{{"}}"}}`)

var (
	blockLine     = regexp.MustCompile(`(?m)^( *)(- )?([A-Za-z]+): ` + phBlock + `([A-Za-z.]+)__$`)
	listLine      = regexp.MustCompile(`(?m)^( *)- ` + phExtraArgs + `$`)
	egressLine    = regexp.MustCompile(`(?m)^( *)egress: ` + phEgress + `$`)
	podLabelsLine = regexp.MustCompile(`(?m)^( *)` + phPodLabels + `: x$`)
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
	s = egressLine.ReplaceAllStringFunc(s, func(line string) string {
		// NetworkPolicy's egress: open, or DNS and the apiserver's ports
		// (to its CIDRs when given), as NetworkPolicy(Options) writes it.
		return fmt.Sprintf(`%[1]segress:
%[1]s{{- with $.Values.networkPolicy.apiServerPorts }}
%[1]s- ports:
%[1]s  - port: 53
%[1]s    protocol: UDP
%[1]s  - port: 53
%[1]s    protocol: TCP
%[1]s- ports:
%[1]s  {{- range . }}
%[1]s  - port: {{ . }}
%[1]s    protocol: TCP
%[1]s  {{- end }}
%[1]s  {{- with $.Values.networkPolicy.apiServerCIDRs }}
%[1]s  to:
%[1]s  {{- range . }}
%[1]s  - ipBlock:
%[1]s      cidr: {{ . }}
%[1]s  {{- end }}
%[1]s  {{- end }}
%[1]s{{- if $.Values.postgres.enabled }}
%[1]s- ports:
%[1]s  - port: %[2]d
%[1]s    protocol: TCP
%[1]s{{- end }}
%[1]s{{- else }}
%[1]s- {}
%[1]s{{- end }}`, egressLine.FindStringSubmatch(line)[1], pgcontract.ManagerPort)
	})
	s = podLabelsLine.ReplaceAllStringFunc(s, func(line string) string {
		indent := podLabelsLine.FindStringSubmatch(line)[1]
		return fmt.Sprintf("%[1]s{{- with $.Values.podLabels }}\n%[1]s{{- toYaml . | nindent %[2]d }}\n%[1]s{{- end }}", indent, len(indent))
	})
	s = listLine.ReplaceAllStringFunc(s, func(line string) string {
		indent := listLine.FindStringSubmatch(line)[1]
		return fmt.Sprintf("%[1]s{{- if and $.Values.monitoring.enabled $.Values.postgres.enabled }}\n%[1]s- "+chartControllers(Options{Postgres: true})+"\n"+
			"%[1]s{{- else if $.Values.postgres.enabled }}\n%[1]s- "+chartControllers(Options{Postgres: true, NoMonitoring: true})+"\n"+
			"%[1]s{{- else }}\n%[1]s- "+chartControllers(Options{})+"\n%[1]s{{- end }}\n"+
			"%[1]s{{- if $.Values.namespaces }}\n%[1]s- --namespaces={{ join \",\" $.Values.namespaces }}\n%[1]s{{- end }}\n"+
			"%[1]s{{- if not $.Values.webhook.enabled }}\n%[1]s- --webhook=false\n%[1]s{{- end }}\n"+
			"%[1]s{{- if and $.Values.monitoring.enabled $.Values.generateRBAC }}\n%[1]s- "+manageRBACArg+"\n%[1]s{{- else }}\n%[1]s- "+manageRBACArg+"=false\n%[1]s{{- end }}\n"+
			"%[1]s{{- if and $.Values.webhook.enabled $.Values.webhook.conversion }}\n%[1]s- --webhook-conversion\n%[1]s{{- end }}\n"+
			"%[1]s{{- if and $.Values.monitoring.enabled $.Values.selfMonitoring.enabled }}\n%[1]s- --self-monitoring\n%[1]s{{- end }}\n"+
			"%[1]s{{- if $.Values.crds.install }}\n%[1]s- --install-crds\n%[1]s{{- end }}\n"+
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
	o := Options{Namespace: phNamespace, Image: phImage, ReloaderImage: phReloaderImage, ClusterName: phFullname, InstallCRDs: true, GenerateRBAC: true, Postgres: true}
	o.defaults()
	dir := ChartDir + "/"
	// No crds/: Helm stores the whole chart in the release Secret, and the
	// ten CRDs alone take it past the 1 MiB an object may have (the install
	// test found it). They are applied first, server-side, from config/crd.
	addText := func(name, cond, t string) {
		if cond != "" {
			t = "{{- if " + cond + " }}\n" + t + "{{- end }}\n"
		}
		out[dir+"templates/"+name] = []byte(generatedHeader + t)
	}
	add := func(name, cond string, objs []runtime.Object, edit func(map[string]any)) error {
		t, err := template(objs, edit)
		if err != nil {
			return fmt.Errorf("chart template %s: %w", name, err)
		}
		addText(name, cond, t)
		return nil
	}
	// The release namespace is created by Helm (--create-namespace); its
	// Pod Security label is in the README.
	if err := add("serviceaccount.yaml", "", []runtime.Object{ServiceAccount(o)}, func(m map[string]any) {
		set(m, "metadata.annotations", phBlock+"serviceAccount.annotations__")
	}); err != nil {
		return err
	}
	if err := chartRBAC(out, o); err != nil {
		return err
	}
	err := add("deployment.yaml", "", []runtime.Object{Deployment(o)}, func(m map[string]any) {
		set(m, "spec.replicas", phReplicas)
		set(m, "spec.template.metadata.annotations", phBlock+"podAnnotations__")
		podLabels := m["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
		podLabels[phPodLabels] = "x"
		pod := "spec.template.spec."
		set(m, pod+"securityContext", phBlock+"podSecurityContext__")
		set(m, pod+"affinity", phBlock+"affinity__")
		set(m, pod+"nodeSelector", phBlock+"nodeSelector__")
		set(m, pod+"tolerations", phBlock+"tolerations__")
		set(m, pod+"imagePullSecrets", phBlock+"imagePullSecrets__")
		set(m, pod+"priorityClassName", phBlock+"priorityClassName__")
		c := pod + "containers.0."
		set(m, c+"imagePullPolicy", phBlock+"image.pullPolicy__")
		set(m, c+"resources", phBlock+"resources__")
		set(m, c+"securityContext", phBlock+"securityContext__")
		// The optional parts' flags are template conditions (listLine).
		base := o
		base.NoSelfMonitoring, base.InstallCRDs = true, false
		var list []any
		for _, a := range Args(base) {
			if !strings.HasPrefix(a, manageRBACArg) && !strings.HasPrefix(a, controllersArg) {
				list = append(list, a)
			}
		}
		set(m, c+"args", append(list, phExtraArgs))
	})
	if err != nil {
		return err
	}
	// A release runs at least one of the two systems.
	deployment := dir + "templates/deployment.yaml"
	out[deployment] = []byte(generatedHeader + `{{- if not (or .Values.monitoring.enabled .Values.postgres.enabled) }}
{{- fail "monitoring.enabled and postgres.enabled are both false: the operator would run nothing" }}
{{- end }}
` + strings.TrimPrefix(string(out[deployment]), generatedHeader))
	if err := add("pdb.yaml", "gt (int .Values.replicas) 1", []runtime.Object{PodDisruptionBudget(o)}, nil); err != nil {
		return err
	}
	if err := add("networkpolicy.yaml", ".Values.networkPolicy.enabled", []runtime.Object{NetworkPolicy(o)}, func(m map[string]any) {
		set(m, "spec.egress", phEgress)
	}); err != nil {
		return err
	}
	if err := add("metrics-service.yaml", "", []runtime.Object{MetricsService(o)}, nil); err != nil {
		return err
	}
	// The configuration names the kinds the operator of the chosen systems validates.
	var webhooks strings.Builder
	for i, v := range []struct {
		cond string
		opts Options
	}{
		{"and .Values.monitoring.enabled .Values.postgres.enabled", Options{Postgres: true}},
		{".Values.postgres.enabled", Options{Postgres: true, NoMonitoring: true}},
		{"", Options{}},
	} {
		vo := o
		vo.Postgres, vo.NoMonitoring = v.opts.Postgres, v.opts.NoMonitoring
		t, err := template([]runtime.Object{WebhookService(vo), WebhookConfiguration(vo)}, nil)
		if err != nil {
			return fmt.Errorf("chart template webhook.yaml: %w", err)
		}
		switch {
		case i == 0:
			webhooks.WriteString("{{- if " + v.cond + " }}\n")
		case v.cond != "":
			webhooks.WriteString("{{- else if " + v.cond + " }}\n")
		default:
			webhooks.WriteString("{{- else }}\n")
		}
		webhooks.WriteString(t)
	}
	webhooks.WriteString("{{- end }}\n")
	addText("webhook.yaml", ".Values.webhook.enabled", webhooks.String())
	if err := add("dashboard.yaml", "and .Values.monitoring.enabled .Values.selfMonitoring.enabled", []runtime.Object{Dashboard(o)}, nil); err != nil {
		return err
	}

	out[dir+"templates/_helpers.tpl"] = []byte(`{{/* Generated by ` + "`go run ./hack/install`" + ` from internal/install; do not edit. */}}
{{- define "lookout.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- define "lookout.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- define "lookout.reloaderImage" -}}
{{ .Values.reloaderImage.repository }}:{{ .Values.reloaderImage.tag | default .Chart.AppVersion }}
{{- end }}
`)
	out[dir+"Chart.yaml"] = []byte(generatedHeader + `apiVersion: v2
name: lookout
description: Lookout, a Kubernetes operator serving prometheus-operator's monitoring.coreos.com API and PGO's PostgresCluster
type: application
version: ` + strings.TrimPrefix(Version, "v") + `
appVersion: ` + Version + `
`)
	values, err := valuesYAML()
	if err != nil {
		return err
	}
	out[dir+"values.yaml"] = values
	schema, err := valuesSchema()
	if err != nil {
		return err
	}
	out[dir+"values.schema.json"] = schema
	out[dir+"templates/NOTES.txt"] = []byte(notes)
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
	return []byte(generatedHeader + `# Names the cluster-scoped objects (ClusterRoles, their bindings, the ValidatingWebhookConfiguration)
# and the Roles in watched namespaces; default: the release name, with "-lookout" unless it holds
# "lookout". Two releases (in two namespaces) side by side need two names.
fullnameOverride: ""
monitoring:
  # prometheus-operator's monitoring.coreos.com kinds: Prometheus, Alertmanager, ThanosRuler,
  # PrometheusAgent and what they select (their CRDs, the rights of their controllers).
  enabled: true
postgres:
  # PGO's PostgresCluster (its CRD and the rights of its controller). The operator creates a Role
  # and RoleBinding per cluster for the instance managers and may grant only what it holds itself,
  # so it holds in the watched namespaces every right those Roles grant: Leases, pods' labels,
  # Secrets, Events, on any object there (watch fewer namespaces with namespaces below). It never
  # holds a right on ClusterRoles or ClusterRoleBindings.
  enabled: false
crds:
  # The operator applies the CRDs of the enabled systems, built into it, when it starts, and so
  # upgrades them with itself on every helm upgrade; helm uninstall leaves them (and every
  # object of their kinds). Set false to manage the CRDs yourself (config/crd, config/postgres/crd).
  install: true
# Operator image; tag defaults to the chart's appVersion.
image:
  repository: ` + ImageRepo + `
  tag: ""
  pullPolicy: ""
# Secrets the operator's pod pulls its image with, e.g. [{name: regcred}].
imagePullSecrets: []
serviceAccount:
  annotations: {}
podAnnotations: {}
# Added to the pod's labels (the Deployment's selector labels stay as they are).
podLabels: {}
priorityClassName: ""
# Image of the config-reloader sidecar the operator puts next to Prometheus and Alertmanager.
reloaderImage:
  repository: ` + ReloaderRepo + `
  tag: ""
# Replicas elect a leader; every replica serves the webhook. A PodDisruptionBudget keeps one when there are more than one.
replicas: 2
# The operator gives every Prometheus the RBAC its discovery needs (a Role per namespace it scrapes,
# a ClusterRole for all namespaces or nodes) and every reloader the right to watch its config Secret.
# For that it holds create, update, patch and delete on ClusterRoles, Roles and their bindings, which
# RBAC cannot limit to the ones it creates: its token could empty or delete any role in the cluster.
# Off (the default), as with prometheus-operator: bind each Prometheus's ServiceAccount
# (prometheus-<name>, or spec.serviceAccountName) to get/list/watch on endpoints, endpointslices,
# pods, services (and ingresses for Probes, nodes for node discovery) yourself; the reloaders follow
# the mounted config Secret, which the kubelet syncs within a minute or two, instead of the API.
generateRBAC: false
# Namespaces to watch; empty watches all of them. With a list, the namespaced objects' permissions
# are a Role in each of these namespaces instead of a ClusterRole.
namespaces: []
webhook:
  # The validating admission webhook (the operator manages its certificate).
  enabled: true
  # AlertmanagerConfig conversion between v1beta1 and v1alpha1 through the webhook; without it the
  # apiserver only rewrites apiVersion and prunes what v1alpha1 spells differently. The CRD outlives
  # the release: set this back to false (helm upgrade) before helm uninstall, or reads of v1beta1
  # AlertmanagerConfigs and deletions of namespaces holding one fail.
  conversion: false
selfMonitoring:
  # The Grafana dashboard ConfigMap, and --self-monitoring: the operator applies its ServiceMonitor,
  # the reloaders' PodMonitor and its PrometheusRule in the release namespace when it starts.
  enabled: true
networkPolicy:
  # Only webhook calls and metrics scrapes in.
  enabled: true
  # Egress is open unless apiServerPorts is set; then only DNS and these ports go out (to
  # apiServerCIDRs when set). They are the ports of the apiserver's endpoints, after the
  # kubernetes Service's DNAT: 6443 on kubeadm, 8443 on minikube, 16443 on MicroK8s, 443 on
  # several managed clusters. A wrong list locks the operator out of the apiserver.
  apiServerPorts: []
  apiServerCIDRs: []
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

// chartFeatures are the chart values that turn each feature on.
var chartFeatures = map[controller.Feature]string{
	controller.FeatureMonitoring:         ".Values.monitoring.enabled",
	controller.FeaturePostgres:           ".Values.postgres.enabled",
	controller.FeatureSelfMonitoring:     "and .Values.monitoring.enabled .Values.selfMonitoring.enabled",
	controller.FeatureInstallCRDs:        "and .Values.monitoring.enabled .Values.crds.install",
	controller.FeatureInstallPostgresCRD: "and .Values.postgres.enabled .Values.crds.install",
	controller.FeatureGenerateRBAC:       "and .Values.monitoring.enabled .Values.generateRBAC",
}

// chartControllers is the --controllers argument of o.
func chartControllers(o Options) string { return controllersArg + strings.Join(Controllers(o), ",") }

// chartRBAC writes rbac.yaml: for the operator's own rules and for each
// feature under its value, the cluster and operator-namespace roles, and the
// watched namespaces' roles as a ClusterRole or, with .Values.namespaces, a
// Role in each of them.
func chartRBAC(out map[string][]byte, o Options) error {
	var b strings.Builder
	b.WriteString(generatedHeader)
	watchedNS := o
	watchedNS.WatchNamespaces = []string{phWatchNS}
	for _, f := range append([]controller.Feature{""}, o.features()...) {
		cond, ok := chartFeatures[f]
		if f != "" && !ok {
			return fmt.Errorf("chart: feature %s has no value", f)
		}
		var fixed []runtime.Object
		if rules := clusterRules(o, f); len(rules) > 0 {
			fixed = append(fixed, clusterRole(o, o.roleName(f), rules)...)
		}
		if rules := controller.PolicyRules(controller.ScopeOperator, f); len(rules) > 0 {
			fixed = append(fixed, role(o, o.Namespace, o.roleName(f), rules)...)
		}
		if f != "" {
			b.WriteString("{{- if " + cond + " }}\n")
		}
		if len(fixed) > 0 {
			t, err := template(fixed, nil)
			if err != nil {
				return err
			}
			b.WriteString("---\n" + t)
		}
		if all := WatchedRBAC(o, f); len(all) > 0 {
			tAll, err := template(all, nil)
			if err != nil {
				return err
			}
			tNS, err := template(WatchedRBAC(watchedNS, f), nil)
			if err != nil {
				return err
			}
			b.WriteString("{{- if not $.Values.namespaces }}\n---\n" + tAll +
				"{{- else }}\n{{- range $.Values.namespaces }}\n---\n" + tNS + "{{- end }}\n{{- end }}\n")
		}
		if f != "" {
			b.WriteString("{{- end }}\n")
		}
	}
	out[ChartDir+"/templates/rbac.yaml"] = []byte(b.String())
	return nil
}

// notes is what helm prints after an install or upgrade.
const notes = `Lookout {{ .Chart.AppVersion }} is installed in namespace {{ .Release.Namespace }} as {{ include "lookout.fullname" . }}.
It runs {{ if .Values.monitoring.enabled }}the monitoring.coreos.com controllers{{ if .Values.postgres.enabled }} and {{ end }}{{ end }}{{ if .Values.postgres.enabled }}the PostgresCluster controller{{ end }}.
{{- if .Values.crds.install }}

The operator applies the CRDs of its version when it starts (and so upgrades them with
every helm upgrade). helm uninstall leaves them and every object of their kinds in place;
delete them yourself only if you mean to delete those objects too.
{{- else }}

crds.install is false: apply the CRDs of this version yourself before the operator starts:
{{- if .Values.monitoring.enabled }}
  kubectl apply --server-side -f config/crd/
{{- end }}
{{- if .Values.postgres.enabled }}
  kubectl apply --server-side -f config/postgres/crd/
{{- end }}
{{- end }}

Label the namespace for the Pod Security profile the operator's pod passes:
  kubectl label namespace {{ .Release.Namespace }} pod-security.kubernetes.io/enforce=restricted

Check that it runs and leads:
  kubectl -n {{ .Release.Namespace }} get deployment lookout
  kubectl -n {{ .Release.Namespace }} get lease lookout-operator-leader
{{- if .Values.namespaces }}

It watches the namespaces {{ join ", " .Values.namespaces }}.
{{- end }}
`
