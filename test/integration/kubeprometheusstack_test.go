package integration

import (
	"bytes"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// kpsName is the chart's Prometheus for the release "kube-prometheus-stack".
const kpsName = "kube-prometheus-stack-prometheus"

// loadKubePrometheusStack creates the objects of testdata/kube-prometheus-stack.yaml in
// a namespace of the test's, which takes the place of the chart's "monitoring", and
// returns the Prometheus.
func loadKubePrometheusStack(t *testing.T) *monitoringv1.Prometheus {
	t.Helper()
	ns := newNamespace(t)
	data, err := os.ReadFile("testdata/kube-prometheus-stack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.NewReplacer("namespace: monitoring", "namespace: "+ns, "[monitoring]", "["+ns+"]",
		".monitoring:9090", "."+ns+":9090").Replace(string(data)))
	// The chart's admission webhook Secret, whose CA the operator's ServiceMonitor trusts.
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kube-prometheus-stack-admission"},
		Data: map[string][]byte{"ca": cp.RESTConfig.CAData}})
	var prom *monitoringv1.Prometheus
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		var obj client.Object
		switch meta.Kind {
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "Prometheus":
			prom = &monitoringv1.Prometheus{}
			obj = prom
		case "ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		case "PrometheusRule":
			obj = &monitoringv1.PrometheusRule{}
		default:
			t.Fatalf("testdata: unexpected kind %q", meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("testdata %s: %v", meta.Kind, err)
		}
		obj.SetNamespace(ns)
		mustCreate(t, obj)
	}
	return prom
}

// TestKubePrometheusStackDefaultsAreTakenOver: kube-prometheus-stack with its default
// values (issue 24) is Reconciled=True, and its StatefulSet, governing Service and
// prometheus.yaml are what prometheus-operator generates for the same objects, section
// for section. Every expectation below is derived from prometheus-operator's code for
// these fields (pkg/prometheus statefulset and promcfg), not from Lookout's output; the
// differences by design are normalized where the test says so.
func TestKubePrometheusStackDefaultsAreTakenOver(t *testing.T) {
	p := loadKubePrometheusStack(t)

	// The version string carries a suffix; it must parse as semver with a pre-release.
	v, err := workload.ParseVersion(p.Spec.Version, "v3.14.0")
	if err != nil || v.Major != 3 || v.Minor != 14 || v.Patch != 0 || v.Pre != "distroless" {
		t.Fatalf("spec.version %q parsed as %+v (%v)", p.Spec.Version, v, err)
	}

	eventually(t, "the kube-prometheus-stack Prometheus is Reconciled=True", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		if c != nil && c.Status == monitoringv1.ConditionFalse {
			t.Fatalf("Reconciled=False %s: %s", c.Reason, c.Message)
		}
		return c != nil && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == p.Generation, nil
	})

	t.Run("the StatefulSet", func(t *testing.T) { checkKPSStatefulSet(t, p) })
	t.Run("the governing Service", func(t *testing.T) {
		var svc corev1.Service
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: p.Namespace, Name: "prometheus-operated"}, &svc); err != nil {
			t.Fatal(err)
		}
		want := []corev1.ServicePort{{Name: "http-web", Port: 9090, TargetPort: intstr.FromString("http-web"), Protocol: corev1.ProtocolTCP}}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone || !reflect.DeepEqual(svc.Spec.Ports, want) || svc.Labels["operated-prometheus"] != "true" {
			t.Errorf("prometheus-operated: clusterIP %q ports %+v labels %v; want headless, %+v, operated-prometheus=true",
				svc.Spec.ClusterIP, svc.Spec.Ports, svc.Labels, want)
		}
	})
	t.Run("the configuration", func(t *testing.T) { checkKPSConfig(t, p.Namespace) })
}

