package workload

import (
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuleFiles is how a workload's pods get the rule ConfigMaps the rules package packs:
// a fixed number of ConfigMap names, each mounted as an optional volume under Dir, so the
// number in use can change without changing the pod template (and rolling the pods).
type RuleFiles struct {
	// Name is the name of rule ConfigMap i.
	Name func(i int) string
	// Dir holds one directory per ConfigMap, named like it.
	Dir   string
	Slots int
}

func ruleVolumeName(i int) string { return "rules-" + strconv.Itoa(i) }

// ConfigMaps are the ConfigMaps holding data, in order; meta gives each its metadata.
func (r RuleFiles) ConfigMaps(data []map[string]string, meta func(name string) metav1.ObjectMeta) []*corev1.ConfigMap {
	out := make([]*corev1.ConfigMap, 0, len(data))
	for i, files := range data {
		cm := &corev1.ConfigMap{ObjectMeta: meta(r.Name(i)), Data: make(map[string]string, len(files))}
		cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		for k, v := range files {
			cm.Data[k] = v
		}
		out = append(out, cm)
	}
	return out
}

// Volumes are the pod's optional ConfigMap volumes, one per slot.
func (r RuleFiles) Volumes() []corev1.Volume {
	vols := make([]corev1.Volume, 0, r.Slots)
	for i := range r.Slots {
		vols = append(vols, corev1.Volume{Name: ruleVolumeName(i), VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: r.Name(i)},
			Optional:             Ptr(true),
		}}})
	}
	return vols
}

// Mounts mount every slot read-only at Dir/<ConfigMap name>.
func (r RuleFiles) Mounts() []corev1.VolumeMount {
	mounts := make([]corev1.VolumeMount, 0, r.Slots)
	for i := range r.Slots {
		mounts = append(mounts, corev1.VolumeMount{Name: ruleVolumeName(i), MountPath: path.Join(r.Dir, r.Name(i)), ReadOnly: true})
	}
	return mounts
}

// WatchArgs make the config reloader reload when a rule directory changes.
func (r RuleFiles) WatchArgs() []string {
	args := make([]string, 0, r.Slots)
	for _, m := range r.Mounts() {
		args = append(args, "--watched-dir="+m.MountPath)
	}
	return args
}
