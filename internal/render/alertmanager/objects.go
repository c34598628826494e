package alertmanager

import (
	"errors"
	"fmt"
	"maps"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Options are the inputs of Objects besides the spec.
type Options struct {
	// ConfigGzip is the gzipped alertmanager.yaml.
	ConfigGzip []byte
	// Files are further files of the generated config Secret (templates), by key.
	Files map[string][]byte
	// ReloaderImage is the image of the config-reloader containers.
	ReloaderImage string
}

// Object is what Objects returns: a typed Kubernetes object.
type Object = workload.Object

// Objects renders every object of one Alertmanager, in the order they are applied: the
// reloader's Role and RoleBinding, the config and web-config Secrets, the governing
// Service (co-owned by every Alertmanager of the namespace, see workload.Shared), the
// StatefulSet. Every object has its TypeMeta set and an owner reference to am.
func Objects(am *monitoringv1.Alertmanager, opts Options) ([]Object, error) {
	if err := Validate(am); err != nil {
		return nil, err
	}
	if len(opts.ConfigGzip) == 0 {
		return nil, errors.New("render Alertmanager " + am.Namespace + "/" + am.Name + ": no configuration given")
	}
	if opts.ReloaderImage == "" {
		return nil, errors.New("render Alertmanager " + am.Namespace + "/" + am.Name + ": no reloader image given")
	}
	web, err := workload.WebConfigFileTLS(webFields(am), webTLSDir)
	if err != nil {
		return nil, fmt.Errorf("render Alertmanager %s/%s: %w", am.Namespace, am.Name, err)
	}
	sts, err := statefulSet(am, opts)
	if err != nil {
		return nil, err
	}
	role, binding := reloaderRBAC(am)
	out := []Object{
		role, binding,
		configSecret(am, opts),
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: ownedMeta(am, WebConfigSecretName(am.Name)),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{WebConfigSecretKey: web},
		},
	}
	if am.Spec.ClusterTLS != nil {
		file, err := clusterTLSFile(am)
		if err != nil {
			return nil, fmt.Errorf("render Alertmanager %s/%s: %w", am.Namespace, am.Name, err)
		}
		out = append(out, clusterTLSSecret(am, file))
	}
	// A custom spec.serviceName names a Service the user provides, as with
	// prometheus-operator: Lookout does not create it.
	if am.Spec.ServiceName == nil || *am.Spec.ServiceName == "" {
		out = append(out, governingService(am))
	}
	out = append(out, sts)
	// The builders share slices and maps with am; copy so callers may change either.
	for i, obj := range out {
		out[i] = obj.DeepCopyObject().(Object)
	}
	return out, nil
}

func webFields(am *monitoringv1.Alertmanager) *monitoringv1.WebConfigFileFields {
	if am.Spec.Web == nil {
		return nil
	}
	return &am.Spec.Web.WebConfigFileFields
}

func configSecret(am *monitoringv1.Alertmanager, opts Options) *corev1.Secret {
	data := make(map[string][]byte, len(opts.Files)+1)
	maps.Copy(data, opts.Files)
	data[ConfigSecretKey] = opts.ConfigGzip
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: ownedMeta(am, ConfigSecretName(am.Name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// RBACName names the reloader's Role and RoleBinding.
func RBACName(am *monitoringv1.Alertmanager) string { return "lookout:alertmanager:" + am.Name }

// reloaderRBAC lets the pods' ServiceAccount read and watch the generated config Secret
// and no other: resourceNames authorizes list and watch only when the request selects the
// object by name, which is what the reloader sends.
func reloaderRBAC(am *monitoringv1.Alertmanager) (*rbacv1.Role, *rbacv1.RoleBinding) {
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: ownedMeta(am, RBACName(am)),
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{""},
			Resources:     []string{"secrets"},
			ResourceNames: []string{ConfigSecretName(am.Name)},
			Verbs:         []string{"get", "list", "watch"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: ownedMeta(am, RBACName(am)),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RBACName(am)},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName(am), Namespace: am.Namespace}},
	}
	return role, binding
}

// governingService is the headless Service that gives the pods the DNS names their peers
// reach them by. Every Alertmanager of the namespace shares it: each adds a non-controller
// owner reference under its own field manager, and the garbage collector deletes it with
// the last owner. Not-ready pods are published too: a replica must find its peers before
// it can become ready.
func governingService(am *monitoringv1.Alertmanager) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      GoverningServiceName(am),
			Namespace: am.Namespace,
			Labels: map[string]string{
				labelOperatedAlertmanager: "true",
				labelManagedBy:            "lookout",
				workload.LabelShared:      "true",
			},
			OwnerReferences: []metav1.OwnerReference{ownerReference(am, false)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{
				{Name: PortName(am), Port: webPort, TargetPort: intstr.FromString(PortName(am)), Protocol: corev1.ProtocolTCP},
				{Name: meshTCPPortName, Port: meshPort, TargetPort: intstr.FromInt32(meshPort), Protocol: corev1.ProtocolTCP},
				{Name: meshUDPPortName, Port: meshPort, TargetPort: intstr.FromInt32(meshPort), Protocol: corev1.ProtocolUDP},
			},
			// Every Alertmanager pod of the namespace that this operator (or the existing
			// one, during a migration) runs, and not one someone runs with a Helm chart.
			Selector: map[string]string{labelAppName: appName, labelManagedBy: selectorManagedBy},
		},
	}
}
