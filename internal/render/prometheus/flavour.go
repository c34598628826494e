package prometheus

import (
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Flavour is what differs between the two workloads built from the fields Prometheus and
// PrometheusAgent share (CommonPrometheusFields): object names, labels, the owner kind and
// whether the server runs in agent mode. Everything else — pod spec, reloader, config
// Secret and pieces, RBAC, web config — is the same code for both.
type Flavour struct {
	// OwnerKind and OwnerAPIVersion are the owner references' kind and apiVersion.
	OwnerKind, OwnerAPIVersion string
	// Prefix starts every generated name: "<Prefix>-<name>".
	Prefix string
	// AppName is the app.kubernetes.io/name label of pods and objects.
	AppName string
	// GoverningService is the default headless Service shared by the pods of a namespace.
	GoverningService string
	// OwnerLabel holds the owner's name on every generated object; two kinds use two
	// labels so that pruning one owner's objects never touches the other kind's.
	OwnerLabel string
	// rbacKind is the middle part of the RBAC names "lookout:<rbacKind>:<ns>:<name>".
	rbacKind string
	// Agent runs Prometheus in agent mode: no TSDB, no rules, no alerting.
	Agent bool
	// Mode is the LabelMode value of the StatefulSets (or DaemonSet); none when empty.
	Mode string
}

const (
	// LabelPrometheusAgent holds the name of the PrometheusAgent an object was generated for.
	LabelPrometheusAgent = "lookout.dev/prometheus-agent"
	// LabelMode on a StatefulSet or DaemonSet says whether it runs a server or an agent, as
	// the existing operator's label does (kube-state-metrics queries tell them apart by it).
	LabelMode = "operator.prometheus.io/mode"
)

// Server is the flavour of a Prometheus; Agent of a PrometheusAgent, named as the existing
// operator names them (docs/compatibility.md).
var (
	Server = &Flavour{
		OwnerKind: monitoringv1.PrometheusesKind, OwnerAPIVersion: monitoringv1.SchemeGroupVersion.String(),
		Prefix: "prometheus", AppName: "prometheus", GoverningService: "prometheus-operated",
		OwnerLabel: LabelPrometheus, rbacKind: "prometheus", Mode: "server",
	}
	Agent = &Flavour{
		OwnerKind: monitoringv1alpha1.PrometheusAgentsKind, OwnerAPIVersion: monitoringv1alpha1.SchemeGroupVersion.String(),
		Prefix: "prom-agent", AppName: "prometheus-agent", GoverningService: "prometheus-agent-operated",
		OwnerLabel: LabelPrometheusAgent, rbacKind: "prometheus-agent", Agent: true, Mode: "agent",
	}
)

// FlavourOf is the flavour of p: Agent for the view AgentView makes of a PrometheusAgent,
// Server otherwise.
func FlavourOf(p *monitoringv1.Prometheus) *Flavour {
	if p.Kind == monitoringv1alpha1.PrometheusAgentsKind {
		return Agent
	}
	return Server
}

// AgentView is the Prometheus the shared renderer builds a PrometheusAgent from: the same
// metadata and CommonPrometheusFields, nothing of what only a server has, and the kind
// PrometheusAgent, which selects the Agent flavour. Its spec.mode is not part of it: the
// caller passes the mode on (Options.DaemonSet, scrape.Input.NodeLocal).
func AgentView(a *monitoringv1alpha1.PrometheusAgent) *monitoringv1.Prometheus {
	return &monitoringv1.Prometheus{
		TypeMeta:   metav1.TypeMeta{Kind: monitoringv1alpha1.PrometheusAgentsKind, APIVersion: monitoringv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: a.ObjectMeta,
		Spec:       monitoringv1.PrometheusSpec{CommonPrometheusFields: a.Spec.CommonPrometheusFields},
		Status:     a.Status,
	}
}

// ConfigSecretName is the name of the Secret holding the gzipped prometheus.yaml.
func (f *Flavour) ConfigSecretName(name string) string { return f.Prefix + "-" + name }

// WebConfigSecretName is the name of the Secret holding the web config file.
func (f *Flavour) WebConfigSecretName(name string) string {
	return f.Prefix + "-" + name + "-web-config"
}

// ServiceName is the name of the ClusterIP Service in front of all pods.
func (f *Flavour) ServiceName(name string) string { return f.Prefix + "-" + name }

// StatefulSetName is the name of the StatefulSet running one shard (or of the DaemonSet).
func (f *Flavour) StatefulSetName(name string, shard int32) string {
	if shard == 0 {
		return f.Prefix + "-" + name
	}
	return f.Prefix + "-" + name + "-shard-" + strconv.Itoa(int(shard))
}

// ConfigPieceSecretName is the Secret of config piece i.
func (f *Flavour) ConfigPieceSecretName(name string, i int) string {
	return f.Prefix + "-" + name + "-scrape-" + strconv.Itoa(i)
}

// VolumeClaimTemplateName is the name of the data volume.
func (f *Flavour) VolumeClaimTemplateName(name string) string { return f.Prefix + "-" + name + "-db" }

// PodLabels are the labels every pod carries, whatever its shard; they select the pods of
// all shards (the ClusterIP Service, status.selector). A server's pods also carry
// prometheus=<name>, as with the existing operator; an agent's do not.
func (f *Flavour) PodLabels(name string) map[string]string {
	l := map[string]string{
		labelAppName:   f.AppName,
		labelManagedBy: selectorManagedBy,
		labelInstance:  name,
		labelOpName:    name,
	}
	if !f.Agent {
		l[labelPrometheus] = name
	}
	return l
}

// SelectorLabels are the StatefulSet selector of one shard: PodLabels plus the shard.
func (f *Flavour) SelectorLabels(name string, shard int32) map[string]string {
	l := f.PodLabels(name)
	l[labelShard] = strconv.Itoa(int(shard))
	return l
}

func (f *Flavour) ownerReference(name string, uid types.UID, controller bool) metav1.OwnerReference {
	ref := workload.OwnerReference(f.OwnerKind, name, uid, controller)
	ref.APIVersion = f.OwnerAPIVersion
	return ref
}
