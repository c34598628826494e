package prometheus

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// governingService is the headless Service that gives the pods their DNS names
// (prometheus-<name>-<i>.prometheus-operated). All Prometheus objects of a namespace
// share it, so no single one controls it: each adds a non-controller owner reference
// under its own field manager (see Shared), and the garbage collector deletes it when
// the last owner is gone. It carries no per-Prometheus label for the same reason: two
// owners applying different values would conflict.
func governingService(p *monitoringv1.Prometheus, opts Options) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      GoverningServiceName(p),
			Namespace: p.Namespace,
			Labels: map[string]string{
				labelOperatedPrometheus: "true",
				labelManagedBy:          operatorName(opts),
				LabelShared:             "true",
			},
			OwnerReferences: []metav1.OwnerReference{ownerReference(p, false)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Ports: append([]corev1.ServicePort{{
				Name:       WebPortName(p),
				Port:       webPort,
				TargetPort: intstr.FromString(WebPortName(p)),
				Protocol:   corev1.ProtocolTCP,
			}}, thanosServicePorts(p)...),
			// Every Prometheus pod of the namespace, ours or the existing operator's during a
			// migration, and not a Prometheus someone runs with a Helm chart.
			Selector: map[string]string{
				labelAppName:   FlavourOf(p).AppName,
				labelManagedBy: selectorManagedBy,
			},
		},
	}
}

// service is the ClusterIP Service in front of the pods of all shards.
func service(p *monitoringv1.Prometheus, opts Options) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: ownedMeta(p, opts, FlavourOf(p).ServiceName(p.Name)),
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{
				{Name: WebPortName(p), Port: webPort, TargetPort: intstr.FromString(WebPortName(p)), Protocol: corev1.ProtocolTCP},
				{Name: reloaderPortName, Port: reloaderPort, TargetPort: intstr.FromString(reloaderPortName), Protocol: corev1.ProtocolTCP},
			},
			Selector: FlavourOf(p).PodLabels(p.Name),
			// Replicas scrape at slightly different times; sticking a client to one replica
			// keeps its graphs from jittering between them.
			SessionAffinity: corev1.ServiceAffinityClientIP,
		},
	}
}
