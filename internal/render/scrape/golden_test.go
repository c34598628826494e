package scrape

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the current output")

// goldenCases are representative inputs whose whole prometheus.yaml is kept in testdata.
func goldenCases() map[string]Input {
	creds := newSecret("default", "creds", map[string]string{"user": "alice", "password": "s3cret", "token": "t0ken"})

	cases := map[string]Input{
		"minimal": newInput(newPrometheus(), monitors(newServiceMonitor("default", "app"))),

		"selector_match_labels_and_expressions": newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withSelector(metav1.LabelSelector{
			MatchLabels: map[string]string{"app.kubernetes.io/name": "web", "tier": "frontend"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "staging"}},
				{Key: "canary", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}},
				{Key: "team", Operator: metav1.LabelSelectorOpExists},
				{Key: "deprecated", Operator: metav1.LabelSelectorOpDoesNotExist},
			},
		})))),

		"job_label_target_labels_pod_target_labels": newInput(
			newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.PodTargetLabels = []string{"app.kubernetes.io/version", "zone"}
			})),
			monitors(newServiceMonitor("default", "app", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
				s.JobLabel = "app.kubernetes.io/name"
				s.TargetLabels = []string{"team", "app.kubernetes.io/part-of"}
				s.PodTargetLabels = []string{"zone", "pod-template-hash"}
			}))),
		),

		"namespace_selector_any": newInput(newPrometheus(), monitors(newServiceMonitor("default", "app",
			withNamespaceSelector(monitoringv1.NamespaceSelector{Any: true})))),

		"namespace_selector_match_names": newInput(newPrometheus(), monitors(newServiceMonitor("default", "app",
			withNamespaceSelector(monitoringv1.NamespaceSelector{MatchNames: []string{"web", "db"}})))),

		"ignore_namespace_selectors": newInput(
			newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.IgnoreNamespaceSelectors = true })),
			monitors(
				newServiceMonitor("default", "any", withNamespaceSelector(monitoringv1.NamespaceSelector{Any: true})),
				newServiceMonitor("default", "listed", withNamespaceSelector(monitoringv1.NamespaceSelector{MatchNames: []string{"web"}})),
			),
		),

		"endpointslice_role": newInput(newPrometheus(withPromRole(monitoringv1.EndpointSliceRole)), monitors(newServiceMonitor("default", "app",
			withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
				s.AttachMetadata = &monitoringv1.AttachMetadata{Node: ptr(true)}
			}),
			withEndpoints(endpoint(), endpoint(targetPortName("metrics"))),
		))),

		"role_selector_mechanism": newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
			s.SelectorMechanism = ptr(monitoringv1.SelectorMechanismRole)
			s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}}}
		})))),

		"basic_auth_and_authorization_from_secrets": newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(
			endpoint(basicAuthFrom("creds", "user", "password")),
			endpoint(port("admin"), authorizationFrom("Token", "creds", "token")),
			endpoint(port("legacy"), withEP(func(ep *monitoringv1.Endpoint) {
				ref := secretRef("creds", "token")
				ep.BearerTokenSecret = &ref
			})),
		))), creds),

		"relabelings_and_metric_relabelings": newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(
			relabelings(
				relabelCfg("replace", []string{"__meta_kubernetes_pod_node_name"}, "instance_node", ""),
				relabelCfg("LabelMap", nil, "", "__meta_kubernetes_pod_label_(.+)"),
				func() monitoringv1.RelabelConfig {
					rc := relabelCfg("replace", []string{"__address__", "__meta_kubernetes_pod_annotation_port"}, "__address__", `([^:]+)(?::\d+)?;(\d+)`)
					rc.Separator = ptr(";")
					rc.Replacement = ptr("$1:$2")
					return rc
				}(),
			),
			metricRelabelings(
				relabelCfg("drop", []string{"__name__"}, "", "go_gc_.*"),
				relabelCfg("labeldrop", nil, "", "id"),
				func() monitoringv1.RelabelConfig {
					rc := relabelCfg("replace", nil, "static", "")
					rc.Replacement = ptr("")
					return rc
				}(),
			),
		))))),

		"enforced_limits": newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.EnforcedSampleLimit = ptr(int64(10000))
			s.EnforcedTargetLimit = ptr(int64(100))
			s.EnforcedLabelLimit = ptr(int64(50))
			s.EnforcedLabelNameLengthLimit = ptr(int64(100))
			s.EnforcedLabelValueLengthLimit = ptr(int64(200))
			s.EnforcedKeepDroppedTargets = ptr(int64(10))
			s.EnforcedBodySizeLimit = "50MiB"
			s.SampleLimit = ptr(int64(5000))
		})), monitors(newServiceMonitor("default", "app", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
			s.SampleLimit = ptr(int64(20000))
			s.TargetLimit = ptr(int64(10))
			s.LabelLimit = ptr(int64(100))
			s.BodySizeLimit = ptr(monitoringv1.ByteSize("1MiB"))
			s.ScrapeProtocols = []monitoringv1.ScrapeProtocol{monitoringv1.PrometheusProto, monitoringv1.OpenMetricsText1_0_0}
			s.FallbackScrapeProtocol = ptr(monitoringv1.PrometheusText0_0_4)
			s.ScrapeNativeHistograms = ptr(true)
			s.NativeHistogramBucketLimit = ptr(int64(160))
			s.NativeHistogramMinBucketFactor = ptr(resource.MustParse("1.1"))
		})))),

		"shards_3": newInput(newPrometheus(withShards(3)), monitors(newServiceMonitor("default", "app"))),

		"external_label_overrides": newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.PrometheusExternalLabelName = ptr("cluster_prometheus")
			s.ReplicaExternalLabelName = ptr("")
			s.ExternalLabels = map[string]string{"cluster": "eu-1", "cluster_prometheus": "overridden"}
			s.ScrapeInterval = "15s"
			s.ScrapeTimeout = "10s"
			s.EvaluationInterval = "1m"
		})), monitors(newServiceMonitor("default", "app"))),

		"target_port_and_http_options": newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(
			endpoint(targetPortNumber(8443), interval("15s"), scrapeTimeout("5s"), withEP(func(ep *monitoringv1.Endpoint) {
				ep.Path = "/internal/metrics"
				ep.Scheme = ptr(monitoringv1.SchemeHTTPS)
				ep.Params = map[string][]string{"module": {"http_2xx"}, "debug": {"false"}}
				ep.HonorLabels = true
				ep.HonorTimestamps = ptr(false)
				ep.TrackTimestampsStaleness = ptr(true)
				ep.FollowRedirects = ptr(false)
				ep.EnableHTTP2 = ptr(false)
				ep.ProxyURL = ptr("http://proxy.internal:3128")
				ep.NoProxy = ptr("10.0.0.0/8")
				ep.FilterRunning = ptr(false)
				ep.TLSConfig = &monitoringv1.TLSConfig{
					SafeTLSConfig:  monitoringv1.SafeTLSConfig{ServerName: ptr("app.default.svc"), InsecureSkipVerify: ptr(false), MinVersion: ptr(monitoringv1.TLSVersion12)},
					TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/prometheus/ca.crt", CertFile: "/etc/prometheus/tls.crt", KeyFile: "/etc/prometheus/tls.key"},
				}
			})),
			endpoint(targetPortName("metrics"), withEP(func(ep *monitoringv1.Endpoint) { ep.BearerTokenFile = "/var/run/secrets/token" })),
		)))),

		"scrape_class_and_enforced_namespace_label": newInput(newPrometheus(
			withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.EnforcedNamespaceLabel = "tenant" }),
			withScrapeClass(monitoringv1.ScrapeClass{
				Name:      "istio",
				Default:   ptr(true),
				TLSConfig: &monitoringv1.TLSConfig{TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/istio-certs/root-cert.pem", CertFile: "/etc/istio-certs/cert-chain.pem", KeyFile: "/etc/istio-certs/key.pem"}},
				Relabelings: []monitoringv1.RelabelConfig{func() monitoringv1.RelabelConfig {
					rc := relabelCfg("replace", nil, "mesh", "")
					rc.Replacement = ptr("istio")
					return rc
				}()},
				MetricRelabelings: []monitoringv1.RelabelConfig{relabelCfg("labeldrop", nil, "", "istio_.*")},
				AttachMetadata:    &monitoringv1.AttachMetadata{Node: ptr(true)},
			}),
			withScrapeClass(monitoringv1.ScrapeClass{
				Name:          "plain",
				Authorization: &monitoringv1.Authorization{CredentialsFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"},
			}),
		), monitors(
			newServiceMonitor("team-a", "default-class", withEndpoints(endpoint(relabelings(relabelCfg("replace", []string{"__meta_kubernetes_pod_node_name"}, "node_name", ""))))),
			newServiceMonitor("team-b", "plain-class", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) { s.ScrapeClassName = ptr("plain") })),
		)),

		"podmonitor_minimal": newMixedInput(newPrometheus(), nil, podMonitors(newPodMonitor("default", "app")), nil),

		"podmonitor_job_label_pod_target_labels_namespace_any": newMixedInput(
			newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.PodTargetLabels = []string{"app.kubernetes.io/version", "zone"}
			})),
			nil,
			podMonitors(newPodMonitor("default", "app",
				withPMSpec(func(s *monitoringv1.PodMonitorSpec) {
					s.JobLabel = "app.kubernetes.io/name"
					s.PodTargetLabels = []string{"zone", "pod-template-hash"}
					s.NamespaceSelector = monitoringv1.NamespaceSelector{Any: true}
					s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"batch"}}}
				}),
				withPodEndpoints(
					podEndpoint(),
					podEndpoint(podPortNumber(9100), withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
						ep.Interval = "15s"
						ep.Path = "/stats"
						ep.FilterRunning = ptr(false)
					})),
				),
			)),
			nil,
		),

		"probe_static_targets": newMixedInput(newPrometheus(), nil, nil, probes(newProbe("default", "websites",
			withStaticTargets([]string{"https://example.com", "https://example.org/healthz", "10.0.0.1:443"}, map[string]string{"env": "prod"}),
		))),

		"probe_relabelings_and_basic_auth": newMixedInput(newPrometheus(withShards(2)), nil, nil, probes(newProbe("default", "internal",
			withStaticTargets([]string{"https://intranet.example.com"}, nil,
				func() monitoringv1.RelabelConfig {
					rc := relabelCfg("replace", []string{"__param_target"}, "__param_module", "https://intranet.*")
					rc.Replacement = ptr("http_2xx_auth")
					return rc
				}(),
				relabelCfg("replace", []string{"__param_target"}, "site", ""),
			),
			withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.JobName = "blackbox"
				s.ProberSpec.Scheme = ptr(monitoringv1.SchemeHTTPS)
				s.ProberSpec.Path = "/blackbox/probe"
				s.Interval = "1m"
				s.ScrapeTimeout = "20s"
				s.Params = []monitoringv1.ProbeParam{{Name: "debug", Values: []string{"true"}}}
				s.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")}
				s.MetricRelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("drop", []string{"__name__"}, "", "probe_http_version")}
				s.SampleLimit = ptr(int64(1000))
			}),
		)), creds),

		"probe_ingress_targets": newMixedInput(newPrometheus(), nil, nil, probes(newProbe("default", "ingresses",
			withIngressTargets(monitoringv1.ProbeTargetIngress{
				Selector:          metav1.LabelSelector{MatchLabels: map[string]string{"probe": "true"}},
				NamespaceSelector: monitoringv1.NamespaceSelector{MatchNames: []string{"web", "shop"}},
				RelabelConfigs: []monitoringv1.RelabelConfig{func() monitoringv1.RelabelConfig {
					rc := relabelCfg("replace", []string{ingressAddressLabel}, "__param_target", "")
					rc.Replacement = ptr("https://${1}/healthz")
					return rc
				}()},
			}),
		))),

		"mixed_kinds_order": newMixedInput(
			newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.EnforcedNamespaceLabel = "tenant" })),
			monitors(newServiceMonitor("default", "zeta"), newServiceMonitor("apps", "alpha")),
			podMonitors(newPodMonitor("default", "alpha"), newPodMonitor("apps", "web")),
			probes(newProbe("default", "alpha"), newProbe("apps", "site")),
		),

		"rejected_monitor_left_out": newInput(newPrometheus(), monitors(
			newServiceMonitor("default", "good"),
			newServiceMonitor("default", "bad", withEndpoints(endpoint(relabelings(relabelCfg("keep", []string{"__address__"}, "", "(foo"))))),
		)),
	}
	maps.Copy(cases, credentialGoldenCases())
	maps.Copy(cases, scrapeConfigGoldenCases())
	maps.Copy(cases, sdGoldenCases())
	maps.Copy(cases, additionalGoldenCases())
	maps.Copy(cases, alertingGoldenCases())
	maps.Copy(cases, remoteGoldenCases())
	maps.Copy(cases, sectionsGoldenCases())
	return cases
}

func TestGolden(t *testing.T) {
	for name, in := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			if dnsGoldenCases[name] && !sdLinked("dns") {
				t.Skip("needs Prometheus's DNS discovery linked in (github.com/miekg/dns in go.mod)")
			}
			res, err := Generate(in)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			path := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, res.Config(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(res.Config(), want) {
				t.Errorf("config differs from %s (run with -update to accept):\n--- got\n%s", path, res.Config())
			}
			// The file on disk, not only the fresh output, must be something Prometheus loads.
			mustLoad(t, want)
		})
	}
}

// TestGoldenFilesHaveCases catches a golden file left behind by a removed or renamed case.
func TestGoldenFilesHaveCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := goldenCases()
	for _, f := range files {
		name := filepath.Base(f)
		name = name[:len(name)-len(".golden.yaml")]
		if _, ok := cases[name]; !ok {
			t.Errorf("%s has no golden case", f)
		}
	}
}
