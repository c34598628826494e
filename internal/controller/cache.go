package controller

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
)

// CacheOptions are the informer settings the controllers are written for:
// managedFields dropped everywhere, and the RBAC objects and ServiceAccounts
// the operator generates cached — only those, selected by their label — so
// that comparing them costs no API request. The operator and the tests use
// the same settings.
func CacheOptions(namespaces []string) cache.Options {
	generated, _ := labels.NewRequirement(promrender.LabelPrometheus, selection.Exists, nil)
	ours := cache.ByObject{Label: labels.NewSelector().Add(*generated)}
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
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
