package controller

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	amrender "github.com/lookout-operator/lookout/internal/render/alertmanager"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	thanosrender "github.com/lookout-operator/lookout/internal/render/thanos"
)

// CacheOptions are the informer settings the controllers are written for:
// managedFields dropped everywhere, and the RBAC objects and ServiceAccounts
// the operator generates cached — only those, selected by their label — so
// that comparing them costs no API request. The operator and the tests use
// the same settings.
func CacheOptions(namespaces []string) cache.Options {
	// Every workload's generated objects carry Lookout's managed-by label.
	generated, _ := labels.NewRequirement(labelManagedBy, selection.Equals, []string{promrender.DefaultOperatorName})
	ours := cache.ByObject{Label: labels.NewSelector().Add(*generated)}
	opts := cache.Options{
		DefaultTransform: transform,
		ByObject: map[client.Object]cache.ByObject{
			&rbacv1.Role{}:               ours,
			&rbacv1.RoleBinding{}:        ours,
			&rbacv1.ClusterRole{}:        ours,
			&rbacv1.ClusterRoleBinding{}: ours,
			&corev1.ServiceAccount{}:     ours,
		},
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// transform drops what the controllers never read from cached objects:
// managedFields everywhere, and — on the metadata-only Secrets and ConfigMaps,
// which are watched cluster-wide only to notice that a referenced one changed
// — the labels, annotations, owner references and finalizers of every one the
// operator did not generate. Those are read by name; the content of the ones
// a monitor references is read live. Large annotations (kubectl's
// last-applied-configuration, Helm's) would otherwise be held for every
// Secret and ConfigMap in the cluster.
func transform(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		if !generatedObject(m.Labels) {
			m.Labels, m.Annotations, m.OwnerReferences, m.Finalizers = nil, nil, nil, nil
		}
	}
	return obj, nil
}

var stripManagedFields = cache.TransformStripManagedFields()

const labelManagedBy = "app.kubernetes.io/managed-by"

// generatedObject reports whether labels are those of an object a workload
// controller generated.
func generatedObject(labels map[string]string) bool {
	_, prometheus := labels[promrender.LabelPrometheus]
	_, agent := labels[promrender.LabelPrometheusAgent]
	_, alertmanager := labels[amrender.LabelAlertmanager]
	_, thanosRuler := labels[thanosrender.LabelThanosRuler]
	return prometheus || agent || alertmanager || thanosRuler
}

// cachedKinds are the kinds the Applier reads from the cache.
var cachedKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "StatefulSet"}:                             true,
	{Kind: "Service"}:                                                true,
	{Kind: "ServiceAccount"}:                                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               true,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
}
