package prometheus

import (
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// The agent shares the server's pod: ProcessSignal works the same in both of its modes.
func TestAnAgentWithProcessSignalIsReloadedBySignalInBothModes(t *testing.T) {
	a := &monitoringv1alpha1.PrometheusAgent{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "agent"}}
	a.Spec.ReloadStrategy = ptrTo(monitoringv1.ProcessSignalReloadStrategyType)
	if err := ValidateAgent(a); err != nil {
		t.Fatalf("ValidateAgent: %v", err)
	}
	for _, daemonSet := range []bool{false, true} {
		opts := newOptions()
		opts.DaemonSet = daemonSet
		objs := mustObjects(t, AgentView(a), opts)
		var pod corev1.PodSpec
		if daemonSet {
			pod = only(t, find[*appsv1.DaemonSet](objs)).Spec.Template.Spec
		} else {
			pod = only(t, find[*appsv1.StatefulSet](objs)).Spec.Template.Spec
		}
		if pod.ShareProcessNamespace == nil || !*pod.ShareProcessNamespace {
			t.Errorf("daemonSet=%v: the pod does not share its process namespace", daemonSet)
		}
		if args := container(t, pod.Containers, "prometheus").Args; slices.Contains(args, "--web.enable-lifecycle") {
			t.Errorf("daemonSet=%v: the lifecycle API is on: %q", daemonSet, args)
		}
		for _, c := range []corev1.Container{container(t, pod.Containers, workload.ReloaderContainerName), container(t, pod.InitContainers, workload.InitReloaderContainerName)} {
			if !slices.Contains(c.Args, "--reload-signal-process=prometheus") || !slices.Contains(c.Args, "--reload-strategy=signal") {
				t.Errorf("daemonSet=%v: %s does not signal: %q", daemonSet, c.Name, c.Args)
			}
			if slices.ContainsFunc(c.Args, func(a string) bool { return len(a) > 13 && a[:13] == "--reload-url=" }) {
				t.Errorf("daemonSet=%v: %s still has a reload URL: %q", daemonSet, c.Name, c.Args)
			}
		}
	}
}
