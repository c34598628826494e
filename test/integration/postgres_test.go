package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/controller"
	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/pgcontract"
)

var startPostgresOnce sync.Once

// startPostgresOperator installs the PostgresCluster CRD and runs an operator with
// only the postgrescluster controller (the package's operator started before the CRD
// was installed, so it does not run one), with the PostgreSQL of this machine.
func startPostgresOperator(t *testing.T) {
	t.Helper()
	var err error
	startPostgresOnce.Do(func() {
		if _, err = controlplane.InstallCRDs(testCtx, cp.RESTConfig, filepath.Join(repoRoot, controlplane.PostgresCRDDir)); err != nil {
			return
		}
		var mgr ctrl.Manager
		mgr, err = ctrl.NewManager(rest.CopyConfig(cp.RESTConfig), managerOptions())
		if err != nil {
			return
		}
		err = controller.Setup(mgr, controller.Options{
			Workers: 2, ReloaderImage: "lookout-reloader:test", Controllers: []string{"postgrescluster"},
			Postgres: controller.PostgresOptions{Image: "lookout-postgres:test", BinDirs: []string{gather.DefaultPostgresBinDirs}},
		})
		if err != nil {
			return
		}
		go func() {
			if err := mgr.Start(context.Background()); err != nil {
				fmt.Println("postgres manager stopped:", err)
			}
		}()
	})
	if err != nil {
		t.Fatalf("start the PostgresCluster operator: %v", err)
	}
}

func storageSpec(size string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}
}

func pgCondition(c *postgresv1beta1.PostgresCluster, typ string) *metav1.Condition {
	return meta.FindStatusCondition(c.Status.Conditions, typ)
}

// waitReconciled waits until the cluster's Reconciled condition, for its
// current generation, has status and reason; it returns the cluster.
func waitReconciled(t *testing.T, key client.ObjectKey, status metav1.ConditionStatus, reason string) *postgresv1beta1.PostgresCluster {
	t.Helper()
	var c postgresv1beta1.PostgresCluster
	eventually(t, fmt.Sprintf("%s is Reconciled=%s (%s)", key, status, reason), func() (bool, error) {
		if err := k8s.Get(testCtx, key, &c); err != nil {
			return false, err
		}
		cond := pgCondition(&c, postgresv1beta1.ConditionReconciled)
		if cond == nil {
			return false, fmt.Errorf("no Reconciled condition yet")
		}
		if cond.ObservedGeneration != c.Generation || cond.Status != status || cond.Reason != reason {
			return false, fmt.Errorf("Reconciled=%s %s (generation %d of %d): %s", cond.Status, cond.Reason, cond.ObservedGeneration, c.Generation, cond.Message)
		}
		return true, nil
	})
	return &c
}

