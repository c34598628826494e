package integration

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newThanosRuler(ns, name string, opts ...func(*monitoringv1.ThanosRuler)) *monitoringv1.ThanosRuler {
	tr := &monitoringv1.ThanosRuler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: monitoringv1.ThanosRulerSpec{
			RuleSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			QueryEndpoints: []string{"thanos-query." + ns + ".svc:9090"},
		},
	}
	for _, o := range opts {
		o(tr)
	}
	return tr
}

// thanosRulerRule is a PrometheusRule the ThanosRulers of these tests select, with a
// Thanos-only field on its group.
func thanosRulerRule(ns, name, expr string) *monitoringv1.PrometheusRule {
	r := newRule(ns, name, expr)
	r.Spec.Groups[0].PartialResponseStrategy = "warn"
	return r
}

// trBinding is the Accepted condition of ThanosRuler ns/name on r, nil when none.
func trBinding(t *testing.T, ns, rule, name string) *monitoringv1.ConfigResourceCondition {
	t.Helper()
	var r monitoringv1.PrometheusRule
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: rule}, &r); err != nil {
		t.Fatal(err)
	}
	for _, b := range r.Status.Bindings {
		if b.Resource == "thanosrulers" && b.Namespace == ns && b.Name == name && len(b.Conditions) > 0 {
			return &b.Conditions[0]
		}
	}
	return nil
}

func TestThanosRulerBecomesAStatefulSetAServiceAndRuleConfigMapsAndABadRuleIsRejectedAlone(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, thanosRulerRule(ns, "good", "sum(up)"))
	mustCreate(t, thanosRulerRule(ns, "bad", "sum(up"))
	tr := newThanosRuler(ns, "global", func(tr *monitoringv1.ThanosRuler) {
		tr.Spec.Replicas = ptr.To[int32](2)
		tr.Spec.AlertManagersURL = []string{"http://alertmanager-operated." + ns + ".svc:9093"}
		tr.Spec.Labels = map[string]string{"cluster": "eu-1"}
	})
	mustCreate(t, tr)

	var sts appsv1.StatefulSet
	eventually(t, "the StatefulSet exists", func() (bool, error) {
		return k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "thanos-ruler-global"}, &sts) == nil, nil
	})
	checkStatefulSet(t, &sts, map[string]string{
		"app.kubernetes.io/name": "thanos-ruler", "app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/instance": "global", "thanos-ruler": "global",
	}, "thanos-ruler-operated", 2, tr)
	checkArgs(t, "thanos-ruler", sts.Spec.Template.Spec.Containers[0].Args,
		"rule", "--data-dir=/thanos/data", "--eval-interval=15s", "--tsdb.retention=24h",
		`--label=thanos_ruler_replica="$(POD_NAME)"`, `--label=cluster="eu-1"`, "--alert.label-drop=thanos_ruler_replica",
		"--rule-file=/etc/thanos/rules/*/*.yaml", "--query=thanos-query."+ns+".svc:9090",
		"--alertmanagers.url=http://alertmanager-operated."+ns+".svc:9093")
	var svc corev1.Service
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "thanos-ruler-operated"}, &svc); err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Name+"/"+p.TargetPort.String())
	}
	if !slices.Equal(ports, []string{"web/web", "grpc/grpc"}) || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("governing Service ports %v clusterIP %q", ports, svc.Spec.ClusterIP)
	}

	var cm corev1.ConfigMap
	eventually(t, "the rule ConfigMap holds the good rule in Thanos's dialect", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "thanos-ruler-global-rulefiles-0"}, &cm); err != nil {
			return false, nil
		}
		for k, v := range cm.Data {
			if strings.HasPrefix(k, ns+"-good-") && strings.Contains(v, "partial_response_strategy: warn") {
				return true, nil
			}
		}
		return false, nil
	})
	for k := range cm.Data {
		if strings.HasPrefix(k, ns+"-bad-") {
			t.Errorf("the rejected rule is in the ConfigMap: %s", k)
		}
	}
	eventually(t, "the good rule is bound Accepted=True and the bad one Accepted=False with its reason", func() (bool, error) {
		good, bad := trBinding(t, ns, "good", "global"), trBinding(t, ns, "bad", "global")
		return good != nil && good.Status == monitoringv1.ConditionTrue &&
			bad != nil && bad.Status == monitoringv1.ConditionFalse && bad.Reason == "InvalidPromQL", nil
	})
	eventually(t, "a Warning Event on the bad rule", func() (bool, error) { return eventFor(t, ns, "bad", "InvalidPromQL"), nil })
	eventually(t, "Reconciled=True and the replicas kube-controller-manager created", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(tr), tr); err != nil {
			return false, err
		}
		c := conditionOf(tr.Status.Conditions, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == tr.Generation && tr.Status.Replicas == 2, nil
	})

	// Fixing the bad rule puts it in the rule files; the reloader sees the ConfigMap change.
	var bad monitoringv1.PrometheusRule
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "bad"}, &bad); err != nil {
		t.Fatal(err)
	}
	update(t, &bad, func(r *monitoringv1.PrometheusRule) { r.Spec.Groups[0].Rules[0].Expr.StrVal = "sum(up)" })
	eventually(t, "the fixed rule is accepted", func() (bool, error) {
		b := trBinding(t, ns, "bad", "global")
		return b != nil && b.Status == monitoringv1.ConditionTrue, nil
	})

	// Deleting the ThanosRuler garbage-collects what it owned and removes its bindings.
	if err := k8s.Delete(testCtx, tr); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the StatefulSet and the rule ConfigMap are gone", func() (bool, error) {
		errSts := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "thanos-ruler-global"}, &appsv1.StatefulSet{})
		errCM := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "thanos-ruler-global-rulefiles-0"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(errSts) && apierrors.IsNotFound(errCM), nil
	})
	eventually(t, "the bindings are removed", func() (bool, error) {
		return trBinding(t, ns, "good", "global") == nil && trBinding(t, ns, "bad", "global") == nil, nil
	})
}

