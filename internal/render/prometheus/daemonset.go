package prometheus

import (
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// EnvNodeName is the reloader's variable holding the node a DaemonSet pod runs on; the
// config refers to it as $(NODE_NAME) to discover only that node's pods.
const EnvNodeName = "NODE_NAME"

// daemonSet runs one pod per node (a PrometheusAgent in DaemonSet mode): the same pod as a
// StatefulSet's shard 0, selected without the shard label, since a DaemonSet has no shards.
func daemonSet(p *monitoringv1.Prometheus, opts Options) (*appsv1.DaemonSet, error) {
	pod, err := podSpec(p, opts, 0)
	if err != nil {
		return nil, err
	}
	fl := FlavourOf(p)
	meta := workloadMeta(p, opts, fl.StatefulSetName(p.Name, 0))
	selector := fl.PodLabels(p.Name)
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: meta,
		Spec: appsv1.DaemonSetSpec{
			Selector:        &metav1.LabelSelector{MatchLabels: selector},
			MinReadySeconds: workload.Value(p.Spec.MinReadySeconds),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      workload.PodLabels(p.Spec.PodMetadata, selector, map[string]string{fl.OwnerLabel: p.Name}),
					Annotations: podTemplateAnnotations(p),
				},
				Spec: pod,
			},
		},
	}, nil
}

// reloaderEnv is what the reloader substitutes in the config besides the pod's name: the
// shard, and on a DaemonSet the node.
func reloaderEnv(opts Options, shard int32) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "SHARD", Value: strconv.Itoa(int(shard))}}
	if opts.DaemonSet {
		env = append(env, corev1.EnvVar{Name: EnvNodeName, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}})
	}
	return env
}