// A three-instance cluster as PGO's quickstart writes it gets everything an
// application and the instance managers need, with PGO's names.
func TestPostgresClusterRendersItsObjects(t *testing.T) {
	startPostgresOperator(t)
	ns := newNamespace(t)
	c := &postgresv1beta1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hippo"},
		Spec: postgresv1beta1.PostgresClusterSpec{
			PostgresVersion: 15,
			InstanceSets: []postgresv1beta1.PostgresInstanceSetSpec{{
				Name: "instance1", Replicas: ptr.To[int32](3), DataVolumeClaimSpec: storageSpec("1Gi"),
			}},
			Users: []postgresv1beta1.PostgresUserSpec{{Name: "rhino", Databases: []string{"zoo"}}},
		},
	}
	if err := k8s.Create(testCtx, c); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(c)
	got := waitReconciled(t, key, metav1.ConditionTrue, controller.ReasonReconcileSucceeded)
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
	}

	var stss appsv1.StatefulSetList
	if err := k8s.List(testCtx, &stss, client.InNamespace(ns), client.MatchingLabels{pgcontract.LabelCluster: "hippo"}); err != nil {
		t.Fatal(err)
	}
	if len(stss.Items) != 3 {
		t.Fatalf("%d StatefulSets, want one per instance (3)", len(stss.Items))
	}
	for _, sts := range stss.Items {
		if !strings.HasPrefix(sts.Name, "hippo-instance1-") || len(sts.Name) != len("hippo-instance1-")+4 {
			t.Errorf("StatefulSet %s is not named <cluster>-<set>-<4 characters>", sts.Name)
		}
		if *sts.Spec.Replicas != 1 || sts.Spec.ServiceName != "hippo-pods" || sts.Spec.Template.Labels[pgcontract.LabelInstance] != sts.Name {
			t.Errorf("StatefulSet %s: replicas %d, service %s, labels %v", sts.Name, *sts.Spec.Replicas, sts.Spec.ServiceName, sts.Spec.Template.Labels)
		}
		if cmd := sts.Spec.Template.Spec.Containers[0].Command; strings.Join(cmd, " ") != "/bin/lookout instance" {
			t.Errorf("StatefulSet %s runs %v", sts.Name, cmd)
		}
	}

	for name, role := range map[string]string{"hippo-primary": pgcontract.RolePrimary, "hippo-replicas": pgcontract.RoleReplica} {
		var svc corev1.Service
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: name}, &svc); err != nil {
			t.Fatal(err)
		}
		if svc.Spec.Selector[pgcontract.LabelRole] != role || svc.Spec.Ports[0].Port != 5432 {
			t.Errorf("Service %s selects %v on port %d", name, svc.Spec.Selector, svc.Spec.Ports[0].Port)
		}
	}
	var pods corev1.Service
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "hippo-pods"}, &pods); err != nil || pods.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless Service hippo-pods: %v, clusterIP %q", err, pods.Spec.ClusterIP)
	}

	var user corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "hippo-pguser-rhino"}, &user); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"user", "password", "dbname", "host", "port", "uri", "jdbc-uri", "verifier"} {
		if len(user.Data[k]) == 0 {
			t.Errorf("Secret hippo-pguser-rhino has no %s", k)
		}
	}
	if string(user.Data["dbname"]) != "zoo" || string(user.Data["host"]) != "hippo-primary."+ns+".svc" {
		t.Errorf("dbname %q, host %q", user.Data["dbname"], user.Data["host"])
	}
	for _, name := range []string{"hippo-cluster-cert", "hippo-replication", "hippo-instance-config"} {
		var s corev1.Secret
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			t.Errorf("Secret %s: %v", name, err)
		}
	}

	// The instances may hold the cluster's Lease and label their own pods.
	var role rbacv1.Role
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "hippo-instance"}, &role); err != nil {
		t.Fatal(err)
	}
	var leaseRule, podRule bool
	for _, r := range role.Rules {
		if len(r.Resources) == 1 && r.Resources[0] == "leases" && len(r.ResourceNames) == 1 && r.ResourceNames[0] == "hippo-leader" {
			leaseRule = true
		}
		if len(r.Resources) == 1 && r.Resources[0] == "pods" && len(r.ResourceNames) == 3 {
			podRule = true
		}
	}
	if !leaseRule || !podRule {
		t.Errorf("Role hippo-instance does not grant the Lease hippo-leader and the 3 pods: %+v", role.Rules)
	}
	var binding rbacv1.RoleBinding
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "hippo-instance"}, &binding); err != nil || binding.Subjects[0].Name != "hippo-instance" {
		t.Errorf("RoleBinding hippo-instance: %v %+v", err, binding.Subjects)
	}

	// No pod runs here (no kubelet): none is ready, none is primary.
	eventually(t, "the status counts the instances", func() (bool, error) {
		if err := k8s.Get(testCtx, key, got); err != nil {
			return false, err
		}
		av := pgCondition(got, postgresv1beta1.ConditionAvailable)
		return got.Status.Ready == "0/3" && len(got.Status.InstanceSets) == 1 && got.Status.InstanceSets[0].Name == "instance1" &&
			av != nil && av.Status == metav1.ConditionFalse, nil
	})

	// Bad input: refused with a reason and an Event; nothing running is touched
	// (the StatefulSet controller still writes their status: their specs are compared).
	before := map[string]int64{}
	for _, sts := range stss.Items {
		before[sts.Name] = sts.Generation
	}
	update(t, got, func(c *postgresv1beta1.PostgresCluster) {
		c.Spec.Patroni = &postgresv1beta1.PatroniSpec{DynamicConfiguration: &apiextensionsv1.JSON{Raw: []byte(`{"postgresql":{"parameters":{"shared_bufers":"1GB"}}}`)}}
		c.Spec.InstanceSets[0].Replicas = ptr.To[int32](1)
	})
	bad := waitReconciled(t, key, metav1.ConditionFalse, "InvalidParameter")
	if msg := pgCondition(bad, postgresv1beta1.ConditionReconciled).Message; !strings.Contains(msg, `PostgreSQL 15 has no parameter "shared_bufers"`) {
		t.Errorf("message %q", msg)
	}
	eventually(t, "an InvalidParameter Event", func() (bool, error) { return eventFor(t, ns, "hippo", "InvalidParameter"), nil })
	if err := k8s.List(testCtx, &stss, client.InNamespace(ns), client.MatchingLabels{pgcontract.LabelCluster: "hippo"}); err != nil {
		t.Fatal(err)
	}
	if len(stss.Items) != 3 {
		t.Errorf("%d StatefulSets after a refused spec, want the 3 that ran", len(stss.Items))
	}
	for _, sts := range stss.Items {
		if before[sts.Name] != sts.Generation {
			t.Errorf("StatefulSet %s changed after a refused spec", sts.Name)
		}
	}

	// Fixed: the set scales down to one instance.
	update(t, bad, func(c *postgresv1beta1.PostgresCluster) { c.Spec.Patroni = nil })
	waitReconciled(t, key, metav1.ConditionTrue, controller.ReasonReconcileSucceeded)
	eventually(t, "two StatefulSets pruned", func() (bool, error) {
		var l appsv1.StatefulSetList
		err := k8s.List(testCtx, &l, client.InNamespace(ns), client.MatchingLabels{pgcontract.LabelCluster: "hippo"})
		return err == nil && len(l.Items) == 1 && before[l.Items[0].Name] != 0, err
	})
}

