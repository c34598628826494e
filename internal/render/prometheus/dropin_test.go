package prometheus

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Tests of what a cluster switching from the existing operator sees unchanged: each
// expectation is what the existing operator generates for the same field.

func withPortName(n string) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.PortName = n }
}

func TestPortNameNamesTheWebPortEverywhere(t *testing.T) {
	for _, tc := range []struct {
		name, portName, want string
	}{
		{"an empty portName is web", "", "web"},
		{"kube-prometheus-stack's http-web is kept", "http-web", "http-web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPrometheus(withPortName(tc.portName))
			p.Annotations = map[string]string{AnnotationService: "true"}
			objs := mustObjects(t, p, newOptions())
			c := only(t, find[*appsv1.StatefulSet](objs)).Spec.Template.Spec.Containers[0]
			if len(c.Ports) != 1 || c.Ports[0].Name != tc.want || c.Ports[0].ContainerPort != 9090 {
				t.Errorf("container ports = %+v, want %s 9090", c.Ports, tc.want)
			}
			for name, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Port.StrVal != tc.want {
					t.Errorf("%s probe = %+v, want an HTTP probe on port %s", name, probe, tc.want)
				}
			}
			for _, svc := range find[*corev1.Service](objs) {
				web := svc.Spec.Ports[0]
				if web.Name != tc.want || web.Port != 9090 || web.TargetPort.StrVal != tc.want {
					t.Errorf("Service %s web port = %+v, want %s 9090 → %s", svc.Name, web, tc.want, tc.want)
				}
			}
		})
	}
}

func TestPortNameThatCannotNameAPortIsRefused(t *testing.T) {
	for _, tc := range []struct{ name, portName string }{
		{"longer than 15 characters", "a-very-long-port-name"},
		{"the reloader's port", workload.ReloaderPortName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(newPrometheus(withPortName(tc.portName)))
			se, ok := err.(*workload.SpecError)
			if !ok || se.Reason != workload.ReasonInvalidSpec || se.Field != "spec.portName" {
				t.Errorf("Validate = %v, want InvalidSpec on spec.portName", err)
			}
		})
	}
}
