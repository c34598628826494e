package install

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/install"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// postgresNamespace holds the PostgresCluster the install tests create.
const postgresNamespace = "db"

// postgresClusterObjects creates PostgresCluster db/hippo (PGO's quickstart,
// two instances) unless it exists, and returns what its controller makes of
// it that a user and the instance managers rely on: the Services, the user
// Secret, the instance managers' ServiceAccount, Role and RoleBinding, and,
// with the monitoring CRDs served, its PodMonitor and PrometheusRule.
func postgresClusterObjects(t *testing.T, c client.Client, monitoring bool) []client.Object {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: postgresNamespace}}
	cluster := &postgresv1beta1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: postgresNamespace, Name: "hippo"},
		Spec: postgresv1beta1.PostgresClusterSpec{
			PostgresVersion: 15,
			InstanceSets: []postgresv1beta1.PostgresInstanceSetSpec{{
				Name: "instance1", Replicas: ptr.To[int32](2), MinAvailable: ptr.To(intstr.FromInt32(1)),
				DataVolumeClaimSpec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
			Users: []postgresv1beta1.PostgresUserSpec{{Name: "rhino", Databases: []string{"zoo"}}},
		},
	}
	for _, o := range []client.Object{ns, cluster} {
		if err := c.Create(testCtx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	at := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: postgresNamespace, Name: name}
	}
	rbacName := pgrender.InstanceRBACName(cluster.Name)
	out := []client.Object{
		&corev1.Service{ObjectMeta: at(pgrender.PrimaryServiceName(cluster.Name))},
		&corev1.Service{ObjectMeta: at(pgrender.ReplicaServiceName(cluster.Name))},
		&corev1.Secret{ObjectMeta: at(pgrender.UserSecretName(cluster.Name, "rhino"))},
		&corev1.ServiceAccount{ObjectMeta: at(rbacName)},
		&rbacv1.Role{ObjectMeta: at(rbacName)},
		&rbacv1.RoleBinding{ObjectMeta: at(rbacName)},
	}
	if monitoring {
		out = append(out, &monitoringv1.PodMonitor{ObjectMeta: at(pgrender.MonitorName(cluster.Name))},
			&monitoringv1.PrometheusRule{ObjectMeta: at(pgrender.MonitorName(cluster.Name))})
	}
	return out
}

