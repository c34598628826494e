package integration

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/cli"
)

func newAgent(ns, name string, opts ...func(*monitoringv1alpha1.PrometheusAgent)) *monitoringv1alpha1.PrometheusAgent {
	a := &monitoringv1alpha1.PrometheusAgent{ObjectMeta: metaName(ns, name)}
	a.Spec.PodMonitorSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	a.Spec.ExternalLabels = map[string]string{"cluster": "edge-1"}
	a.Spec.RemoteWrite = []monitoringv1.RemoteWriteSpec{{URL: "http://central.monitoring.svc:9090/api/v1/write"}}
	for _, o := range opts {
		o(a)
	}
	return a
}

func newPodMonitor(ns, name string) *monitoringv1.PodMonitor {
	return &monitoringv1.PodMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "a"}},
		Spec: monitoringv1.PodMonitorSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: ptr.To("metrics")}},
		},
	}
}

func agentCondition(a *monitoringv1alpha1.PrometheusAgent, t monitoringv1.ConditionType) *monitoringv1.Condition {
	return condition(&monitoringv1.Prometheus{Status: a.Status}, t)
}

// waitAgentReconciled waits until the agent's Reconciled condition has status want for its
// current generation, and returns that condition.
func waitAgentReconciled(t *testing.T, a *monitoringv1alpha1.PrometheusAgent, want monitoringv1.ConditionStatus) *monitoringv1.Condition {
	t.Helper()
	var c *monitoringv1.Condition
	eventually(t, "the PrometheusAgent is Reconciled="+string(want), func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(a), a); err != nil {
			return false, err
		}
		c = agentCondition(a, monitoringv1.Reconciled)
		return c != nil && c.Status == want && c.ObservedGeneration == a.Generation, nil
	})
	return c
}

