package prometheus

import (
	"slices"
	"strconv"
	"strings"

	"github.com/lookout-operator/lookout/internal/render/workload"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var readVerbs = []string{"get", "list", "watch"}

// discoveryRules let Prometheus run Kubernetes service discovery with the endpoints,
// endpointslice, service and pod roles. Nothing else: the generated configuration inlines
// credentials, so Prometheus reads no Secrets.
func discoveryRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"endpoints", "pods", "services"}, Verbs: readVerbs},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: readVerbs},
		// Probes with ingress targets discover Ingresses.
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: readVerbs},
	}
}

// nodeRules let Prometheus discover nodes (node role, attachMetadata.node); nodes are
// cluster-scoped, so these always go in a ClusterRole.
func nodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: readVerbs}}
}

// reloaderRules let the config reloader read and watch its own config Secret and no
// other. resourceNames authorizes list and watch only when the request selects the
// object by name (fieldSelector=metadata.name=<name>), which is what the reloader sends.
func reloaderRules(p *monitoringv1.Prometheus) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups:     []string{""},
		Resources:     []string{"secrets"},
		ResourceNames: append([]string{FlavourOf(p).ConfigSecretName(p.Name)}, ConfigPieceSecretNames(p)...),
		Verbs:         readVerbs,
	}}
}

// rbacObjects returns the ClusterRole and ClusterRoleBinding (when discovery spans all
// namespaces or nodes), then a Role and RoleBinding per namespace, the Prometheus's own
// first (it always has one, for the reloader) and the others sorted.
func rbacObjects(p *monitoringv1.Prometheus, opts Options) []workload.Object {
	name := RBACName(p)
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName(p), Namespace: p.Namespace}}
	var out []workload.Object

	var clusterRules []rbacv1.PolicyRule
	if opts.AllNamespaces {
		clusterRules = append(clusterRules, discoveryRules()...)
	}
	if opts.DiscoverNodes {
		clusterRules = append(clusterRules, nodeRules()...)
	}
	if len(clusterRules) > 0 {
		out = append(out,
			&rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
				ObjectMeta: unownedMeta(p, opts, "", name),
				Rules:      clusterRules,
			},
			&rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
				ObjectMeta: unownedMeta(p, opts, "", name),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   subjects,
			},
		)
	}

	own := reloaderRules(p)
	var others []string
	if !opts.AllNamespaces {
		for _, ns := range discoveryNamespaces(opts.DiscoveryNamespaces) {
			if ns == p.Namespace {
				own = append(discoveryRules(), own...)
			} else {
				others = append(others, ns)
			}
		}
	}
	add := func(meta metav1.ObjectMeta, rules []rbacv1.PolicyRule) {
		out = append(out,
			&rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
				ObjectMeta: meta,
				Rules:      rules,
			},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: *meta.DeepCopy(),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   subjects,
			},
		)
	}
	add(ownedMeta(p, opts, name), own)
	for _, ns := range others {
		add(unownedMeta(p, opts, ns, name), discoveryRules())
	}
	return out
}

func discoveryNamespaces(in []string) []string {
	var out []string
	for _, ns := range in {
		if ns != "" {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// serviceAccount is the ServiceAccount spec.serviceAccountName names when it does not exist
// yet, or nil: when the field is empty the pods run as the namespace's "default", which
// every namespace has, and Lookout generates none.
func serviceAccount(p *monitoringv1.Prometheus, opts Options) *corev1.ServiceAccount {
	if p.Spec.ServiceAccountName == "" || opts.ServiceAccountExists {
		return nil
	}
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: ownedMeta(p, opts, ServiceAccountName(p)),
	}
}

// RBACCache keeps the RBAC objects of the last render of one Prometheus. With
// a Role and a RoleBinding per discovered namespace there can be a thousand of
// them, and they change only when the set of namespaces does; a render after a
// monitor change hands back the same objects, built once. The objects must be
// treated as read-only. A nil RBACCache builds them every time.
type RBACCache struct {
	key  string
	objs []workload.Object
}

func (c *RBACCache) objects(p *monitoringv1.Prometheus, opts Options) []workload.Object {
	if c == nil {
		return copied(rbacObjects(p, opts))
	}
	// Everything rbacObjects reads.
	key := strings.Join([]string{p.Namespace, p.Name, string(p.UID), ServiceAccountName(p), operatorName(opts),
		strconv.FormatBool(opts.AllNamespaces), strconv.FormatBool(opts.DiscoverNodes),
		strings.Join(opts.DiscoveryNamespaces, ",")}, "\x00")
	if c.objs == nil || key != c.key {
		c.key, c.objs = key, copied(rbacObjects(p, opts))
	}
	return c.objs
}

// copied deep-copies objects built from p's and opts's slices and maps.
func copied(objs []workload.Object) []workload.Object {
	for i, o := range objs {
		objs[i] = o.DeepCopyObject().(workload.Object)
	}
	return objs
}