func TestThanosRulerDriftIsRevertedAndAQuietReconcileWritesNothing(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, thanosRulerRule(ns, "rules", "sum(up)"))
	tr := newThanosRuler(ns, "drift")
	mustCreate(t, tr)
	key := client.ObjectKey{Namespace: ns, Name: "thanos-ruler-drift"}
	cmKey := client.ObjectKey{Namespace: ns, Name: "thanos-ruler-drift-rulefiles-0"}
	var sts appsv1.StatefulSet
	var cm corev1.ConfigMap
	eventually(t, "the StatefulSet exists and the status counts its pod", func() (bool, error) {
		if err := k8s.Get(testCtx, key, &sts); err != nil {
			return false, nil
		}
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(tr), tr); err != nil {
			return false, err
		}
		c := conditionOf(tr.Status.Conditions, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && tr.Status.Replicas == 1 &&
			countsSettled(&sts, tr.Status.Replicas, tr.Status.UpdatedReplicas, tr.Status.AvailableReplicas) &&
			trBinding(t, ns, "rules", "drift") != nil, nil
	})
	if err := k8s.Get(testCtx, cmKey, &cm); err != nil {
		t.Fatal(err)
	}
	want := cm.Data

	// Nothing to change: a label on the ThanosRuler makes a reconcile that writes nothing.
	checkQuietReconcile(t, "thanosruler", ns, tr)

	// Someone scales the StatefulSet and edits the rule ConfigMap: both reverted.
	scaleStatefulSet(t, &sts, 3)
	update(t, &cm, func(cm *corev1.ConfigMap) {
		for k := range cm.Data {
			cm.Data[k] = "groups: []\n"
		}
	})
	eventually(t, "the drift is reverted", func() (bool, error) {
		if err := k8s.Get(testCtx, key, &sts); err != nil {
			return false, err
		}
		if err := k8s.Get(testCtx, cmKey, &cm); err != nil {
			return false, err
		}
		return *sts.Spec.Replicas == 1 && mapsEqual(cm.Data, want), nil
	})
}