func TestAPrometheusAgentBecomesItsObjectsAStatusAndBindings(t *testing.T) {
	ns := newNamespace(t)
	pm := newPodMonitor(ns, "app")
	mustCreate(t, pm)
	a := newAgent(ns, "edge")
	mustCreate(t, a)

	key := client.ObjectKey{Namespace: ns, Name: "prom-agent-edge"}
	var sts appsv1.StatefulSet
	eventually(t, "the StatefulSet prom-agent-edge exists", func() (bool, error) {
		return k8s.Get(testCtx, key, &sts) == nil, nil
	})
	wantSelector := map[string]string{"app.kubernetes.io/name": "prometheus-agent", "operator.prometheus.io/name": "edge",
		"app.kubernetes.io/instance": "edge", "app.kubernetes.io/managed-by": "prometheus-operator", "operator.prometheus.io/shard": "0"}
	if !mapsEqual(sts.Spec.Selector.MatchLabels, wantSelector) {
		t.Errorf("selector = %v, want %v", sts.Spec.Selector.MatchLabels, wantSelector)
	}
	if sts.Spec.ServiceName != "prometheus-agent-operated" {
		t.Errorf("serviceName = %q, want prometheus-agent-operated", sts.Spec.ServiceName)
	}
	if args := sts.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--agent") || !slices.Contains(args, "--storage.agent.path=/prometheus") {
		t.Errorf("prometheus args = %v, want --agent and --storage.agent.path=/prometheus", args)
	}
	if !isControlledBy(&sts, a) {
		t.Errorf("the StatefulSet is not controlled by the PrometheusAgent: %v", sts.OwnerReferences)
	}
	var svc corev1.Service
	eventually(t, "the governing Service prometheus-agent-operated exists", func() (bool, error) {
		return k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-agent-operated"}, &svc) == nil, nil
	})
	eventually(t, "the config holds the PodMonitor's job, remote_write and no rule_files", func() (bool, error) {
		cfg, err := agentConfig(ns, "prom-agent-edge")
		return err == nil && slices.Contains(jobsIn(cfg), "podMonitor/"+ns+"/app/0") && strings.Contains(cfg, "remote_write:") &&
			!strings.Contains(cfg, "rule_files") && strings.Contains(cfg, "cluster: edge-1"), err
	})

	waitAgentReconciled(t, a, monitoringv1.ConditionTrue)
	if a.Status.Selector == "" || a.Status.Shards != 1 || !strings.Contains(a.Status.Selector, "app.kubernetes.io/name=prometheus-agent") {
		t.Errorf("status selector %q, shards %d", a.Status.Selector, a.Status.Shards)
	}
	eventually(t, "the PodMonitor is bound to the agent", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(pm), pm); err != nil {
			return false, err
		}
		for _, b := range pm.Status.Bindings {
			if b.Resource == "prometheusagents" && b.Name == "edge" && len(b.Conditions) == 1 && b.Conditions[0].Status == monitoringv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})

	// A reconcile with nothing to change (a label on the agent) writes nothing, once the
	// StatefulSet's pod exists and its counts are in the agent's status (no kubelet runs
	// it, so it stays unavailable).
	eventually(t, "the agent's status counts the StatefulSet's pod", func() (bool, error) {
		err := k8s.Get(testCtx, client.ObjectKeyFromObject(a), a)
		return err == nil && a.Status.Replicas == 1 && a.Status.UpdatedReplicas == 1, err
	})
	before, beforeReconciles := writes.Load(), reconcilesOf(t, "prometheusagent")
	update(t, a, func(a *monitoringv1alpha1.PrometheusAgent) { a.Labels = map[string]string{"touched": "yes"} })
	eventually(t, "a reconcile ran", func() (bool, error) { return reconcilesOf(t, "prometheusagent") > beforeReconciles, nil })
	if got := writesSince(before, ns); len(got) != 0 {
		t.Errorf("a reconcile with nothing to change sent %d writes, want 0: %v", len(got), got)
	}

	// Drift on the StatefulSet is reverted.
	update(t, &sts, func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](4) })
	eventually(t, "the replicas are reverted", func() (bool, error) {
		err := k8s.Get(testCtx, key, &sts)
		return err == nil && *sts.Spec.Replicas == 1, err
	})

	// Deleting the agent deletes what it owns.
	if err := k8s.Delete(testCtx, a); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the agent is gone (finalizer done)", func() (bool, error) {
		return apierrors.IsNotFound(k8s.Get(testCtx, client.ObjectKeyFromObject(a), &monitoringv1alpha1.PrometheusAgent{})), nil
	})
	eventually(t, "the StatefulSet, Secrets and governing Service are garbage-collected", func() (bool, error) {
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Secret{}} {
			if !apierrors.IsNotFound(k8s.Get(testCtx, key, obj)) {
				return false, nil
			}
		}
		return apierrors.IsNotFound(k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-agent-operated"}, &corev1.Service{})), nil
	})
	eventually(t, "the PodMonitor's binding is removed", func() (bool, error) {
		err := k8s.Get(testCtx, client.ObjectKeyFromObject(pm), pm)
		return err == nil && len(pm.Status.Bindings) == 0, err
	})
}

func TestAPrometheusAndAnAgentOfTheSameNameLeaveEachOthersObjectsAlone(t *testing.T) {
	ns := newNamespace(t)
	p := newPrometheus(ns, "same")
	a := newAgent(ns, "same")
	mustCreate(t, p)
	mustCreate(t, a)
	eventually(t, "both StatefulSets exist", func() (bool, error) {
		return k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-same"}, &appsv1.StatefulSet{}) == nil &&
			k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prom-agent-same"}, &appsv1.StatefulSet{}) == nil, nil
	})
	waitAgentReconciled(t, a, monitoringv1.ConditionTrue)
	if err := k8s.Delete(testCtx, a); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the agent's StatefulSet is gone", func() (bool, error) {
		return apierrors.IsNotFound(k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prom-agent-same"}, &appsv1.StatefulSet{})), nil
	})
	for _, name := range []string{"prometheus-same", "prometheus-same-web-config"} {
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}); err != nil {
			t.Errorf("the Prometheus's Secret %s: %v", name, err)
		}
	}
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-same"}, &appsv1.StatefulSet{}); err != nil {
		t.Errorf("the Prometheus's StatefulSet: %v", err)
	}
}