func checkKPSStatefulSet(t *testing.T, p *monitoringv1.Prometheus) {
	var sts appsv1.StatefulSet
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: p.Namespace, Name: "prometheus-" + kpsName}, &sts); err != nil {
		t.Fatal(err)
	}
	selector := map[string]string{
		"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/instance": kpsName, "prometheus": kpsName,
		"operator.prometheus.io/name": kpsName, "operator.prometheus.io/shard": "0",
	}
	if !reflect.DeepEqual(sts.Spec.Selector.MatchLabels, selector) {
		t.Errorf("selector %v, want %v", sts.Spec.Selector.MatchLabels, selector)
	}
	if sts.Labels["operator.prometheus.io/mode"] != "server" {
		t.Errorf("StatefulSet labels %v lack operator.prometheus.io/mode=server", sts.Labels)
	}
	if sts.Spec.ServiceName != "prometheus-operated" || *sts.Spec.Replicas != 1 || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement ||
		sts.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		t.Errorf("serviceName %q replicas %d policy %s update %s; want prometheus-operated, 1, Parallel, RollingUpdate",
			sts.Spec.ServiceName, *sts.Spec.Replicas, sts.Spec.PodManagementPolicy, sts.Spec.UpdateStrategy.Type)
	}
	pod := sts.Spec.Template.Spec
	if pod.ServiceAccountName != "kube-prometheus-stack-prometheus" {
		t.Errorf("serviceAccountName %q, want the chart's kube-prometheus-stack-prometheus", pod.ServiceAccountName)
	}
	if !reflect.DeepEqual(pod.SecurityContext, p.Spec.SecurityContext) {
		t.Errorf("pod securityContext %+v, want the spec's as written %+v", pod.SecurityContext, p.Spec.SecurityContext)
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds != 600 {
		t.Errorf("terminationGracePeriodSeconds %v, want 600", pod.TerminationGracePeriodSeconds)
	}
	c := pod.Containers[0]
	if c.Name != "prometheus" || c.Image != "quay.io/prometheus/prometheus:v3.14.0-distroless" {
		t.Errorf("first container %s image %s", c.Name, c.Image)
	}
	if want := []corev1.ContainerPort{{Name: "http-web", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}; !reflect.DeepEqual(c.Ports, want) {
		t.Errorf("ports %+v, want %+v", c.Ports, want)
	}
	probe := func(path string, period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http-web"), Scheme: corev1.URISchemeHTTP}},
			TimeoutSeconds: 3, PeriodSeconds: period, FailureThreshold: failures, SuccessThreshold: 1,
		}
	}
	for name, got := range map[string][2]*corev1.Probe{
		"startup":   {c.StartupProbe, probe("/-/ready", 15, 60)},
		"readiness": {c.ReadinessProbe, probe("/-/ready", 5, 3)},
		"liveness":  {c.LivenessProbe, probe("/-/healthy", 5, 6)},
	} {
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("%s probe %+v, want %+v", name, got[0], got[1])
		}
	}
	// prometheus-operator's flags for this spec (BuildCommonPrometheusArgs and the
	// server's): a v3, so no console flags. Normalized: Lookout also writes the listen
	// address, with Prometheus's default value.
	want := []string{
		"--config.file=/etc/prometheus/config_out/prometheus.env.yaml",
		"--web.enable-lifecycle",
		"--web.external-url=http://kube-prometheus-stack-prometheus." + p.Namespace + ":9090",
		"--web.route-prefix=/",
		"--log.level=info",
		"--log.format=logfmt",
		"--storage.tsdb.wal-compression",
		"--web.config.file=/etc/prometheus/web_config/web-config.yaml",
		"--storage.tsdb.retention.time=10d",
		"--storage.tsdb.path=/prometheus",
	}
	got := slices.DeleteFunc(slices.Clone(c.Args), func(a string) bool { return a == "--web.listen-address=:9090" })
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("prometheus flags\n got %q\nwant %q", got, want)
	}
	sc := c.SecurityContext
	if sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v, want read-only root, no privilege escalation, drop ALL", sc)
	}
}