func TestAThanosRulerWithAMissingObjectStorageSecretOrABadQueryEndpointKeepsItsStatefulSetAndSaysWhy(t *testing.T) {
	ns := newNamespace(t)
	tr := newThanosRuler(ns, "store")
	mustCreate(t, tr)
	key := client.ObjectKey{Namespace: ns, Name: "thanos-ruler-store"}
	var sts appsv1.StatefulSet
	eventually(t, "the StatefulSet exists", func() (bool, error) { return k8s.Get(testCtx, key, &sts) == nil, nil })
	reconciled := func(status metav1.ConditionStatus, reason, contains string) func() (bool, error) {
		return func() (bool, error) {
			if err := k8s.Get(testCtx, client.ObjectKeyFromObject(tr), tr); err != nil {
				return false, err
			}
			c := conditionOf(tr.Status.Conditions, monitoringv1.Reconciled)
			return c != nil && c.ObservedGeneration == tr.Generation && string(c.Status) == string(status) &&
				(reason == "" || c.Reason == reason) && strings.Contains(c.Message, contains), nil
		}
	}

	update(t, tr, func(tr *monitoringv1.ThanosRuler) {
		tr.Spec.ObjectStorageConfig = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "objstore"}, Key: "bucket.yaml"}
	})
	eventually(t, "Reconciled=False, SecretNotFound naming the field", reconciled(metav1.ConditionFalse, "SecretNotFound", "spec.objectStorageConfig"))
	eventually(t, "a Warning Event on the ThanosRuler", func() (bool, error) { return eventFor(t, ns, "store", "SecretNotFound"), nil })
	mustCreate(t, &corev1.Secret{ObjectMeta: metaName(ns, "objstore"), StringData: map[string]string{"other.yaml": "type: FILESYSTEM\n"}})
	eventually(t, "Reconciled=False, SecretKeyNotFound once the Secret exists without the key", reconciled(metav1.ConditionFalse, "SecretKeyNotFound", `"bucket.yaml"`))
	if err := k8s.Get(testCtx, key, &sts); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(sts.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--objstore") }) {
		t.Errorf("the StatefulSet was changed while the Secret key is missing: %v", sts.Spec.Template.Spec.Containers[0].Args)
	}

	var secret corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "objstore"}, &secret); err != nil {
		t.Fatal(err)
	}
	update(t, &secret, func(s *corev1.Secret) {
		s.Data["bucket.yaml"] = []byte("type: FILESYSTEM\nconfig:\n  directory: /thanos/bucket\n")
	})
	eventually(t, "Reconciled=True once the key appears", reconciled(metav1.ConditionTrue, "", ""))
	eventually(t, "the StatefulSet reads the object storage config from the Secret", func() (bool, error) {
		if err := k8s.Get(testCtx, key, &sts); err != nil {
			return false, err
		}
		return slices.Contains(sts.Spec.Template.Spec.Containers[0].Args, "--objstore.config=$(OBJSTORE_CONFIG)"), nil
	})

	update(t, tr, func(tr *monitoringv1.ThanosRuler) { tr.Spec.QueryEndpoints = []string{"ftp://query:21"} })
	eventually(t, "Reconciled=False naming the endpoint", reconciled(metav1.ConditionFalse, "InvalidSpec", "spec.queryEndpoints[0]"))
	if err := k8s.Get(testCtx, key, &sts); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(sts.Spec.Template.Spec.Containers[0].Args, "--query=thanos-query."+ns+".svc:9090") {
		t.Errorf("the running StatefulSet lost its query endpoint: %v", sts.Spec.Template.Spec.Containers[0].Args)
	}

	// Thanos Ruler exits at start with nothing to query, or with an address given twice.
	update(t, tr, func(tr *monitoringv1.ThanosRuler) { tr.Spec.QueryEndpoints = nil })
	eventually(t, "Reconciled=False saying there is nothing to query", reconciled(metav1.ConditionFalse, "InvalidSpec", "spec.queryEndpoints: is empty"))
	update(t, tr, func(tr *monitoringv1.ThanosRuler) { tr.Spec.QueryEndpoints = []string{"q:9090", "q:9090"} })
	eventually(t, "Reconciled=False naming the duplicate", reconciled(metav1.ConditionFalse, "InvalidSpec", "spec.queryEndpoints[1]"))
	if err := k8s.Get(testCtx, key, &sts); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(sts.Spec.Template.Spec.Containers[0].Args, "--query=thanos-query."+ns+".svc:9090") {
		t.Errorf("the running StatefulSet lost its query endpoint: %v", sts.Spec.Template.Spec.Containers[0].Args)
	}
}

func TestAPrometheusWithTheThanosSidecarWaitsForItsObjectStorageSecretThenRunsIt(t *testing.T) {
	ns := newNamespace(t)
	p := newPrometheus(ns, "sidecar", func(p *monitoringv1.Prometheus) {
		p.Spec.Thanos = &monitoringv1.ThanosSpec{
			ObjectStorageConfig: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "objstore"}, Key: "bucket.yaml"},
		}
	})
	mustCreate(t, p)
	eventually(t, "Reconciled=False, SecretNotFound naming spec.thanos.objectStorageConfig", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := conditionOf(p.Status.Conditions, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionFalse && c.Reason == "SecretNotFound" &&
			strings.Contains(c.Message, "spec.thanos.objectStorageConfig"), nil
	})
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-sidecar"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a StatefulSet was written while the Secret is missing: %v", err)
	}

	mustCreate(t, &corev1.Secret{ObjectMeta: metaName(ns, "objstore"), StringData: map[string]string{"bucket.yaml": "type: FILESYSTEM\n"}})
	var sts appsv1.StatefulSet
	eventually(t, "the StatefulSet runs the sidecar once the Secret exists", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-sidecar"}, &sts); err != nil {
			return false, nil
		}
		return len(sts.Spec.Template.Spec.Containers) == 3, nil
	})
	sidecar := sts.Spec.Template.Spec.Containers[2]
	if sidecar.Name != "thanos-sidecar" {
		t.Fatalf("third container %q, want thanos-sidecar", sidecar.Name)
	}
	checkArgs(t, "thanos-sidecar", sidecar.Args, "sidecar", "--objstore.config=$(OBJSTORE_CONFIG)", "--grpc-address=:10901", "--tsdb.path=/prometheus")
	checkArgs(t, "prometheus", sts.Spec.Template.Spec.Containers[0].Args,
		"--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h")
	var svc corev1.Service
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-operated"}, &svc); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "grpc" && p.Port == 10901 }) {
		t.Errorf("prometheus-operated has no grpc port: %+v", svc.Spec.Ports)
	}
}
