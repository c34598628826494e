package controller

import (
	"strings"
	"unicode"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Scope says where a Permission is needed.
type Scope string

const (
	// ScopeCluster: cluster-scoped resources (a ClusterRole in every mode).
	ScopeCluster Scope = "Cluster"
	// ScopeWatched: namespaced resources in every namespace the operator
	// watches (a ClusterRole when it watches all of them, a Role in each of
	// --namespaces otherwise).
	ScopeWatched Scope = "Watched"
	// ScopeOperator: namespaced resources in the operator's own namespace
	// only (leader election, the webhook certificate).
	ScopeOperator Scope = "Operator"
)

// Feature is an optional part of the operator that needs rights of its own;
// an install grants them only with the operator flag that turns it on.
type Feature string

const (
	// FeatureMonitoring: the controllers of the monitoring.coreos.com kinds
	// (Prometheus, PrometheusAgent, Alertmanager, ThanosRuler). An install
	// without it runs none of them (--controllers).
	FeatureMonitoring Feature = "Monitoring"
	// FeaturePostgres: the PostgresCluster controller (--controllers names
	// postgrescluster). It creates a Role and a RoleBinding per cluster for
	// the cluster's instance managers, and the apiserver lets it grant only
	// what it holds itself (it has no escalate or bind): so it holds, in the
	// watched namespaces, every right those Roles grant — Leases, pods'
	// labels, Secrets, Events — on any object of the namespace, not only the
	// cluster's. It holds no right on ClusterRoles or ClusterRoleBindings.
	FeaturePostgres Feature = "Postgres"
	// FeatureSelfMonitoring: --self-monitoring applies the operator's own
	// ServiceMonitor, PodMonitor and PrometheusRule in its namespace.
	FeatureSelfMonitoring Feature = "SelfMonitoring"
	// FeatureInstallCRDs: --install-crds applies the monitoring.coreos.com
	// CRDs embedded in the binary at start (the Helm chart's way to install
	// and upgrade them).
	FeatureInstallCRDs Feature = "InstallCRDs"
	// FeatureInstallPostgresCRD: --install-crds with the postgrescluster
	// controller applies the PostgresCluster CRD embedded in the binary.
	FeatureInstallPostgresCRD Feature = "InstallPostgresCRD"
	// FeatureGenerateRBAC: --manage-rbac gives each generated pod the RBAC
	// it needs (Prometheus discovery, the reloaders' read of their config
	// Secret). It needs write rights on ClusterRoles, Roles and their
	// bindings, which RBAC cannot limit to the objects the operator created:
	// a token with them can empty or delete any role of the cluster. So it is
	// not in the default install; without it, as with prometheus-operator,
	// the user binds the Prometheus ServiceAccount to the discovery rights,
	// and the reloaders read the mounted config (kubelet sync: up to a
	// minute or two) instead of watching the Secret.
	FeatureGenerateRBAC Feature = "GenerateRBAC"
)

// Permission is one rule of the operator's RBAC and why it is needed.
type Permission struct {
	Scope         Scope
	Group         string
	Resources     []string
	ResourceNames []string
	Verbs         []string
	Why           string
	// Feature, when set, is the optional part that needs the rule; unset,
	// every install grants it (leader election, the webhook, Events).
	Feature Feature
}

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	// statusVerbs: status is patched (conditions, bindings), never read
	// through the subresource or replaced.
	statusVerbs = []string{"patch"}
)