func checkKPSConfig(t *testing.T, kpsNamespace string) {
	text, err := configOf(kpsNamespace, kpsName)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Global        map[string]any   `json:"global"`
		RuleFiles     []string         `json:"rule_files"`
		ScrapeConfigs []map[string]any `json:"scrape_configs"`
		Alerting      map[string]any   `json:"alerting"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	// promcfg: the default intervals, and the two external labels Thanos deduplicates by.
	wantGlobal := map[string]any{
		"scrape_interval": "30s", "evaluation_interval": "30s",
		"external_labels": map[string]any{"prometheus": kpsNamespace + "/" + kpsName, "prometheus_replica": "$(POD_NAME)"},
	}
	for k, v := range wantGlobal {
		if !reflect.DeepEqual(cfg.Global[k], v) {
			t.Errorf("global.%s = %v, want %v", k, cfg.Global[k], v)
		}
	}
	// rule_files differ by design (Lookout's glob names its ConfigMaps' mount paths).
	if len(cfg.RuleFiles) == 0 {
		t.Errorf("no rule_files")
	}

	var jobs []string
	byName := map[string]map[string]any{}
	for _, j := range cfg.ScrapeConfigs {
		name, _ := j["job_name"].(string)
		jobs = append(jobs, name)
		byName[name] = j
	}
	var want []string
	for sm, n := range map[string]int{"apiserver": 1, "kubelet": 3, "coredns": 1, "kube-state-metrics": 1,
		"prometheus-node-exporter": 1, "operator": 1, "prometheus": 2, "alertmanager": 2} {
		for i := range n {
			want = append(want, "serviceMonitor/"+kpsNamespace+"/kube-prometheus-stack-"+sm+"/"+string(rune('0'+i)))
		}
	}
	slices.Sort(want)
	slices.Sort(jobs)
	if !slices.Equal(jobs, want) {
		t.Errorf("jobs\n got %q\nwant %q", jobs, want)
	}

	// The kubelet's cAdvisor endpoint, as promcfg writes a ServiceMonitor endpoint.
	cadvisor := byName["serviceMonitor/"+kpsNamespace+"/kube-prometheus-stack-kubelet/1"]
	for k, v := range map[string]any{
		"metrics_path": "/metrics/cadvisor", "scrape_interval": "10s", "scheme": "https",
		"honor_labels": true, "honor_timestamps": true, "track_timestamps_staleness": true,
	} {
		if !reflect.DeepEqual(cadvisor[k], v) {
			t.Errorf("kubelet/1 %s = %#v, want %#v", k, cadvisor[k], v)
		}
	}
	if sd, _ := cadvisor["kubernetes_sd_configs"].([]any); len(sd) != 1 ||
		sd[0].(map[string]any)["role"] != "endpoints" ||
		!reflect.DeepEqual(sd[0].(map[string]any)["namespaces"], map[string]any{"names": []any{"kube-system"}}) {
		t.Errorf("kubelet/1 kubernetes_sd_configs = %v, want one, role endpoints in kube-system", cadvisor["kubernetes_sd_configs"])
	}
	if tls, _ := cadvisor["tls_config"].(map[string]any); tls["insecure_skip_verify"] != true || tls["ca_file"] != "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt" {
		t.Errorf("kubelet/1 tls_config = %v", cadvisor["tls_config"])
	}

	// The alerting section for the chart's Alertmanager entry: port http-web, as promcfg
	// generates an AlertmanagerEndpoints with a named port and the v2 API.
	wantAlerting := map[string]any{
		"alert_relabel_configs": []any{map[string]any{"action": "labeldrop", "regex": "prometheus_replica"}},
		"alertmanagers": []any{map[string]any{
			"path_prefix": "/", "api_version": "v2", // and scheme http, Prometheus's default
			"kubernetes_sd_configs": []any{map[string]any{"role": "endpoints", "namespaces": map[string]any{"names": []any{kpsNamespace}}}},
			"relabel_configs": []any{
				map[string]any{"action": "keep", "source_labels": []any{"__meta_kubernetes_service_name"}, "regex": "kube-prometheus-stack-alertmanager"},
				map[string]any{"action": "keep", "source_labels": []any{"__meta_kubernetes_endpoint_port_name"}, "regex": "http-web"},
			},
		}},
	}
	got, _ := yaml.Marshal(normalizeRelabels(cfg.Alerting))
	exp, _ := yaml.Marshal(wantAlerting)
	if !bytes.Equal(got, exp) {
		t.Errorf("alerting\n got:\n%s\nwant:\n%s", got, exp)
	}
}

// normalizeRelabels drops the keys whose value is Prometheus's default: a relabel rule's
// separator ";", replacement "$1", regex "(.*)", and an Alertmanager's scheme "http"
// (which promcfg writes and Lookout leaves out).
func normalizeRelabels(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch {
			case k == "separator" && e == ";", k == "replacement" && e == "$1", k == "regex" && e == "(.*)", k == "scheme" && e == "http":
			default:
				out[k] = normalizeRelabels(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeRelabels(e)
		}
		return out
	}
	return v
}