// Each variant, installed by its kustomize directory on an apiserver without
// CRDs, gives the operator's ServiceAccount the rights its controllers use
// and no RBAC write beyond them: monitoring none at all; PostgreSQL Role and
// RoleBinding writes only, with which it creates the instance managers' Role
// and binding (the apiserver's escalation check passes) but not a binding to
// cluster-admin nor any ClusterRole. The operator, run as that account with
// the variant's controllers, reconciles a PostgresCluster and deletes it
// without a single 403.
func TestEachVariantGrantsWhatItsControllersDoAndNoRBACBeyondIt(t *testing.T) {
	for _, v := range install.Variants {
		t.Run(v.Name, func(t *testing.T) {
			fresh, err := controlplane.Start(testCtx, controlplane.Options{Log: os.Stderr, WithoutControllerManager: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(fresh.Stop)
			admin, err := client.New(fresh.RESTConfig, client.Options{Scheme: crdScheme(t)})
			if err != nil {
				t.Fatal(err)
			}
			shell(t, fresh, "kubectl apply --server-side -k "+v.Kustomize)
			shell(t, fresh, "kubectl wait --for=condition=Established --timeout=90s crd --all")
			if err := admin.Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: postgresNamespace}}); err != nil {
				t.Fatal(err)
			}

			var mu sync.Mutex
			var forbidden []string
			cfg := operatorConfig(t, fresh, &mu, &forbidden)
			asOperator, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: crdScheme(t)})
			if err != nil {
				t.Fatal(err)
			}
			expectNoClusterRBACWrite(t, asOperator, v.Options.Postgres)
			if !v.Options.Postgres {
				return
			}
			// The 403s of the checks above are expected; the operator's are not.
			mu.Lock()
			forbidden = nil
			mu.Unlock()
			startOperator(t, cfg, operatorRun{variant: v})
			forbiddenSoFar = func() string {
				mu.Lock()
				defer mu.Unlock()
				return fmt.Sprintf("; forbidden so far: %d\n%s", len(forbidden), strings.Join(forbidden, "\n"))
			}
			t.Cleanup(func() { forbiddenSoFar = nil })

			expected := postgresClusterObjects(t, admin, v.Options.Monitoring())
			key := client.ObjectKey{Namespace: postgresNamespace, Name: "hippo"}
			eventually(t, "the PostgresCluster is reconciled with its Services, Secrets and instance managers' RBAC", func() (bool, string) {
				var pc postgresv1beta1.PostgresCluster
				if err := admin.Get(testCtx, key, &pc); err != nil {
					return false, err.Error()
				}
				if c := meta.FindStatusCondition(pc.Status.Conditions, postgresv1beta1.ConditionReconciled); c == nil || c.Status != metav1.ConditionTrue {
					return false, fmt.Sprintf("Reconciled: %+v", c)
				}
				for _, o := range expected {
					if err := admin.Get(testCtx, client.ObjectKeyFromObject(o), o); err != nil {
						return false, fmt.Sprintf("%T %s: %v", o, o.GetName(), err)
					}
				}
				return true, ""
			})

			// What the operator did, its account may do again: a copy of the
			// instance managers' Role and a binding to it pass the escalation check.
			var role rbacv1.Role
			if err := admin.Get(testCtx, client.ObjectKey{Namespace: postgresNamespace, Name: pgrender.InstanceRBACName("hippo")}, &role); err != nil {
				t.Fatal(err)
			}
			copied := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: postgresNamespace, Name: "hippo-instance-copy"}, Rules: role.Rules}
			if err := asOperator.Create(testCtx, copied, client.DryRunAll); err != nil {
				t.Errorf("the operator's account may not create the instance managers' Role (%v)", err)
			}
			if err := asOperator.Create(testCtx, binding("hippo-instance-copy", "Role", role.Name), client.DryRunAll); err != nil {
				t.Errorf("the operator's account may not bind the instance managers' Role (%v)", err)
			}

			if err := admin.Delete(testCtx, &postgresv1beta1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the PostgresCluster is finalized and gone", func() (bool, string) {
				err := admin.Get(testCtx, key, &postgresv1beta1.PostgresCluster{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
			mu.Lock()
			defer mu.Unlock()
			if len(forbidden) > 0 {
				sort.Strings(forbidden)
				t.Fatalf("the operator got %d forbidden responses with the %s variant's RBAC:\n%s", len(forbidden), v.Name, strings.Join(forbidden, "\n"))
			}
		})
	}
}

// expectNoClusterRBACWrite checks, as the operator's account, that it may
// not write ClusterRoles or ClusterRoleBindings, escalate or bind, nor bind
// cluster-admin or create a ClusterRole in fact; and that it may write Roles
// and RoleBindings in the PostgreSQL namespace exactly when roles says so.
func expectNoClusterRBACWrite(t *testing.T, asOperator client.Client, roles bool) {
	t.Helper()
	may := func(verb, resource, namespace string) bool {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: rbacv1.GroupName, Resource: resource, Verb: verb, Namespace: namespace},
		}}
		if err := asOperator.Create(testCtx, review); err != nil {
			t.Fatalf("SelfSubjectAccessReview %s %s: %v", verb, resource, err)
		}
		return review.Status.Allowed
	}
	for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection", "escalate", "bind"} {
		for _, resource := range []string{"clusterroles", "clusterrolebindings"} {
			if may(verb, resource, "") {
				t.Errorf("the operator's account may %s %s", verb, resource)
			}
		}
		for _, resource := range []string{"roles", "rolebindings"} {
			want := roles && verb != "escalate" && verb != "bind" && verb != "deletecollection"
			if got := may(verb, resource, postgresNamespace); got != want {
				t.Errorf("the operator's account may %s %s in namespace %s: %v, want %v", verb, resource, postgresNamespace, got, want)
			}
		}
	}
	clusterAdmin := binding("take-over", "ClusterRole", "cluster-admin")
	if err := asOperator.Create(testCtx, clusterAdmin, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("the operator's account binding cluster-admin in %s: %v, want forbidden", postgresNamespace, err)
	}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lookout-probe"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}}
	if err := asOperator.Create(testCtx, cr, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("the operator's account creating a ClusterRole: %v, want forbidden", err)
	}
}

// binding binds the operator's own account to role (kind Role or
// ClusterRole) in the PostgreSQL namespace.
func binding(name, kind, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: postgresNamespace, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: install.DefaultNamespace, Name: install.Name}},
	}
}
