package prometheus

import (
	"slices"
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

func TestFlagsGatedByVersionAsUpstream(t *testing.T) {
	otlp := func(s *monitoringv1.PrometheusSpec) {
		s.OTLP = &monitoringv1.OTLPConfig{PromoteResourceAttributes: []string{"service.name"}}
	}
	rw2 := func(s *monitoringv1.PrometheusSpec) {
		s.RemoteWrite = []monitoringv1.RemoteWriteSpec{{URL: "https://a.example.com", MessageVersion: ptrTo(monitoringv1.RemoteWriteMessageVersion2_0)}}
	}
	for _, tc := range []struct {
		name      string
		p         *monitoringv1.Prometheus
		want, not []string
	}{
		{"spec.otlp alone turns the OTLP receiver on", newPrometheus(withVersion("v3.5.0"), withSpec(otlp)),
			[]string{"--web.enable-otlp-receiver"}, nil},
		{"enableOTLPReceiver: false wins over spec.otlp", newPrometheus(withVersion("v3.5.0"), withSpec(otlp), withSpec(func(s *monitoringv1.PrometheusSpec) { s.EnableOTLPReceiver = ptrTo(false) })),
			nil, []string{"--web.enable-otlp-receiver"}},
		{"on v2.47 to v2.55 the receiver is a feature flag", newPrometheus(withVersion("v2.53.1"), withSpec(otlp)),
			[]string{"--enable-feature=otlp-write-receiver"}, []string{"--web.enable-otlp-receiver"}},
		{"before v2.47 there is no receiver", newPrometheus(withVersion("v2.45.0"), withSpec(otlp)),
			nil, []string{"--web.enable-otlp-receiver", "--enable-feature=otlp-write-receiver"}},
		{"Remote Write 2.0 needs no metadata-wal-records from v3.4", newPrometheus(withVersion("v3.4.0"), withSpec(rw2)),
			nil, []string{"--enable-feature=metadata-wal-records"}},
		{"Remote Write 2.0 before v3.4 writes metadata to the WAL", newPrometheus(withVersion("v2.54.0"), withSpec(rw2)),
			[]string{"--enable-feature=metadata-wal-records"}, nil},
		{"v2 points at its console templates", newPrometheus(withVersion("v2.53.1")),
			[]string{"--web.console.templates=/etc/prometheus/consoles", "--web.console.libraries=/etc/prometheus/console_libraries"}, nil},
		{"v3 has no console templates", newPrometheus(withVersion("v3.0.0")),
			nil, []string{"--web.console.templates=/etc/prometheus/consoles"}},
		{"a path-only externalUrl is passed through", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.ExternalURL = "/prometheus" })),
			[]string{"--web.external-url=/prometheus", "--web.route-prefix=/"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := only(t, find[*appsv1.StatefulSet](mustObjects(t, tc.p, newOptions()))).Spec.Template.Spec.Containers[0].Args
			for _, w := range tc.want {
				if !slices.Contains(args, w) {
					t.Errorf("args lack %s: %q", w, args)
				}
			}
			for _, n := range tc.not {
				if slices.Contains(args, n) {
					t.Errorf("args have %s: %q", n, args)
				}
			}
		})
	}
}

func TestListenLocalProbesInsideThePodWithoutAPort(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    []string
	}{
		{"v3.5.0", []string{"promtool", "check", "ready", "--url", "http://localhost:9090"}},
		{"v2.40.0", []string{"sh", "-c", `if [ -x "$(command -v curl)" ]; then exec curl --fail http://localhost:9090/-/ready; elif [ -x "$(command -v wget)" ]; then exec wget -q -O /dev/null http://localhost:9090/-/ready; else exit 1; fi`}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			p := newPrometheus(withVersion(tc.version), withSpec(func(s *monitoringv1.PrometheusSpec) { s.ListenLocal = true }))
			c := only(t, find[*appsv1.StatefulSet](mustObjects(t, p, newOptions()))).Spec.Template.Spec.Containers[0]
			if len(c.Ports) != 0 {
				t.Errorf("ports %+v, want none: nothing outside the pod can reach loopback", c.Ports)
			}
			for name, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe} {
				if probe == nil || probe.Exec == nil || !slices.Equal(probe.Exec.Command, tc.want) {
					t.Errorf("%s probe %+v, want exec %q", name, probe, tc.want)
				}
			}
			if c.LivenessProbe == nil || c.LivenessProbe.Exec == nil {
				t.Errorf("liveness probe %+v, want an exec probe", c.LivenessProbe)
			}
		})
	}
}

func TestLogFilesOnAnyWritableMountOfThePrometheusContainer(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *monitoringv1.Prometheus
		ok   bool
	}{
		{"a path in the data volume, as the Prometheus docs' example", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.QueryLogFile = "/prometheus/query.log"
		})), true},
		{"a path on a volume a containers patch mounts", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.ScrapeFailureLogFile = ptrTo("/logs/scrape.log")
			s.Volumes = []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			s.Containers = []corev1.Container{{Name: "prometheus", VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/logs"}}}}
		})), true},
		{"a path on the read-only root filesystem", newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.QueryLogFile = "/var/query.log"
		})), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Validate(tc.p); (err == nil) != tc.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	p := newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.QueryLogFile = "query.log" }))
	pod := only(t, find[*appsv1.StatefulSet](mustObjects(t, p, newOptions()))).Spec.Template.Spec
	if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "log-file" }) {
		t.Errorf("no volume log-file (the existing operator's name) for a bare query log file name")
	}
}

func TestTheReloaderLogsAtThePrometheusLevel(t *testing.T) {
	p := newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) { s.LogLevel = "debug" }))
	pod := only(t, find[*appsv1.StatefulSet](mustObjects(t, p, newOptions()))).Spec.Template.Spec
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers[1]) {
		if !slices.Contains(c.Args, "--log-level=debug") {
			t.Errorf("%s args lack --log-level=debug: %q", c.Name, c.Args)
		}
	}
}
