package postgres

import (
	"net/url"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// podsService is the headless Service of the instance pods: their DNS names,
// published before they are ready (a replica must find the primary while it
// starts).
func podsService(c *postgresv1beta1.PostgresCluster) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: ownedMeta(c, PodsServiceName(c.Name), nil),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 SelectorLabels(c.Name),
			PublishNotReadyAddresses: true,
			Ports:                    servicePorts(c, nil),
		},
	}
}

// roleService is the Service of the pods whose instance manager labelled
// them with role: the primary, or the replicas.
func roleService(c *postgresv1beta1.PostgresCluster, name, role string, spec *postgresv1beta1.ServiceSpec) *corev1.Service {
	selector := SelectorLabels(c.Name)
	selector[pgcontract.LabelRole] = role
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: ownedMeta(c, name, nil),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector,
			Ports:    servicePorts(c, spec),
		},
	}
	if spec != nil {
		if spec.Type != "" {
			svc.Spec.Type = corev1.ServiceType(spec.Type)
		}
		svc.Spec.InternalTrafficPolicy = spec.InternalTrafficPolicy
		if svc.Spec.Type != corev1.ServiceTypeClusterIP && spec.ExternalTrafficPolicy != nil {
			svc.Spec.ExternalTrafficPolicy = *spec.ExternalTrafficPolicy
		}
		svc.Spec.IPFamilyPolicy = spec.IPFamilyPolicy
		svc.Spec.IPFamilies = slices.Clone(spec.IPFamilies)
	}
	return svc
}

func servicePorts(c *postgresv1beta1.PostgresCluster, spec *postgresv1beta1.ServiceSpec) []corev1.ServicePort {
	p := corev1.ServicePort{
		Name:       pgcontract.PostgresPortName,
		Protocol:   corev1.ProtocolTCP,
		Port:       port(c),
		TargetPort: intstr.FromString(pgcontract.PostgresPortName),
	}
	if spec != nil && spec.NodePort != nil && spec.Type != string(corev1.ServiceTypeClusterIP) && spec.Type != "" {
		p.NodePort = *spec.NodePort
	}
	return []corev1.ServicePort{p}
}

// instanceRBAC lets the instance managers do their part and nothing else:
// hold the cluster's Lease, label their own pods, list the pods of the
// namespace (their peers' addresses), read the config Secret by name, and
// report Events. Pod names are known: each instance has one.
func instanceRBAC(c *postgresv1beta1.PostgresCluster, instances []string) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	name := InstanceRBACName(c.Name)
	pods := make([]string, len(instances))
	for i, inst := range instances {
		pods[i] = PodName(inst)
	}
	return serviceAccountWithRole(c, name, []rbacv1.PolicyRule{
		{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"},
			ResourceNames: []string{pgcontract.LeaseName(c.Name)}, Verbs: []string{"get", "watch", "update", "patch"}},
		// create cannot be limited to a name: the apiserver does not know it yet.
		{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: pods, Verbs: []string{"get", "patch"}},
		// The managers find their peers' addresses by listing the cluster's
		// pods by label, which RBAC cannot limit to names: read-only.
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"},
			ResourceNames: []string{pgcontract.ConfigSecretName(c.Name)}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	})
}

// serviceAccountWithRole is a ServiceAccount name of cluster c bound to a
// Role of its own holding rules: what each of the cluster's pods (instance
// managers, poolers, backup Jobs) may do through the API.
func serviceAccountWithRole(c *postgresv1beta1.PostgresCluster, name string, rules []rbacv1.PolicyRule) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: ownedMeta(c, name, nil),
	}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: ownedMeta(c, name, nil),
		Rules:      rules,
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: ownedMeta(c, name, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: c.Namespace}},
	}
	return sa, role, binding
}

// disruptionBudget keeps minAvailable instances of a set through voluntary
// disruptions (node drains); none without minAvailable.
func disruptionBudget(c *postgresv1beta1.PostgresCluster, set *postgresv1beta1.PostgresInstanceSetSpec, name string) *policyv1.PodDisruptionBudget {
	if set.MinAvailable == nil {
		return nil
	}
	selector := SelectorLabels(c.Name)
	selector[pgcontract.LabelInstanceSet] = name
	m := *set.MinAvailable
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: ownedMeta(c, c.Name+"-set-"+name, map[string]string{pgcontract.LabelInstanceSet: name}),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &m,
			Selector:     &metav1.LabelSelector{MatchLabels: selector},
		},
	}
}

func urlUserInfo(user, password string) string { return url.UserPassword(user, password).String() }

func urlPathEscape(s string) string { return url.PathEscape(s) }

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