func TestAnAgentInDaemonSetModeBecomesADaemonSetDiscoveringItsNodesPods(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, newPodMonitor(ns, "app"))
	a := newAgent(ns, "nodes", func(a *monitoringv1alpha1.PrometheusAgent) {
		a.Spec.Mode = ptr.To(monitoringv1alpha1.DaemonSetPrometheusAgentMode)
	})
	mustCreate(t, a)
	var ds appsv1.DaemonSet
	eventually(t, "the DaemonSet prom-agent-nodes exists", func() (bool, error) {
		return k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prom-agent-nodes"}, &ds) == nil, nil
	})
	reloader := ds.Spec.Template.Spec.Containers[1]
	if !slices.ContainsFunc(reloader.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	}) {
		t.Errorf("the reloader has no NODE_NAME from spec.nodeName: %v", reloader.Env)
	}
	eventually(t, "the config discovers the pods of the agent's node only", func() (bool, error) {
		cfg, err := agentConfig(ns, "prom-agent-nodes")
		return err == nil && strings.Contains(cfg, "field: spec.nodeName=$(NODE_NAME)"), err
	})
	waitAgentReconciled(t, a, monitoringv1.ConditionTrue)
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prom-agent-nodes"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a DaemonSet-mode agent has a StatefulSet too: %v", err)
	}
}

func TestAnAgentFieldLookoutDoesNotHonourIsRefusedByNameWithAnEvent(t *testing.T) {
	ns := newNamespace(t)
	// Out-of-order ingestion came to agents with Prometheus v2.54.
	a := newAgent(ns, "refused", func(a *monitoringv1alpha1.PrometheusAgent) {
		a.Spec.Version = "v2.53.2"
		a.Spec.TSDB = &monitoringv1.TSDBSpec{OutOfOrderTimeWindow: ptr.To[monitoringv1.Duration]("10m")}
	})
	mustCreate(t, a)
	c := waitAgentReconciled(t, a, monitoringv1.ConditionFalse)
	if c.Reason != "UnsupportedField" || !strings.Contains(c.Message, "spec.tsdb.outOfOrderTimeWindow") {
		t.Errorf("Reconciled = %s/%s, want UnsupportedField naming spec.tsdb.outOfOrderTimeWindow", c.Reason, c.Message)
	}
	eventually(t, "a Warning Event says why", func() (bool, error) { return eventFor(t, ns, "refused", "UnsupportedField"), nil })
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prom-agent-refused"}, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused agent got a StatefulSet: %v", err)
	}
	// Fixing the spec lets it through.
	update(t, a, func(a *monitoringv1alpha1.PrometheusAgent) { a.Spec.TSDB = nil })
	waitAgentReconciled(t, a, monitoringv1.ConditionTrue)
}

// agentConfig reads and gunzips the prometheus.yaml in config Secret ns/secret.
func agentConfig(ns, secret string) (string, error) {
	var s corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: secret}, &s); err != nil {
		return "", err
	}
	return gunzip(s.Data["prometheus.yaml.gz"])
}

func TestRenderingAnAgentFromFilesIsByteIdenticalToWhatTheControllerWrote(t *testing.T) {
	ns := newNamespace(t)
	pm := newPodMonitor(ns, "app")
	a := newAgent(ns, "files")
	mustCreate(t, pm)
	mustCreate(t, a)
	var cluster string
	eventually(t, "the controller wrote the agent's config", func() (bool, error) {
		var err error
		cluster, err = agentConfig(ns, "prom-agent-files")
		return err == nil && strings.Contains(cluster, "podMonitor/"+ns+"/app/0"), nil
	})
	for _, o := range []client.Object{a, pm} {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
	}
	dir := exportObjects(t, []client.Object{a, pm})
	var out, errOut bytes.Buffer
	err := cli.Render(testCtx, cli.RenderOptions{Files: []string{dir}, PrometheusAgent: ns + "/files",
		Output: cli.OutputConfig, ReloaderImage: "lookout-reloader:test"}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != cluster {
		t.Errorf("rendered config differs from the controller's:\n--- render\n%s\n--- controller\n%s", out.String(), cluster)
	}
}
