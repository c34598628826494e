package install

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/webhook"
)

var (
	clusterRoleType        = typeMeta("ClusterRole")
	clusterRoleBindingType = typeMeta("ClusterRoleBinding")
	roleType               = typeMeta("Role")
	roleBindingType        = typeMeta("RoleBinding")
)

// features are the operator's optional parts o turns on, each with rules of
// its own (controller.Permissions).
func (o Options) features() []controller.Feature {
	var fs []controller.Feature
	if o.Monitoring() {
		fs = append(fs, controller.FeatureMonitoring)
	}
	if o.Postgres {
		fs = append(fs, controller.FeaturePostgres)
	}
	if o.selfMonitoring() {
		fs = append(fs, controller.FeatureSelfMonitoring)
	}
	if o.InstallCRDs && o.Monitoring() {
		fs = append(fs, controller.FeatureInstallCRDs)
	}
	if o.InstallCRDs && o.Postgres {
		fs = append(fs, controller.FeatureInstallPostgresCRD)
	}
	// Prometheus's discovery RBAC: a monitoring part.
	if o.GenerateRBAC && o.Monitoring() {
		fs = append(fs, controller.FeatureGenerateRBAC)
	}
	return fs
}

// roleName names the roles of feature f ("": the operator's own rules):
// lookout, lookout-self-monitoring... with the ClusterName.
func (o Options) roleName(f controller.Feature) string {
	if f == "" {
		return o.ClusterName
	}
	return o.ClusterName + "-" + f.Suffix()
}

func (o Options) watchedRoleName(f controller.Feature) string { return o.roleName(f) + "-watched" }

func subjects(o Options) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: o.Namespace}}
}

// RBAC is the operator's RBAC, from controller.Permissions: for its own rules
// and for each feature o turns on, the cluster-scoped rules in a ClusterRole,
// the watched namespaces' rules in a ClusterRole (all namespaces) or a Role in
// each watched namespace, and the operator namespace's rules in a Role.
// Each feature's rules are roles of their own, so that turning it off in a
// chart value removes exactly them.
func RBAC(o Options) []runtime.Object {
	o.defaults()
	var out []runtime.Object
	for _, f := range append([]controller.Feature{""}, o.features()...) {
		out = append(out, FeatureRBAC(o, f)...)
	}
	return out
}

// FeatureRBAC is the part of RBAC for feature f ("": the operator's own).
func FeatureRBAC(o Options, f controller.Feature) []runtime.Object {
	o.defaults()
	var out []runtime.Object
	if rules := clusterRules(o, f); len(rules) > 0 {
		out = append(out, clusterRole(o, o.roleName(f), rules)...)
	}
	out = append(out, WatchedRBAC(o, f)...)
	if rules := controller.PolicyRules(controller.ScopeOperator, f); len(rules) > 0 {
		out = append(out, role(o, o.Namespace, o.roleName(f), rules)...)
	}
	return out
}

// clusterRules are the cluster-scoped rules of f, the
// ValidatingWebhookConfiguration named as o names it.
func clusterRules(o Options, f controller.Feature) []rbacv1.PolicyRule {
	rules := controller.PolicyRules(controller.ScopeCluster, f)
	for i, r := range rules {
		if slices.Equal(r.ResourceNames, []string{webhook.DefaultConfigurationName}) && slices.Contains(r.Resources, "validatingwebhookconfigurations") {
			rules[i].ResourceNames = []string{o.ClusterName}
		}
	}
	return rules
}

// WatchedRBAC is the part of FeatureRBAC that depends on the watched
// namespaces.
func WatchedRBAC(o Options, f controller.Feature) []runtime.Object {
	o.defaults()
	rules := controller.PolicyRules(controller.ScopeWatched, f)
	if len(rules) == 0 {
		return nil
	}
	if len(o.WatchNamespaces) == 0 {
		return clusterRole(o, o.watchedRoleName(f), rules)
	}
	var out []runtime.Object
	for _, ns := range o.WatchNamespaces {
		out = append(out, role(o, ns, o.watchedRoleName(f), rules)...)
	}
	return out
}

func clusterRole(o Options, name string, rules []rbacv1.PolicyRule) []runtime.Object {
	return []runtime.Object{
		&rbacv1.ClusterRole{TypeMeta: clusterRoleType, ObjectMeta: meta(name, "", nil), Rules: rules},
		&rbacv1.ClusterRoleBinding{TypeMeta: clusterRoleBindingType, ObjectMeta: meta(name, "", nil),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subjects(o)},
	}
}

func role(o Options, namespace, name string, rules []rbacv1.PolicyRule) []runtime.Object {
	return []runtime.Object{
		&rbacv1.Role{TypeMeta: roleType, ObjectMeta: meta(name, namespace, nil), Rules: rules},
		&rbacv1.RoleBinding{TypeMeta: roleBindingType, ObjectMeta: meta(name, namespace, nil),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects(o)},
	}
}
