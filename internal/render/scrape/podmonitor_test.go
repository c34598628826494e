package scrape

import (
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// relabelRuleOn finds the first relabel rule reading exactly sources, or nil.
func relabelRuleOn(rules []*relabelRule, sources ...string) *relabelRule {
	for _, r := range rules {
		if slices.Equal(r.SourceLabels, sources) {
			return r
		}
	}
	return nil
}

// relabelRuleSetting finds the first rule writing a fixed value into target, or nil.
func relabelRuleSetting(rules []*relabelRule, target string) *relabelRule {
	for _, r := range rules {
		if r.TargetLabel == target && len(r.SourceLabels) == 0 && r.Replacement != nil {
			return r
		}
	}
	return nil
}

func TestGeneratePodMonitorVerdicts(t *testing.T) {
	pm := func(opts ...pmOpt) []*monitoringv1.PodMonitor {
		return podMonitors(newPodMonitor("default", "app", opts...))
	}
	in := func(pms []*monitoringv1.PodMonitor) Input { return newMixedInput(newPrometheus(), nil, pms, nil) }
	creds := newSecret("default", "creds", map[string]string{"user": "alice", "password": "s3cret", "token": "t0ken"})

	runVerdictCases(t, []verdictCase{
		{
			name: "accepts a minimal PodMonitor and discovers Pods in its own namespace",
			in:   in(pm()),
			want: []wantVerdict{{kind: "PodMonitor", key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "podMonitor/default/app/0")
				sd := j.KubernetesSDConfigs[0]
				if sd.Role != "pod" || sd.Namespaces == nil || !slices.Equal(sd.Namespaces.Names, []string{"default"}) {
					t.Errorf("kubernetes_sd_configs = %+v", sd)
				}
				if r := relabelRuleOn(j.RelabelConfigs, "__meta_kubernetes_pod_container_port_name"); r == nil || *r.Regex != "metrics" || r.Action != "keep" {
					t.Errorf("port filter = %+v", r)
				}
				if r := relabelRuleSetting(j.RelabelConfigs, "job"); r == nil || *r.Replacement != "default/app" {
					t.Errorf("job rule = %+v", r)
				}
				if !slices.Equal(res.Namespaces, []string{"default"}) || res.AllNamespaces {
					t.Errorf("namespaces = %v, all = %v", res.Namespaces, res.AllNamespaces)
				}
			},
		},
		{
			name: "rejects a PodMonitor whose relabeling regex does not compile",
			in:   in(pm(withPodEndpoints(podEndpoint(podRelabelings(relabelCfg("keep", []string{"__address__"}, "", "(foo")))))),
			want: []wantVerdict{{
				kind:    "PodMonitor",
				key:     "default/app",
				reason:  ReasonInvalidRegex,
				message: `podMetricsEndpoints[0].relabelings[0].regex: error parsing regexp: missing closing ): "(foo"`,
			}},
		},
		{
			name: "rejects an unknown relabel action in a PodMonitor's metricRelabelings",
			in:   in(pm(withPodEndpoints(podEndpoint(), podEndpoint(podMetricRelabelings(relabelCfg("Explode", nil, "x", "")))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonUnknownRelabelAction, msgContains: []string{`podMetricsEndpoints[1].metricRelabelings[0].action: unknown relabel action "Explode"`}}},
		},
		{
			name: "rejects a PodMonitor whose basic auth Secret is missing",
			in: in(pm(withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
				ep.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("missing", "user"), Password: secretRef("missing", "password")}
			}))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonSecretNotFound, message: "podMetricsEndpoints[0].basicAuth.username: Secret default/missing not found"}},
		},
		{
			name: "rejects a PodMonitor whose authorization key is missing from its Secret",
			in: newMixedInput(newPrometheus(), nil, pm(withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
				ref := secretRef("creds", "nope")
				ep.Authorization = &monitoringv1.SafeAuthorization{Credentials: &ref}
			})))), nil, creds),
			want: []wantVerdict{{key: "default/app", reason: ReasonSecretKeyNotFound, message: `podMetricsEndpoints[0].authorization.credentials: key "nope" not found in Secret default/creds`}},
		},
		{
			name: "inlines a PodMonitor's credentials from Secrets in its own namespace",
			in: newMixedInput(newPrometheus(), nil, pm(withPodEndpoints(
				podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
					ep.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")}
				})),
				podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
					ref := secretRef("creds", "token")
					ep.BearerTokenSecret = &ref
				})),
			)), nil, creds),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				d := parse(t, res.Config())
				if ba := jobNamed(t, d, "podMonitor/default/app/0").BasicAuth; ba == nil || ba.Username != "alice" || ba.Password != "s3cret" {
					t.Errorf("basic_auth = %+v", ba)
				}
				if tok := jobNamed(t, d, "podMonitor/default/app/1").BearerToken; tok != "t0ken" {
					t.Errorf("bearer_token = %q", tok)
				}
			},
		},
		{
			name: "rejects two kinds of credentials on one PodMonitor endpoint",
			in: newMixedInput(newPrometheus(), nil, pm(withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
				ref := secretRef("creds", "token")
				ep.BearerTokenSecret = &ref
				ep.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")}
			})))), nil, creds),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{"podMetricsEndpoints[0]: basicAuth and bearerTokenSecret cannot be configured at the same time"}}},
		},
		{
			name: "rejects a PodMonitor whose TLS CA Secret is missing",
			in: in(pm(withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
				ref := secretRef("tls", "ca.crt")
				ep.TLSConfig = &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: &ref}}
			}))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonSecretNotFound, message: "podMetricsEndpoints[0].tlsConfig.ca.secret: Secret default/tls not found"}},
		},
		{
			name: "rejects a PodMonitor port that does not compile as a regex",
			in:   in(pm(withPodEndpoints(podEndpoint(podPort("metrics(("))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidPort, msgContains: []string{`podMetricsEndpoints[0].port: "metrics((" is not a valid port name pattern`}}},
		},
		{
			name: "accepts a PodMonitor port longer than an IANA service name, as the existing operator does",
			in:   in(pm(withPodEndpoints(podEndpoint(podPort("metrics-for-prometheus"))))),
			want: []wantVerdict{{key: "default/app"}},
		},
		{
			name: "rejects a PodMonitor portNumber outside 1-65535",
			in:   in(pm(withPodEndpoints(podEndpoint(podPortNumber(0))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidPort, message: "podMetricsEndpoints[0].portNumber: 0 is not a port number between 1 and 65535"}},
		},
		{
			name: "rejects a PodMonitor targetPort number outside 1-65535",
			in: in(pm(withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
				ep.Port = nil
				tp := intstr.FromInt32(70000)
				ep.TargetPort = &tp
			}))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidPort, message: "podMetricsEndpoints[0].targetPort: 70000 is not a port number between 1 and 65535"}},
		},
		{
			name: "filters on the container port number with portNumber or a numeric targetPort; only targetPort sets the endpoint label",
			in: in(pm(withPodEndpoints(
				podEndpoint(podPortNumber(9100)),
				podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
					ep.Port = nil
					tp := intstr.FromInt32(8080)
					ep.TargetPort = &tp
				})),
			))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				d := parse(t, res.Config())
				for job, port := range map[string]string{"podMonitor/default/app/0": "9100", "podMonitor/default/app/1": "8080"} {
					j := jobNamed(t, d, job)
					if r := relabelRuleOn(j.RelabelConfigs, "__meta_kubernetes_pod_container_port_number"); r == nil || *r.Regex != port {
						t.Errorf("%s: port filter = %+v, want %s", job, r, port)
					}
					r := relabelRuleSetting(j.RelabelConfigs, "endpoint")
					if job == "podMonitor/default/app/0" {
						// As with the existing operator: no endpoint label, so the series
						// keep their identity after a switch.
						if r != nil {
							t.Errorf("%s: portNumber sets the endpoint label: %+v", job, r)
						}
						continue
					}
					if r == nil || *r.Replacement != port {
						t.Errorf("%s: endpoint rule = %+v, want %s", job, r, port)
					}
				}
			},
		},
		{
			name: "prefers port over portNumber, as the API documents",
			in: in(pm(withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
				ep.PortNumber = ptr(int32(9100))
			}))))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "podMonitor/default/app/0")
				if relabelRuleOn(j.RelabelConfigs, "__meta_kubernetes_pod_container_port_number") != nil {
					t.Error("a portNumber filter was written next to the port filter")
				}
			},
		},
		{
			name: "accepts a PodMonitor endpoint without a port and scrapes every container port",
			in:   in(pm(withPodEndpoints(podEndpoint(podPort(""))))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "podMonitor/default/app/0")
				if relabelRuleOn(j.RelabelConfigs, "__meta_kubernetes_pod_container_port_name") != nil ||
					relabelRuleOn(j.RelabelConfigs, "__meta_kubernetes_pod_container_port_number") != nil {
					t.Error("a port filter was written")
				}
				if r := relabelRuleSetting(j.RelabelConfigs, "endpoint"); r != nil {
					t.Errorf("endpoint rule = %+v, want none", r)
				}
			},
		},
		{
			name: "rejects a PodMonitor scrape timeout longer than its interval",
			in: in(pm(withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
				ep.Interval = "10s"
				ep.ScrapeTimeout = "15s"
			}))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidDuration, message: "podMetricsEndpoints[0].scrapeTimeout: 15s is greater than the scrape interval 10s"}},
		},
		{
			name: "rejects a PodMonitor interval that is not a duration",
			in:   in(pm(withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) { ep.Interval = "often" }))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidDuration, msgContains: []string{`podMetricsEndpoints[0].interval: invalid duration "often"`}}},
		},
		{
			name: "rejects a PodMonitor naming a scrape class the Prometheus does not define",
			in:   in(pm(withPMSpec(func(s *monitoringv1.PodMonitorSpec) { s.ScrapeClassName = ptr("nope") }))),
			want: []wantVerdict{{key: "default/app", reason: ReasonScrapeClassNotFound, msgContains: []string{`no scrape class "nope"`}}},
		},
		{
			name: "rejects a PodMonitor whose selector the API machinery cannot parse",
			in: in(pm(withPMSpec(func(s *monitoringv1.PodMonitorSpec) {
				s.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists, Values: []string{"x"}}}
			}))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidSelector, msgContains: []string{"selector:"}}},
		},
		{
			name: "rejects a PodMonitor podTargetLabel that gives no valid label name",
			in: newMixedInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.NameValidationScheme = ptr(monitoringv1.LegacyNameValidationScheme)
			})), nil, pm(withPMSpec(func(s *monitoringv1.PodMonitorSpec) { s.PodTargetLabels = []string{"ok", "9lives"} })), nil),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{`podTargetLabels[1]: "9lives"`}}},
		},
		{
			name: "rejects a negative PodMonitor sample limit",
			in:   in(pm(withPMSpec(func(s *monitoringv1.PodMonitorSpec) { s.SampleLimit = ptr(int64(-1)) }))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, message: "sampleLimit: must not be negative, got -1"}},
		},
		{
			name: "names the PodMonitor endpoint whose job only Prometheus's loader refuses",
			in: in(pm(withPodEndpoints(
				podEndpoint(),
				podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
					ep.TLSConfig = &monitoringv1.SafeTLSConfig{MinVersion: ptr(monitoringv1.TLSVersion("TLS14"))}
				})),
			))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{"podMetricsEndpoints[1]: Prometheus refuses the generated job", "TLS14"}}},
		},
		{
			name: "keeps the other PodMonitors when one is rejected",
			in: in(podMonitors(
				newPodMonitor("team-b", "zeta"),
				newPodMonitor("team-a", "broken", withPodEndpoints(podEndpoint(podPortNumber(-1)))),
				newPodMonitor("team-a", "alpha"),
			)),
			want: []wantVerdict{{key: "team-a/alpha"}, {key: "team-a/broken", reason: ReasonInvalidPort}, {key: "team-b/zeta"}},
			check: func(t *testing.T, res *Result) {
				var names []string
				for _, j := range parse(t, res.Config()).ScrapeConfigs {
					names = append(names, j.JobName)
				}
				if want := []string{"podMonitor/team-a/alpha/0", "podMonitor/team-b/zeta/0"}; !slices.Equal(names, want) {
					t.Errorf("jobs = %v, want %v", names, want)
				}
				if !slices.Equal(res.Namespaces, []string{"team-a", "team-b"}) {
					t.Errorf("namespaces = %v", res.Namespaces)
				}
			},
		},
		{
			name: "rejects the second copy of a PodMonitor given twice",
			in:   in(podMonitors(newPodMonitor("default", "app"), newPodMonitor("default", "app"))),
			want: []wantVerdict{{key: "default/app"}, {key: "default/app", reason: ReasonDuplicate, message: "PodMonitor default/app was given more than once; only the first is used"}},
		},
		{
			name: "accepts a ServiceMonitor and a PodMonitor of the same name",
			in:   newMixedInput(newPrometheus(), monitors(newServiceMonitor("default", "app")), pm(), nil),
			want: []wantVerdict{{kind: "ServiceMonitor", key: "default/app"}, {kind: "PodMonitor", key: "default/app"}},
		},
		{
			name: "reports all namespaces when a PodMonitor uses namespaceSelector.any",
			in:   in(pm(withPMSpec(func(s *monitoringv1.PodMonitorSpec) { s.NamespaceSelector.Any = true }))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if !res.AllNamespaces || len(res.Namespaces) != 0 {
					t.Errorf("namespaces = %v, all = %v", res.Namespaces, res.AllNamespaces)
				}
			},
		},
		{
			name: "reports the namespaces a PodMonitor lists, and nothing for one without endpoints",
			in: in(podMonitors(
				newPodMonitor("apps", "listed", withPMSpec(func(s *monitoringv1.PodMonitorSpec) { s.NamespaceSelector.MatchNames = []string{"web", "db"} })),
				newPodMonitor("other", "empty", withPodEndpoints()),
			)),
			want: []wantVerdict{{key: "apps/listed"}, {key: "other/empty"}},
			check: func(t *testing.T, res *Result) {
				if !slices.Equal(res.Namespaces, []string{"db", "web"}) || res.AllNamespaces {
					t.Errorf("namespaces = %v, all = %v", res.Namespaces, res.AllNamespaces)
				}
			},
		},
		{
			name: "selects Pods in discovery with selectorMechanism RoleSelector",
			in: in(pm(withPMSpec(func(s *monitoringv1.PodMonitorSpec) {
				s.SelectorMechanism = ptr(monitoringv1.SelectorMechanismRole)
			}))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "podMonitor/default/app/0")
				if s := j.KubernetesSDConfigs[0].Selectors; len(s) != 1 || s[0].Role != "pod" || s[0].Label != "app=app" {
					t.Errorf("selectors = %+v", s)
				}
				if relabelRuleOn(j.RelabelConfigs, "__meta_kubernetes_pod_label_app", "__meta_kubernetes_pod_labelpresent_app") != nil {
					t.Error("a relabel selector rule was written as well")
				}
			},
		},
		{
			name: "applies the scrape class and attaches node metadata to a PodMonitor",
			in: newMixedInput(newPrometheus(withScrapeClass(monitoringv1.ScrapeClass{
				Name:              "mesh",
				Default:           ptr(true),
				TLSConfig:         &monitoringv1.TLSConfig{TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/mesh/ca.pem"}},
				MetricRelabelings: []monitoringv1.RelabelConfig{relabelCfg("labeldrop", nil, "", "mesh_.*")},
				AttachMetadata:    &monitoringv1.AttachMetadata{Node: ptr(true)},
			})), nil, pm(), nil),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "podMonitor/default/app/0")
				if j.TLSConfig == nil || j.TLSConfig.CAFile != "/etc/mesh/ca.pem" {
					t.Errorf("tls_config = %+v", j.TLSConfig)
				}
				if a := j.KubernetesSDConfigs[0].AttachMetadata; a == nil || !a.Node {
					t.Errorf("attach_metadata = %+v", a)
				}
				if len(j.MetricRelabelConfigs) != 1 || j.MetricRelabelConfigs[0].Action != "labeldrop" {
					t.Errorf("metric_relabel_configs = %+v", j.MetricRelabelConfigs)
				}
			},
		},
		{
			name: "leaves the enforced namespace label off PodMonitors excluded from enforcement",
			in: newMixedInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.EnforcedNamespaceLabel = "tenant"
				s.ExcludedFromEnforcement = []monitoringv1.ObjectReference{{Resource: "podmonitors", Namespace: "infra", Name: "app"}}
			})), nil, podMonitors(newPodMonitor("infra", "app"), newPodMonitor("team", "app")), nil),
			want: []wantVerdict{{key: "infra/app"}, {key: "team/app"}},
			check: func(t *testing.T, res *Result) {
				d := parse(t, res.Config())
				if j := jobNamed(t, d, "podMonitor/infra/app/0"); len(j.MetricRelabelConfigs) != 0 || relabelRuleSetting(j.RelabelConfigs, "tenant") != nil {
					t.Errorf("excluded PodMonitor got the enforced label")
				}
				j := jobNamed(t, d, "podMonitor/team/app/0")
				if r := relabelRuleSetting(j.RelabelConfigs, "tenant"); r == nil || *r.Replacement != "team" {
					t.Errorf("enforced relabel rule = %+v", r)
				}
				if len(j.MetricRelabelConfigs) != 1 || j.MetricRelabelConfigs[0].TargetLabel != "tenant" {
					t.Errorf("metric_relabel_configs = %+v", j.MetricRelabelConfigs)
				}
			},
		},
		{
			name: "caps PodMonitor limits by the Prometheus's enforced limits",
			in: newMixedInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.EnforcedSampleLimit = ptr(int64(1000))
				s.EnforcedBodySizeLimit = "10MiB"
			})), nil, pm(withPMSpec(func(s *monitoringv1.PodMonitorSpec) {
				s.SampleLimit = ptr(int64(5000))
				s.BodySizeLimit = ptr(monitoringv1.ByteSize("1GiB"))
				s.KeepDroppedTargets = ptr(int64(5))
			})), nil),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "podMonitor/default/app/0")
				if j.SampleLimit != 1000 || j.BodySizeLimit != "10MiB" || j.KeepDroppedTargets != 5 {
					t.Errorf("sample_limit %d body_size_limit %q keep_dropped_targets %d", j.SampleLimit, j.BodySizeLimit, j.KeepDroppedTargets)
				}
			},
		},
	})
}
