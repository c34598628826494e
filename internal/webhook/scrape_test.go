package webhook

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type endpointOpt func(*monitoringv1.Endpoint)

func serviceMonitor(endpoints ...monitoringv1.Endpoint) *monitoringv1.ServiceMonitor {
	sm := &monitoringv1.ServiceMonitor{}
	sm.Name, sm.Namespace = "app", "default"
	sm.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	sm.Spec.Endpoints = endpoints
	return sm
}

func endpoint(port string, opts ...endpointOpt) monitoringv1.Endpoint {
	ep := monitoringv1.Endpoint{Port: port}
	for _, o := range opts {
		o(&ep)
	}
	return ep
}

func interval(d string) endpointOpt {
	return func(ep *monitoringv1.Endpoint) { ep.Interval = monitoringv1.Duration(d) }
}

func timeout(d string) endpointOpt {
	return func(ep *monitoringv1.Endpoint) { ep.ScrapeTimeout = monitoringv1.Duration(d) }
}

func relabelings(rcs ...monitoringv1.RelabelConfig) endpointOpt {
	return func(ep *monitoringv1.Endpoint) { ep.RelabelConfigs = rcs }
}

func metricRelabelings(rcs ...monitoringv1.RelabelConfig) endpointOpt {
	return func(ep *monitoringv1.Endpoint) { ep.MetricRelabelConfigs = rcs }
}