// Permissions is everything the operator does with the API: what the
// controllers watch (setup.go, cache.go), what they write (apply, status,
// bindings, finalizers, Events), what the webhook's certificate rotation and
// leader election touch, and what the generated Prometheus RBAC grants (the
// apiserver lets the operator grant only what it holds itself: it has no
// escalate or bind). The install manifests are generated from this list, and
// the install tests run the operator with exactly these rules and fail on any
// 403: a watch added without its permission fails there.
var Permissions = []Permission{
	// The workloads: watched, finalizers added and removed, status written.
	{Scope: ScopeWatched, Group: "monitoring.coreos.com",
		Resources: []string{"prometheuses", "alertmanagers", "prometheusagents", "thanosrulers"},
		Verbs:     []string{"get", "list", "watch", "patch"}, Feature: FeatureMonitoring,
		Why: "the workloads: watched, finalizer added and removed (patch)"},
	{Scope: ScopeWatched, Group: "monitoring.coreos.com",
		Resources: []string{"prometheuses/status", "alertmanagers/status", "prometheusagents/status", "thanosrulers/status"},
		Verbs:     statusVerbs, Feature: FeatureMonitoring, Why: "Reconciled and Available conditions, replica counts"},
	// Clusters with the OwnerReferencesPermissionEnforcement admission
	// plugin demand this to set blockOwnerDeletion on children.
	{Scope: ScopeWatched, Group: "monitoring.coreos.com",
		Resources: []string{"prometheuses/finalizers", "alertmanagers/finalizers", "prometheusagents/finalizers", "thanosrulers/finalizers"},
		Verbs:     []string{"update"}, Feature: FeatureMonitoring, Why: "owner references with blockOwnerDeletion on generated objects"},
	// What the workloads select: read, and status.bindings written.
	{Scope: ScopeWatched, Group: "monitoring.coreos.com",
		Resources: []string{"servicemonitors", "podmonitors", "probes", "scrapeconfigs", "prometheusrules", "alertmanagerconfigs"},
		Verbs:     readVerbs, Feature: FeatureMonitoring, Why: "selected objects"},
	{Scope: ScopeWatched, Group: "monitoring.coreos.com",
		Resources: []string{"servicemonitors/status", "podmonitors/status", "probes/status", "scrapeconfigs/status", "prometheusrules/status", "alertmanagerconfigs/status"},
		Verbs:     statusVerbs, Feature: FeatureMonitoring, Why: "status.bindings: accepted or rejected, per workload"},
	// Generated objects. Secrets and ConfigMaps are cached as metadata only;
	// the content of one is read (get) when a monitor references it.
	{Scope: ScopeWatched, Group: "apps", Resources: []string{"statefulsets", "daemonsets"},
		Verbs: writeVerbs, Feature: FeatureMonitoring, Why: "Prometheus, Alertmanager, ThanosRuler StatefulSets; PrometheusAgent DaemonSets"},
	{Scope: ScopeWatched, Group: "", Resources: []string{"services", "secrets", "configmaps", "serviceaccounts"},
		Verbs: writeVerbs, Feature: FeatureMonitoring, Why: "governing Services, config Secrets, rule ConfigMaps, ServiceAccounts; referenced credentials read"},
	{Scope: ScopeWatched, Group: "rbac.authorization.k8s.io", Resources: []string{"roles", "rolebindings"},
		Verbs: writeVerbs, Feature: FeatureGenerateRBAC, Why: "discovery and reloader RBAC of the generated pods"},
	// Held only to be granted: the generated discovery Roles give
	// Prometheus these, and RBAC lets nobody grant what it lacks.
	{Scope: ScopeWatched, Group: "", Resources: []string{"endpoints", "pods"},
		Verbs: readVerbs, Feature: FeatureGenerateRBAC, Why: "granted to Prometheus for service discovery"},
	{Scope: ScopeWatched, Group: "discovery.k8s.io", Resources: []string{"endpointslices"},
		Verbs: readVerbs, Feature: FeatureGenerateRBAC, Why: "granted to Prometheus for service discovery"},
	{Scope: ScopeWatched, Group: "networking.k8s.io", Resources: []string{"ingresses"},
		Verbs: readVerbs, Feature: FeatureGenerateRBAC, Why: "granted to Prometheus for Probe ingress discovery"},
	{Scope: ScopeWatched, Group: "events.k8s.io", Resources: []string{"events"},
		Verbs: []string{"create", "patch"}, Why: "Events on workloads and rejected objects"},

	// PostgreSQL: exactly what the PostgresCluster controller reads and
	// writes.
	{Scope: ScopeWatched, Group: "postgres-operator.crunchydata.com", Resources: []string{"postgresclusters"},
		Verbs: []string{"get", "list", "watch", "patch"}, Feature: FeaturePostgres,
		Why: "PostgresClusters: watched, finalizer added and removed (patch)"},
	{Scope: ScopeWatched, Group: "postgres-operator.crunchydata.com", Resources: []string{"postgresclusters/status"},
		Verbs: statusVerbs, Feature: FeaturePostgres, Why: "conditions, instances, primary, lag, failovers"},
	{Scope: ScopeWatched, Group: "postgres-operator.crunchydata.com", Resources: []string{"postgresclusters/finalizers"},
		Verbs: []string{"update"}, Feature: FeaturePostgres, Why: "owner references with blockOwnerDeletion on generated objects"},
	{Scope: ScopeWatched, Group: "apps", Resources: []string{"statefulsets", "deployments"},
		Verbs: writeVerbs, Feature: FeaturePostgres, Why: "a StatefulSet per instance; the PgBouncer Deployment of spec.proxy"},
	{Scope: ScopeWatched, Group: "batch", Resources: []string{"cronjobs", "jobs"},
		Verbs: writeVerbs, Feature: FeaturePostgres, Why: "backups: a CronJob per schedule, a Job per manual backup"},
	{Scope: ScopeWatched, Group: "", Resources: []string{"services", "secrets", "serviceaccounts"},
		Verbs: writeVerbs, Feature: FeaturePostgres,
		Why: "the -primary, -replicas and -pods Services; user, certificate, replication and instance-config Secrets; the instance managers' ServiceAccount"},
	{Scope: ScopeWatched, Group: "policy", Resources: []string{"poddisruptionbudgets"},
		Verbs: writeVerbs, Feature: FeaturePostgres, Why: "an instance set's minAvailable"},
	{Scope: ScopeWatched, Group: "rbac.authorization.k8s.io", Resources: []string{"roles", "rolebindings"},
		Verbs: writeVerbs, Feature: FeaturePostgres,
		Why: "the instance managers' Role (limited to the cluster's Lease, pods and config Secret by name) and its binding"},
	{Scope: ScopeWatched, Group: "monitoring.coreos.com", Resources: []string{"podmonitors", "prometheusrules"},
		Verbs: writeVerbs, Feature: FeaturePostgres,
		Why: "each cluster's PodMonitor and PrometheusRule, when the monitoring.coreos.com CRDs are served"},
	{Scope: ScopeWatched, Group: "", Resources: []string{"configmaps"},
		Verbs: readVerbs, Feature: FeaturePostgres, Why: "the workload skeleton watches ConfigMaps' metadata for owned and referenced ones"},
	{Scope: ScopeWatched, Group: "", Resources: []string{"persistentvolumeclaims"},
		Verbs: []string{"get", "list"}, Feature: FeaturePostgres, Why: "the instances' claims: a volume is never shrunk"},
	// pods get and patch, leases and core Events are held to be granted:
	// the instance managers' Role gives them these, limited by name where
	// RBAC can, and the apiserver lets the operator grant only what it holds.
	{Scope: ScopeWatched, Group: "", Resources: []string{"pods"},
		Verbs: []string{"get", "list", "patch"}, Feature: FeaturePostgres,
		Why: "the instances' pods read for the status (list); get and patch granted to the instance managers (their role label)"},
	{Scope: ScopeWatched, Group: "coordination.k8s.io", Resources: []string{"leases"},
		Verbs: []string{"get", "watch", "create", "update", "patch"}, Feature: FeaturePostgres,
		Why: "granted to the instance managers (the cluster's primary Lease), to the pooler and the backup Jobs (read, by name)"},
	{Scope: ScopeWatched, Group: "", Resources: []string{"events"},
		Verbs: []string{"create", "patch"}, Feature: FeaturePostgres, Why: "granted to the instance managers: their Events"},

	{Scope: ScopeCluster, Group: "", Resources: []string{"namespaces"},
		Verbs: readVerbs, Feature: FeatureMonitoring, Why: "namespace selectors"},
	{Scope: ScopeCluster, Group: "", Resources: []string{"nodes"},
		Verbs: readVerbs, Feature: FeatureGenerateRBAC, Why: "granted to Prometheus for node discovery"},
	{Scope: ScopeCluster, Group: "rbac.authorization.k8s.io", Resources: []string{"clusterroles", "clusterrolebindings"},
		Verbs: writeVerbs, Feature: FeatureGenerateRBAC, Why: "discovery RBAC of a Prometheus that scrapes every namespace or nodes"},
	{Scope: ScopeCluster, Group: "admissionregistration.k8s.io", Resources: []string{"validatingwebhookconfigurations"},
		ResourceNames: []string{"lookout"}, Verbs: []string{"get", "patch"},
		Why: "the webhook's configuration and CA bundle (the configuration ships with the install)"},
	{Scope: ScopeCluster, Group: "apiextensions.k8s.io", Resources: []string{"customresourcedefinitions"},
		ResourceNames: []string{"alertmanagerconfigs.monitoring.coreos.com"}, Verbs: []string{"get", "patch"},
		Why: "AlertmanagerConfig conversion webhook and its CA bundle (every variant's webhook sets a conversion it left back to None)"},

	{Scope: ScopeOperator, Group: "coordination.k8s.io", Resources: []string{"leases"},
		Verbs: []string{"get", "create", "update"}, Why: "leader election (the Lease lookout-operator-leader)"},
	{Scope: ScopeOperator, Group: "", Resources: []string{"secrets"},
		Verbs: []string{"get", "create", "update"}, Why: "the webhook CA and serving certificate (lookout-webhook-tls)"},
	{Scope: ScopeOperator, Group: "", Resources: []string{"events"},
		Verbs: []string{"create", "patch"}, Why: "leader election Events"},

	// A server-side apply that creates an object needs create as well as
	// patch; create cannot be limited by name.
	{Scope: ScopeOperator, Group: "monitoring.coreos.com", Resources: []string{"servicemonitors", "podmonitors", "prometheusrules"},
		Verbs: []string{"create", "patch"}, Feature: FeatureSelfMonitoring,
		Why: "the operator's own ServiceMonitor, PodMonitor and PrometheusRule, applied at start"},
	{Scope: ScopeCluster, Group: "apiextensions.k8s.io", Resources: []string{"customresourcedefinitions"},
		Verbs: []string{"create"}, Feature: FeatureInstallCRDs,
		Why: "the monitoring.coreos.com CRDs, created at start when missing"},
	{Scope: ScopeCluster, Group: "apiextensions.k8s.io", Resources: []string{"customresourcedefinitions"},
		ResourceNames: CRDNames, Verbs: []string{"get", "patch"}, Feature: FeatureInstallCRDs,
		Why: "the monitoring.coreos.com CRDs, upgraded at start to the schema of the operator's version"},
	{Scope: ScopeCluster, Group: "apiextensions.k8s.io", Resources: []string{"customresourcedefinitions"},
		Verbs: []string{"create"}, Feature: FeatureInstallPostgresCRD,
		Why: "the PostgresCluster CRD, created at start when missing"},
	{Scope: ScopeCluster, Group: "apiextensions.k8s.io", Resources: []string{"customresourcedefinitions"},
		ResourceNames: []string{PostgresCRDName}, Verbs: []string{"get", "patch"}, Feature: FeatureInstallPostgresCRD,
		Why: "the PostgresCluster CRD, upgraded at start to the schema of the operator's version"},
}

