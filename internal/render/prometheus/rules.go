package prometheus

import (
	"path"
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
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

func ruleVolumeName(i int) string { return "rules-" + strconv.Itoa(i) }

func ruleConfigMaps(p *monitoringv1.Prometheus, opts Options) []*corev1.ConfigMap {
	out := make([]*corev1.ConfigMap, 0, len(opts.RuleConfigMaps))
	for i, data := range opts.RuleConfigMaps {
		meta := ownedMeta(p, opts, RuleConfigMapName(p.Name, i))
		meta.Labels[LabelRuleConfigMapOwner] = p.Name
		cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{}}
		cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		for k, v := range data {
			cm.Data[k] = v
		}
		out = append(out, cm)
	}
	return out
}

func ruleVolumes(p *monitoringv1.Prometheus) []corev1.Volume {
	if FlavourOf(p).Agent {
		return nil // an agent evaluates no rules
	}
	vols := make([]corev1.Volume, 0, RuleConfigMapSlots)
	for i := range RuleConfigMapSlots {
		vols = append(vols, corev1.Volume{Name: ruleVolumeName(i), VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: RuleConfigMapName(p.Name, i)},
			Optional:             ptrTo(true),
		}}})
	}
	return vols
}

func ruleMounts(p *monitoringv1.Prometheus) []corev1.VolumeMount {
	if FlavourOf(p).Agent {
		return nil
	}
	mounts := make([]corev1.VolumeMount, 0, RuleConfigMapSlots)
	for i := range RuleConfigMapSlots {
		mounts = append(mounts, corev1.VolumeMount{Name: ruleVolumeName(i), MountPath: path.Join(RulesDir, RuleConfigMapName(p.Name, i)), ReadOnly: true})
	}
	return mounts
}

func ruleWatchArgs(p *monitoringv1.Prometheus) []string {
	args := make([]string, 0, RuleConfigMapSlots)
	for _, m := range ruleMounts(p) {
		args = append(args, "--watched-dir="+m.MountPath)
	}
	return args
}