func secretRef(name, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func TestValidateServiceMonitor(t *testing.T) {
	for _, tc := range []struct {
		name string
		sm   *monitoringv1.ServiceMonitor
		want []string
	}{
		{
			name: "accepts a ServiceMonitor with durations, relabelings and a bearer token Secret",
			sm: serviceMonitor(endpoint("web", interval("30s"), timeout("10s"),
				relabelings(
					monitoringv1.RelabelConfig{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_name"}, TargetLabel: "pod"},
					monitoringv1.RelabelConfig{Action: "HashMod", SourceLabels: []monitoringv1.LabelName{"__address__"}, TargetLabel: "__tmp_hash", Modulus: 4},
					monitoringv1.RelabelConfig{Action: "labeldrop", Regex: "tmp_.*"},
				),
				metricRelabelings(monitoringv1.RelabelConfig{Action: "drop", SourceLabels: []monitoringv1.LabelName{"__name__"}, Regex: "go_.*"}),
				func(ep *monitoringv1.Endpoint) { ep.BearerTokenSecret = secretRef("token", "value") },
			)),
		},
		{
			name: "accepts a ServiceMonitor without endpoints",
			sm:   serviceMonitor(),
		},
		{
			name: "accepts a numeric targetPort instead of a port name",
			sm: serviceMonitor(endpoint("", func(ep *monitoringv1.Endpoint) {
				ep.TargetPort = ptrTo(intstr.FromInt(8080))
			})),
		},
		{
			name: "accepts CamelCase and lowercase actions alike",
			sm: serviceMonitor(endpoint("web", relabelings(
				monitoringv1.RelabelConfig{Action: "Keep", SourceLabels: []monitoringv1.LabelName{"a"}, Regex: "x"},
				monitoringv1.RelabelConfig{Action: "keep", SourceLabels: []monitoringv1.LabelName{"a"}, Regex: "x"},
				monitoringv1.RelabelConfig{Action: "LabelMap", Regex: "__meta_(.+)"},
				monitoringv1.RelabelConfig{Action: "KeepEqual", SourceLabels: []monitoringv1.LabelName{"a"}, TargetLabel: "b"},
			))),
		},
		{
			name: "rejects a relabeling regex that does not compile, naming the rule",
			sm: serviceMonitor(endpoint("web", relabelings(
				monitoringv1.RelabelConfig{SourceLabels: []monitoringv1.LabelName{"a"}, TargetLabel: "b"},
				monitoringv1.RelabelConfig{SourceLabels: []monitoringv1.LabelName{"a"}, Regex: "(unclosed", TargetLabel: "b"},
			))),
			want: []string{"spec.endpoints[0].relabelings[1].regex: Invalid value: \"(unclosed\": not a valid regular expression: missing closing ): `(unclosed`"},
		},
		{
			name: "rejects a metric relabeling regex that does not compile",
			sm:   serviceMonitor(endpoint("web", metricRelabelings(monitoringv1.RelabelConfig{Action: "drop", Regex: "a**"}))),
			want: []string{"spec.endpoints[0].metricRelabelings[0].regex: Invalid value: \"a**\": not a valid regular expression: invalid nested repetition operator"},
		},
		{
			name: "rejects an unknown relabel action",
			sm:   serviceMonitor(endpoint("web", relabelings(monitoringv1.RelabelConfig{Action: "rename"}))),
			want: []string{`spec.endpoints[0].relabelings[0].action: Unsupported value: "rename": supported values: "replace", "keep"`},
		},
		{
			name: "rejects replace without targetLabel",
			sm:   serviceMonitor(endpoint("web", relabelings(monitoringv1.RelabelConfig{SourceLabels: []monitoringv1.LabelName{"a"}}))),
			want: []string{"spec.endpoints[0].relabelings[0].targetLabel: Required value: the replace action writes its result to targetLabel"},
		},
		{
			name: "rejects hashmod without modulus or targetLabel",
			sm:   serviceMonitor(endpoint("web", relabelings(monitoringv1.RelabelConfig{Action: "HashMod", SourceLabels: []monitoringv1.LabelName{"a"}}))),
			want: []string{
				"spec.endpoints[0].relabelings[0].modulus: Required value: the hashmod action needs a modulus greater than 0",
				"spec.endpoints[0].relabelings[0].targetLabel: Required value: the hashmod action writes its result to targetLabel",
			},
		},
		{
			name: "rejects labeldrop with a targetLabel, as Prometheus does",
			sm:   serviceMonitor(endpoint("web", relabelings(monitoringv1.RelabelConfig{Action: "labeldrop", Regex: "x", TargetLabel: "y"}))),
			want: []string{`spec.endpoints[0].relabelings[0]: Invalid value: "labeldrop": labeldrop action requires only 'regex', and no other fields`},
		},
		{
			name: "admits an endpoint that names neither port nor targetPort (every port is scraped)",
			sm:   serviceMonitor(endpoint("web"), endpoint("")),
		},
		{
			name: "admits a port that is a regex of several port names, as the existing operator uses it",
			sm:   serviceMonitor(endpoint("http|metrics"), endpoint("Web_Port")),
		},
		{
			name: "rejects a port that does not compile as a regex",
			sm:   serviceMonitor(endpoint("web(")),
			want: []string{`spec.endpoints[0].port: Invalid value: "web(": not a valid port name pattern`},
		},
		{
			name: "rejects a targetPort out of range",
			sm: serviceMonitor(endpoint("", func(ep *monitoringv1.Endpoint) {
				ep.TargetPort = ptrTo(intstr.FromInt(70000))
			})),
			want: []string{"spec.endpoints[0].targetPort: Invalid value: 70000"},
		},
		{
			name: "rejects a scrapeTimeout longer than the interval",
			sm:   serviceMonitor(endpoint("web", interval("10s"), timeout("30s"))),
			want: []string{`spec.endpoints[0].scrapeTimeout: Invalid value: "30s": longer than the interval 10s`},
		},
		{
			name: "rejects an interval that is not a Prometheus duration",
			sm:   serviceMonitor(endpoint("web", interval("1 minute"))),
			want: []string{`spec.endpoints[0].interval: Invalid value: "1 minute": not a Prometheus duration`},
		},
		{
			name: "rejects a Secret key selector without a name",
			sm: serviceMonitor(endpoint("web", func(ep *monitoringv1.Endpoint) {
				ep.BasicAuth = &monitoringv1.BasicAuth{Username: *secretRef("auth", "user"), Password: *secretRef("", "password")}
			})),
			want: []string{"spec.endpoints[0].basicAuth.password.name: Required value: the name of the Secret"},
		},
		{
			name: "rejects a Secret key selector without a key",
			sm: serviceMonitor(endpoint("web", func(ep *monitoringv1.Endpoint) {
				ep.BearerTokenSecret = secretRef("token", "")
			})),
			want: []string{"spec.endpoints[0].bearerTokenSecret.key: Required value: the key in the Secret"},
		},
		{
			name: "rejects a TLS CA from a ConfigMap without a key",
			sm: serviceMonitor(endpoint("web", func(ep *monitoringv1.Endpoint) {
				ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{
					ConfigMap: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}},
				}}}
			})),
			want: []string{"spec.endpoints[0].tlsConfig.ca.configMap.key: Required value: the key in the ConfigMap"},
		},
		{
			name: "rejects two authentication methods on one endpoint",
			sm: serviceMonitor(endpoint("web", func(ep *monitoringv1.Endpoint) {
				ep.BearerTokenSecret = secretRef("token", "value")
				ep.BasicAuth = &monitoringv1.BasicAuth{Username: *secretRef("auth", "user"), Password: *secretRef("auth", "password")}
			})),
			want: []string{"spec.endpoints[0]: Invalid value: basicAuth and bearerTokenSecret cannot be configured at the same time"},
		},
		{
			name: "rejects an invalid label selector",
			sm: func() *monitoringv1.ServiceMonitor {
				sm := serviceMonitor(endpoint("web"))
				sm.Spec.Selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "In"}}}
				return sm
			}(),
			want: []string{"spec.selector.matchExpressions[0].values: Required value"},
		},
		{
			name: "rejects a namespace name that cannot exist",
			sm: func() *monitoringv1.ServiceMonitor {
				sm := serviceMonitor(endpoint("web"))
				sm.Spec.NamespaceSelector.MatchNames = []string{"Prod"}
				return sm
			}(),
			want: []string{`spec.namespaceSelector.matchNames[0]: Invalid value: "Prod": not a namespace name`},
		},
		{
			name: "rejects a negative sample limit and an unknown scrape protocol",
			sm: func() *monitoringv1.ServiceMonitor {
				sm := serviceMonitor(endpoint("web"))
				sm.Spec.SampleLimit = ptrTo[int64](-1)
				sm.Spec.ScrapeProtocols = []monitoringv1.ScrapeProtocol{"PrometheusProto", "JSON"}
				return sm
			}(),
			want: []string{
				"spec.sampleLimit: Invalid value: -1: must not be negative",
				`spec.scrapeProtocols[1]: Unsupported value: "JSON"`,
			},
		},
		{
			name: "rejects a body size limit that is no size",
			sm: func() *monitoringv1.ServiceMonitor {
				sm := serviceMonitor(endpoint("web"))
				sm.Spec.BodySizeLimit = ptrTo(monitoringv1.ByteSize("ten megs"))
				return sm
			}(),
			want: []string{`spec.bodySizeLimit: Invalid value: "ten megs"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateServiceMonitor(tc.sm), tc.want)
		})
	}
}

func TestServiceMonitorWarnings(t *testing.T) {
	sm := serviceMonitor(endpoint("web", func(ep *monitoringv1.Endpoint) { ep.BearerTokenFile = "/var/run/token" }))
	if w := serviceMonitorWarnings(sm); len(w) != 1 || w[0] != "spec.endpoints[0].bearerTokenFile is deprecated: use authorization" {
		t.Errorf("warnings = %q", w)
	}
}

func podMonitor(endpoints ...monitoringv1.PodMetricsEndpoint) *monitoringv1.PodMonitor {
	pm := &monitoringv1.PodMonitor{}
	pm.Name, pm.Namespace = "app", "default"
	pm.Spec.PodMetricsEndpoints = endpoints
	return pm
}

func TestValidatePodMonitor(t *testing.T) {
	for _, tc := range []struct {
		name string
		pm   *monitoringv1.PodMonitor
		want []string
	}{
		{
			name: "accepts an endpoint by port name, one by number and one without a port",
			pm: podMonitor(
				monitoringv1.PodMetricsEndpoint{Port: ptrTo("metrics"), Interval: "15s"},
				monitoringv1.PodMetricsEndpoint{PortNumber: ptrTo[int32](9100)},
				monitoringv1.PodMetricsEndpoint{},
			),
		},
		{
			name: "admits a container port name longer than 15 characters, as the existing operator does",
			pm:   podMonitor(monitoringv1.PodMetricsEndpoint{Port: ptrTo("a-very-long-port-name")}),
		},
		{
			name: "rejects a container port that does not compile as a regex",
			pm:   podMonitor(monitoringv1.PodMetricsEndpoint{Port: ptrTo("[metrics")}),
			want: []string{`spec.podMetricsEndpoints[0].port: Invalid value: "[metrics": not a valid port name pattern`},
		},
		{
			name: "rejects port number 0",
			pm:   podMonitor(monitoringv1.PodMetricsEndpoint{PortNumber: ptrTo[int32](0)}),
			want: []string{"spec.podMetricsEndpoints[0].portNumber: Invalid value: 0"},
		},
		{
			name: "rejects a relabeling regex that does not compile",
			pm: podMonitor(monitoringv1.PodMetricsEndpoint{Port: ptrTo("metrics"), RelabelConfigs: []monitoringv1.RelabelConfig{
				{Action: "keep", SourceLabels: []monitoringv1.LabelName{"a"}, Regex: "[z-a]"},
			}}),
			want: []string{"spec.podMetricsEndpoints[0].relabelings[0].regex: Invalid value: \"[z-a]\": not a valid regular expression: invalid character class range: `z-a`"},
		},
		{
			name: "rejects a scrapeTimeout longer than the interval",
			pm:   podMonitor(monitoringv1.PodMetricsEndpoint{Port: ptrTo("metrics"), Interval: "5s", ScrapeTimeout: "1m"}),
			want: []string{`spec.podMetricsEndpoints[0].scrapeTimeout: Invalid value: "1m": longer than the interval 5s`},
		},
		{
			name: "rejects an OAuth2 client secret without a Secret name",
			pm: podMonitor(monitoringv1.PodMetricsEndpoint{Port: ptrTo("metrics"), HTTPConfigWithProxy: monitoringv1.HTTPConfigWithProxy{
				HTTPConfig: monitoringv1.HTTPConfig{HTTPConfigWithoutTLS: monitoringv1.HTTPConfigWithoutTLS{OAuth2: &monitoringv1.OAuth2{
					ClientID:     monitoringv1.SecretOrConfigMap{Secret: secretRef("oauth", "id")},
					ClientSecret: corev1.SecretKeySelector{Key: "secret"},
					TokenURL:     "https://auth.example/token",
				}}},
			}}),
			want: []string{"spec.podMetricsEndpoints[0].oauth2.clientSecret.name: Required value: the name of the Secret"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePodMonitor(tc.pm), tc.want)
		})
	}
}

func TestPodMonitorWarnsAboutTargetPort(t *testing.T) {
	pm := podMonitor(monitoringv1.PodMetricsEndpoint{TargetPort: ptrTo(intstr.FromInt(8080))})
	if w := podMonitorWarnings(pm); len(w) != 1 || w[0] != "spec.podMetricsEndpoints[0].targetPort is deprecated: use port or portNumber" {
		t.Errorf("warnings = %q", w)
	}
}

func probe(mutate func(*monitoringv1.ProbeSpec)) *monitoringv1.Probe {
	p := &monitoringv1.Probe{}
	p.Name, p.Namespace = "site", "default"
	p.Spec.ProberSpec = monitoringv1.ProberSpec{URL: "blackbox:9115"}
	p.Spec.Targets.StaticConfig = &monitoringv1.ProbeTargetStaticConfig{Targets: []string{"https://example.com"}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func TestValidateProbe(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe *monitoringv1.Probe
		want  []string
	}{
		{
			name:  "accepts a Probe of static targets",
			probe: probe(func(s *monitoringv1.ProbeSpec) { s.Interval = "1m"; s.ScrapeTimeout = "10s" }),
		},
		{
			name:  "rejects a Probe without targets",
			probe: probe(func(s *monitoringv1.ProbeSpec) { s.Targets = monitoringv1.ProbeTargets{} }),
			want:  []string{"spec.targets: Required value: a Probe needs targets.staticConfig or targets.ingress"},
		},
		{
			name: "rejects an invalid static relabeling",
			probe: probe(func(s *monitoringv1.ProbeSpec) {
				s.Targets.StaticConfig.RelabelConfigs = []monitoringv1.RelabelConfig{{Action: "uppercase", SourceLabels: []monitoringv1.LabelName{"a"}}}
			}),
			want: []string{"spec.targets.staticConfig.relabelingConfigs[0].targetLabel: Required value: the uppercase action writes its result to targetLabel"},
		},
		{
			name:  "rejects a scrapeTimeout longer than the interval",
			probe: probe(func(s *monitoringv1.ProbeSpec) { s.Interval = "10s"; s.ScrapeTimeout = "11s" }),
			want:  []string{`spec.scrapeTimeout: Invalid value: "11s": longer than the interval 10s`},
		},
		{
			name: "rejects an empty static target",
			probe: probe(func(s *monitoringv1.ProbeSpec) {
				s.Targets.StaticConfig.Targets = append(s.Targets.StaticConfig.Targets, "")
			}),
			want: []string{"spec.targets.staticConfig.static[1]: Required value: an empty target"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateProbe(tc.probe), tc.want)
		})
	}
}

func scrapeConfig(mutate func(*monitoringv1alpha1.ScrapeConfigSpec)) *monitoringv1alpha1.ScrapeConfig {
	sc := &monitoringv1alpha1.ScrapeConfig{}
	sc.Name, sc.Namespace = "static", "default"
	sc.Spec.StaticConfigs = []monitoringv1alpha1.StaticConfig{{Targets: []monitoringv1alpha1.Target{"10.0.0.1:9100"}}}
	if mutate != nil {
		mutate(&sc.Spec)
	}
	return sc
}

func TestValidateScrapeConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		sc   *monitoringv1alpha1.ScrapeConfig
		want []string
	}{
		{
			name: "accepts static targets with an interval, a timeout and basic auth",
			sc: scrapeConfig(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.ScrapeInterval = ptrTo(monitoringv1.Duration("30s"))
				s.ScrapeTimeout = ptrTo(monitoringv1.Duration("10s"))
				s.BasicAuth = &monitoringv1.BasicAuth{Username: *secretRef("auth", "user"), Password: *secretRef("auth", "password")}
			}),
		},
		{
			name: "rejects a scrapeTimeout longer than the scrapeInterval",
			sc: scrapeConfig(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.ScrapeInterval = ptrTo(monitoringv1.Duration("10s"))
				s.ScrapeTimeout = ptrTo(monitoringv1.Duration("20s"))
			}),
			want: []string{`spec.scrapeTimeout: Invalid value: "20s": longer than the scrapeInterval 10s`},
		},
		{
			name: "rejects basic auth together with authorization",
			sc: scrapeConfig(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.BasicAuth = &monitoringv1.BasicAuth{Username: *secretRef("auth", "user"), Password: *secretRef("auth", "password")}
				s.Authorization = &monitoringv1.SafeAuthorization{Credentials: secretRef("auth", "token")}
			}),
			want: []string{"spec.authorization: Forbidden: at most one of basicAuth, authorization and oauth2; basicAuth and authorization are set"},
		},
		{
			name: "rejects a metric relabeling with an invalid regex",
			sc: scrapeConfig(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.MetricRelabelConfigs = []monitoringv1.RelabelConfig{{Action: "drop", Regex: "(?P<x"}}
			}),
			want: []string{"spec.metricRelabelings[0].regex: Invalid value: \"(?P<x\""},
		},
		{
			name: "rejects an incomplete Secret reference in a service discovery",
			sc: scrapeConfig(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.ConsulSDConfigs = []monitoringv1alpha1.ConsulSDConfig{{Server: "consul:8500", TokenRef: secretRef("consul", "")}}
			}),
			want: []string{"spec.consulSDConfigs[0].tokenRef.key: Required value"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateScrapeConfig(tc.sc), tc.want)
		})
	}
}