// A manifest written for PGO applies unchanged; what Lookout does not honour
// is named in the status.
func TestAPGOManifestAppliesAndUnsupportedFieldsAreNamed(t *testing.T) {
	startPostgresOperator(t)
	ns := newNamespace(t)
	manifest := `apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata:
  name: hippo
spec:
  postgresVersion: 15
  instances:
    - name: instance1
      dataVolumeClaimSpec:
        accessModes:
        - "ReadWriteOnce"
        resources:
          requests:
            storage: 1Gi
  backups:
    pgbackrest:
      image: registry.developers.crunchydata.com/crunchydata/crunchy-pgbackrest:ubi8-2.45-0
      repos:
      - name: repo1
        volume:
          volumeClaimSpec:
            accessModes:
            - "ReadWriteOnce"
            resources:
              requests:
                storage: 1Gi
`
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	if err := k8s.Create(testCtx, u); err != nil {
		t.Fatalf("the apiserver refused PGO's manifest: %v", err)
	}
	c := waitReconciled(t, client.ObjectKey{Namespace: ns, Name: "hippo"}, metav1.ConditionFalse, "UnsupportedField")
	if msg := pgCondition(c, postgresv1beta1.ConditionReconciled).Message; !strings.HasPrefix(msg, "spec.backups.pgbackrest.image is not supported by Lookout") {
		t.Errorf("message %q", msg)
	}
	eventually(t, "an UnsupportedField Event", func() (bool, error) { return eventFor(t, ns, "hippo", "UnsupportedField"), nil })
	var stss appsv1.StatefulSetList
	if err := k8s.List(testCtx, &stss, client.InNamespace(ns)); err != nil || len(stss.Items) != 0 {
		t.Errorf("a refused cluster got StatefulSets: %v %d", err, len(stss.Items))
	}
}
