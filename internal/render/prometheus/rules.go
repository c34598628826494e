package prometheus

import (
	"path"
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// RuleConfigMapSlots is how many rule ConfigMap names every pod mounts, each as an
// optional volume: the number of ConfigMaps in use can change between 0 and this without
// changing the pod template, so adding rules never rolls the pods.
const RuleConfigMapSlots = 8

// RulesDir holds one directory per rule ConfigMap.
const RulesDir = "/etc/prometheus/rules"

// LabelRuleConfigMapOwner is the existing operator's label on rule ConfigMaps.
const LabelRuleConfigMapOwner = "prometheus-name"

// RuleConfigMapName is the name of rule ConfigMap i.
func RuleConfigMapName(name string, i int) string {
	return "prometheus-" + name + "-rulefiles-" + strconv.Itoa(i)
}

// RuleFilesGlobs are the rule_files patterns, one per ConfigMap slot:
// Prometheus allows a wildcard only in the last path segment.
func RuleFilesGlobs(name string) []string {
	out := make([]string, 0, RuleConfigMapSlots)
	for i := range RuleConfigMapSlots {
		out = append(out, path.Join(RulesDir, RuleConfigMapName(name, i), "*.yaml"))
	}
	return out
}

// ruleFiles are the rule ConfigMap slots of p's pods: none for an agent, which evaluates
// no rules.
func ruleFiles(p *monitoringv1.Prometheus) workload.RuleFiles {
	slots := RuleConfigMapSlots
	if FlavourOf(p).Agent {
		slots = 0
	}
	return workload.RuleFiles{Name: func(i int) string { return RuleConfigMapName(p.Name, i) }, Dir: RulesDir, Slots: slots}
}

func ruleConfigMaps(p *monitoringv1.Prometheus, opts Options) []*corev1.ConfigMap {
	return ruleFiles(p).ConfigMaps(opts.RuleConfigMaps, func(name string) metav1.ObjectMeta {
		meta := ownedMeta(p, opts, name)
		meta.Labels[LabelRuleConfigMapOwner] = p.Name
		return meta
	})
}

func ruleVolumes(p *monitoringv1.Prometheus) []corev1.Volume { return ruleFiles(p).Volumes() }

func ruleMounts(p *monitoringv1.Prometheus) []corev1.VolumeMount { return ruleFiles(p).Mounts() }

func ruleWatchArgs(p *monitoringv1.Prometheus) []string { return ruleFiles(p).WatchArgs() }