// PostgresCRDName is the CRD of the PostgresCluster kind.
const PostgresCRDName = "postgresclusters.postgres-operator.crunchydata.com"

// CRDNames are the CRDs the operator serves.
var CRDNames = []string{
	"alertmanagerconfigs.monitoring.coreos.com", "alertmanagers.monitoring.coreos.com",
	"podmonitors.monitoring.coreos.com", "probes.monitoring.coreos.com",
	"prometheusagents.monitoring.coreos.com", "prometheuses.monitoring.coreos.com",
	"prometheusrules.monitoring.coreos.com", "scrapeconfigs.monitoring.coreos.com",
	"servicemonitors.monitoring.coreos.com", "thanosrulers.monitoring.coreos.com",
}

// Suffix is f in the names of the roles that hold its rules.
func (f Feature) Suffix() string {
	// A word starts at an upper-case letter after a lower-case one, so
	// InstallCRDs is install-crds and GenerateRBAC generate-rbac.
	var b strings.Builder
	prev := rune(0)
	for _, r := range string(f) {
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return b.String()
}

// PolicyRules returns the rules of one scope that feature needs ("": the
// rules the operator always needs), in the order of Permissions.
func PolicyRules(scope Scope, feature Feature) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, p := range Permissions {
		if p.Scope != scope || p.Feature != feature {
			continue
		}
		out = append(out, rbacv1.PolicyRule{
			APIGroups:     []string{p.Group},
			Resources:     p.Resources,
			ResourceNames: p.ResourceNames,
			Verbs:         p.Verbs,
		})
	}
	return out
}

// generatesRBAC reports whether the generated pods get RBAC (--manage-rbac).
func (o Options) generatesRBAC() bool { return !o.NoRBAC }

// withoutRBAC drops the RBAC objects of a render when o generates none.
func withoutRBAC[T client.Object](o Options, objs []T) []T {
	if o.generatesRBAC() {
		return objs
	}
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		if !isRBAC(obj) {
			out = append(out, obj)
		}
	}
	return out
}

func isRBAC(obj client.Object) bool {
	switch obj.(type) {
	case *rbacv1.Role, *rbacv1.RoleBinding, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
		return true
	}
	return false
}

// prunedKinds drops the RBAC kinds from kinds when o generates no RBAC: the
// operator then has no right to list them, and nothing of theirs to prune.
func prunedKinds(o Options, kinds []schema.GroupVersionKind) []schema.GroupVersionKind {
	if o.generatesRBAC() {
		return kinds
	}
	var out []schema.GroupVersionKind
	for _, k := range kinds {
		if k.Group != rbacv1.GroupName {
			out = append(out, k)
		}
	}
	return out
}
