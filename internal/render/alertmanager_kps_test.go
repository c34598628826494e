package render

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/render/alertmanager"
)

// kubePrometheusStackAlertmanager is the Alertmanager kube-prometheus-stack renders with
// its default values (release "kps", namespace "monitoring"), as its values and docs
// describe it.
func kubePrometheusStackAlertmanager() *monitoringv1.Alertmanager {
	release := map[string]string{"release": "kps"}
	return &monitoringv1.Alertmanager{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "kps-kube-prometheus-stack-alertmanager",
			Labels: map[string]string{"app": "kube-prometheus-stack-alertmanager", "release": "kps"}},
		Spec: monitoringv1.AlertmanagerSpec{
			Image:                               ptr.To("quay.io/prometheus/alertmanager:v0.34.0"),
			Version:                             "v0.34.0",
			Replicas:                            ptr.To[int32](1),
			ListenLocal:                         false,
			ServiceAccountName:                  "kps-kube-prometheus-stack-alertmanager",
			AutomountServiceAccountToken:        ptr.To(true),
			ExternalURL:                         "http://kps-kube-prometheus-stack-alertmanager.monitoring:9093",
			PortName:                            "http-web",
			LogFormat:                           "logfmt",
			LogLevel:                            "info",
			Retention:                           "120h",
			RoutePrefix:                         "/",
			AlertmanagerConfigSelector:          &metav1.LabelSelector{MatchLabels: release},
			AlertmanagerConfigNamespaceSelector: &metav1.LabelSelector{MatchLabels: release},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](2000), FSGroup: ptr.To[int64](2000),
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		},
	}
}

// The chart's config Secret: its default alertmanager.yaml.
const kubePrometheusStackConfig = `global:
  resolve_timeout: 5m
inhibit_rules:
- source_matchers: ['severity = critical']
  target_matchers: ['severity =~ warning|info']
  equal: [namespace, alertname]
route:
  group_by: [namespace]
  group_wait: 30s
  group_interval: 5m
  repeat_interval: 12h
  receiver: 'null'
  routes:
  - receiver: 'null'
    matchers: [alertname = "Watchdog"]
receivers:
- name: 'null'
templates:
- '/etc/alertmanager/config/*.tmpl'
`

// kube-prometheus-stack's Alertmanager is taken over: it renders (Reconciled=True),
// and the StatefulSet and governing Service carry what the existing operator gives
// them for it: the web port named http-web in the container, probes and Service, the
// chart's ServiceAccount and securityContext, and no flag for Alertmanager's defaults.
func TestKubePrometheusStacksAlertmanagerIsTakenOver(t *testing.T) {
	am := kubePrometheusStackAlertmanager()
	d, err := Alertmanager(AlertmanagerInputs{
		Alertmanager:  am,
		UserConfig:    map[string][]byte{alertmanager.UserConfigKey: []byte(kubePrometheusStackConfig)},
		ReloaderImage: "r:1",
	})
	if err != nil {
		t.Fatalf("render refuses kube-prometheus-stack's Alertmanager (Reconciled=False): %v", err)
	}
	var sts *appsv1.StatefulSet
	var svc *corev1.Service
	for _, o := range d.Objects {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			sts = o
		case *corev1.Service:
			svc = o
		}
	}
	if sts == nil || svc == nil {
		t.Fatalf("no StatefulSet or Service among %d objects", len(d.Objects))
	}
	pod := sts.Spec.Template.Spec
	equal := func(what string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
	}
	equal("pod version label", sts.Spec.Template.Labels["app.kubernetes.io/version"], "0.34.0")
	equal("serviceAccountName", pod.ServiceAccountName, "kps-kube-prometheus-stack-alertmanager")
	equal("automountServiceAccountToken", *pod.AutomountServiceAccountToken, true)
	sc := pod.SecurityContext
	equal("runAsUser", *sc.RunAsUser, int64(1000))
	equal("runAsGroup", *sc.RunAsGroup, int64(2000))
	equal("fsGroup", *sc.FSGroup, int64(2000))
	equal("runAsNonRoot", *sc.RunAsNonRoot, true)
	c := pod.Containers[slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == "alertmanager" })]
	equal("image", c.Image, "quay.io/prometheus/alertmanager:v0.34.0")
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, p.Name)
	}
	equal("container ports", strings.Join(ports, ","), "http-web,mesh-tcp,mesh-udp")
	equal("readiness probe port", c.ReadinessProbe.HTTPGet.Port, intstr.FromString("http-web"))
	equal("liveness probe port", c.LivenessProbe.HTTPGet.Port, intstr.FromString("http-web"))
	equal("memory request", c.Resources.Requests.Memory().String(), "200Mi")
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--log.") {
			t.Errorf("%s: Alertmanager's default, the existing operator leaves it out", a)
		}
	}
	if !slices.Contains(c.Args, "--web.external-url=http://kps-kube-prometheus-stack-alertmanager.monitoring:9093") {
		t.Errorf("args lack the external URL: %v", c.Args)
	}
	equal("Service", svc.Name, "alertmanager-operated")
	equal("Service web port", svc.Spec.Ports[0].Name, "http-web")
	equal("Service web target port", svc.Spec.Ports[0].TargetPort, intstr.FromString("http-web"))
	if !strings.Contains(string(d.Config), `matchers: [alertname = "Watchdog"]`) {
		t.Errorf("the chart's config is not kept as written:\n%s", d.Config)
	}
}
