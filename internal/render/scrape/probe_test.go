package scrape

import (
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestGenerateProbeVerdicts(t *testing.T) {
	probe := func(opts ...probeOpt) []*monitoringv1.Probe { return probes(newProbe("default", "site", opts...)) }
	in := func(ps []*monitoringv1.Probe) Input { return newMixedInput(newPrometheus(), nil, nil, ps) }
	creds := newSecret("default", "creds", map[string]string{"user": "alice", "password": "s3cret", "token": "t0ken"})

	runVerdictCases(t, []verdictCase{
		{
			name: "accepts a Probe with static targets and scrapes the prober for each",
			in:   in(probe()),
			want: []wantVerdict{{kind: "Probe", key: "default/site"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "probe/default/site")
				if len(j.KubernetesSDConfigs) != 0 || len(j.StaticConfigs) != 1 || !slices.Equal(j.StaticConfigs[0].Targets, []string{"https://example.com"}) {
					t.Errorf("discovery: kubernetes %+v static %+v", j.KubernetesSDConfigs, j.StaticConfigs)
				}
				if j.StaticConfigs[0].Labels["namespace"] != "default" {
					t.Errorf("static labels = %v", j.StaticConfigs[0].Labels)
				}
				if j.MetricsPath != "/probe" || !slices.Equal(j.Params["module"], []string{"http_2xx"}) {
					t.Errorf("metrics_path %q params %v", j.MetricsPath, j.Params)
				}
				if r := relabelRuleSetting(j.RelabelConfigs, "__address__"); r == nil || *r.Replacement != "blackbox-exporter.monitoring.svc:9115" {
					t.Errorf("__address__ rule = %+v", r)
				}
				if relabelRuleOn(j.RelabelConfigs, "__address__") == nil || relabelRuleOn(j.RelabelConfigs, "__param_target") == nil {
					t.Errorf("target rules missing: %+v", j.RelabelConfigs)
				}
				// Static targets need no discovery, so nothing to grant.
				if len(res.Namespaces) != 0 || res.AllNamespaces {
					t.Errorf("namespaces = %v, all = %v", res.Namespaces, res.AllNamespaces)
				}
			},
		},
		{
			name: "rejects a Probe whose static relabeling regex does not compile",
			in:   in(probe(withStaticTargets([]string{"a.example.com"}, nil, relabelCfg("keep", []string{"__param_target"}, "", "(foo")))),
			want: []wantVerdict{{
				kind:    "Probe",
				key:     "default/site",
				reason:  ReasonInvalidRegex,
				message: `targets.staticConfig.relabelingConfigs[0].regex: error parsing regexp: missing closing ): "(foo"`,
			}},
		},
		{
			name: "rejects a Probe whose ingress relabeling lacks a target label",
			in: in(probe(withIngressTargets(monitoringv1.ProbeTargetIngress{
				RelabelConfigs: []monitoringv1.RelabelConfig{relabelCfg("replace", []string{"__address__"}, "", "")},
			}))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidRelabelConfig, msgContains: []string{"targets.ingress.relabelingConfigs[0]: relabel configuration for replace action requires 'target_label' value"}}},
		},
		{
			name: "rejects an unknown relabel action in a Probe's metricRelabelings",
			in: in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.MetricRelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("Explode", nil, "x", "")}
			}))),
			want: []wantVerdict{{key: "default/site", reason: ReasonUnknownRelabelAction, msgContains: []string{`metricRelabelings[0].action: unknown relabel action "Explode"`}}},
		},
		{
			name: "rejects a Probe whose basic auth Secret is missing",
			in: in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("missing", "user"), Password: secretRef("missing", "password")}
			}))),
			want: []wantVerdict{{key: "default/site", reason: ReasonSecretNotFound, message: "basicAuth.username: Secret default/missing not found"}},
		},
		{
			name: "rejects a Probe whose authorization key is missing from its Secret",
			in: newMixedInput(newPrometheus(), nil, nil, probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				ref := secretRef("creds", "nope")
				s.Authorization = &monitoringv1.SafeAuthorization{Credentials: &ref}
			})), creds),
			want: []wantVerdict{{key: "default/site", reason: ReasonSecretKeyNotFound, message: `authorization.credentials: key "nope" not found in Secret default/creds`}},
		},
		{
			name: "looks a Probe's Secrets up in its own namespace",
			in: newMixedInput(newPrometheus(), nil, nil, probes(newProbe("other", "site", withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				ref := secretRef("creds", "token")
				s.BearerTokenSecret = &ref
			}))), creds),
			want: []wantVerdict{{key: "other/site", reason: ReasonSecretNotFound, message: "bearerTokenSecret: Secret other/creds not found"}},
		},
		{
			name: "inlines a Probe's authorization from its Secret",
			in: newMixedInput(newPrometheus(), nil, nil, probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				ref := secretRef("creds", "token")
				s.Authorization = &monitoringv1.SafeAuthorization{Type: "Token", Credentials: &ref}
			})), creds),
			want: []wantVerdict{{key: "default/site"}},
			check: func(t *testing.T, res *Result) {
				if a := jobNamed(t, parse(t, res.Config()), "probe/default/site").Authorization; a == nil || a.Type != "Token" || a.Credentials != "t0ken" {
					t.Errorf("authorization = %+v", a)
				}
			},
		},
		{
			name: "rejects a Probe with both authorization and basic auth",
			in: newMixedInput(newPrometheus(), nil, nil, probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				ref := secretRef("creds", "token")
				s.Authorization = &monitoringv1.SafeAuthorization{Credentials: &ref}
				s.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")}
			})), creds),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, message: "authorization and basicAuth cannot be configured at the same time"}},
		},
		{
			name: "rejects a Probe whose client certificate Secret is missing",
			in: in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				ref := secretRef("tls", "tls.key")
				s.TLSConfig = &monitoringv1.SafeTLSConfig{KeySecret: &ref, Cert: monitoringv1.SecretOrConfigMap{Secret: &ref}}
			}))),
			want: []wantVerdict{{key: "default/site", reason: ReasonSecretNotFound, message: "tlsConfig.cert.secret: Secret default/tls not found"}},
		},
		{
			name: "rejects a Probe without targets",
			in:   in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) { s.Targets = monitoringv1.ProbeTargets{} }))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, message: "targets: one of staticConfig and ingress is required"}},
		},
		{
			name: "rejects an empty static target",
			in:   in(probe(withStaticTargets([]string{"a.example.com", " "}, nil))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, message: "targets.staticConfig.static[1]: the target is empty"}},
		},
		{
			name: "rejects a static label name Prometheus's legacy name validation refuses",
			in: newMixedInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.NameValidationScheme = ptr(monitoringv1.LegacyNameValidationScheme)
			})), nil, nil, probe(withStaticTargets([]string{"a.example.com"}, map[string]string{"team-name": "x"}))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, message: `targets.staticConfig.labels: "team-name" is not a valid label name`}},
		},
		{
			name: "rejects a Probe without a prober address",
			in:   in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) { s.ProberSpec.URL = "" }))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, message: "prober.url: the prober's address is required"}},
		},
		{
			name: "rejects a prober address with a scheme",
			in:   in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) { s.ProberSpec.URL = "http://blackbox:9115" }))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, msgContains: []string{`prober.url: "http://blackbox:9115" must be host:port without a scheme`}}},
		},
		{
			name: "rejects a prober address with a path",
			in:   in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) { s.ProberSpec.URL = "blackbox:9115/probe" }))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, msgContains: []string{"must be host:port without a path; set prober.path instead"}}},
		},
		{
			name: "rejects a prober scheme that is neither HTTP nor HTTPS",
			in:   in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) { s.ProberSpec.Scheme = ptr(monitoringv1.Scheme("ftp")) }))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, message: `prober.scheme: "ftp" is neither HTTP nor HTTPS`}},
		},
		{
			name: "rejects a Probe interval that is not a duration",
			in:   in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) { s.Interval = "30 seconds" }))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidDuration, msgContains: []string{`interval: invalid duration "30 seconds"`}}},
		},
		{
			name: "rejects a Probe scrape timeout longer than the Prometheus's scrape interval",
			in:   in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) { s.ScrapeTimeout = "1m" }))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidDuration, message: "scrapeTimeout: 1m is greater than the scrape interval 30s"}},
		},
		{
			name: "rejects a Probe parameter given twice",
			in: in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.Params = []monitoringv1.ProbeParam{{Name: "a", Values: []string{"1"}}, {Name: "a", Values: []string{"2"}}}
			}))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, message: `params[1].name: parameter "a" is given more than once`}},
		},
		{
			name: "prefers spec.module over a module parameter, as the API documents",
			in: in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.Params = []monitoringv1.ProbeParam{{Name: "module", Values: []string{"tcp_connect"}}, {Name: "debug", Values: []string{"true"}}}
			}))),
			want: []wantVerdict{{key: "default/site"}},
			check: func(t *testing.T, res *Result) {
				p := jobNamed(t, parse(t, res.Config()), "probe/default/site").Params
				if !slices.Equal(p["module"], []string{"http_2xx"}) || !slices.Equal(p["debug"], []string{"true"}) {
					t.Errorf("params = %v", p)
				}
			},
		},
		{
			name: "rejects a Probe naming a scrape class the Prometheus does not define",
			in:   in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) { s.ScrapeClassName = ptr("nope") }))),
			want: []wantVerdict{{key: "default/site", reason: ReasonScrapeClassNotFound, msgContains: []string{`no scrape class "nope"`}}},
		},
		{
			name: "rejects a Probe whose ingress selector the API machinery cannot parse",
			in: in(probe(withIngressTargets(monitoringv1.ProbeTargetIngress{Selector: metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}},
			}}))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidSelector, msgContains: []string{"targets.ingress.selector:"}}},
		},
		{
			name: "rejects an empty namespace in a Probe's ingress matchNames",
			in: in(probe(withIngressTargets(monitoringv1.ProbeTargetIngress{
				NamespaceSelector: monitoringv1.NamespaceSelector{MatchNames: []string{""}},
			}))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, msgContains: []string{"targets.ingress.namespaceSelector.matchNames[0]"}}},
		},
		{
			name: "rejects with the loader's message what only Prometheus's loader catches in a Probe",
			in: in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.ScrapeProtocols = []monitoringv1.ScrapeProtocol{monitoringv1.PrometheusProto, monitoringv1.PrometheusProto}
			}))),
			want: []wantVerdict{{key: "default/site", reason: ReasonInvalidConfig, msgContains: []string{"Prometheus refuses the generated job:", "duplicated protocol"}}},
		},
		{
			name: "rejects the second copy of a Probe given twice",
			in:   in(probes(newProbe("default", "site"), newProbe("default", "site"))),
			want: []wantVerdict{{key: "default/site"}, {key: "default/site", reason: ReasonDuplicate, message: "Probe default/site was given more than once; only the first is used"}},
		},
		{
			name: "uses staticConfig when both static and ingress targets are set, as the API documents",
			in: in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.Targets.Ingress = &monitoringv1.ProbeTargetIngress{NamespaceSelector: monitoringv1.NamespaceSelector{Any: true}}
			}))),
			want: []wantVerdict{{key: "default/site"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "probe/default/site")
				if len(j.KubernetesSDConfigs) != 0 || len(j.StaticConfigs) != 1 || res.AllNamespaces {
					t.Errorf("kubernetes %+v static %+v all namespaces %v", j.KubernetesSDConfigs, j.StaticConfigs, res.AllNamespaces)
				}
			},
		},
		{
			name: "discovers Ingresses and reports their namespaces for RBAC",
			in: in(probes(
				newProbe("apps", "own", withIngressTargets(monitoringv1.ProbeTargetIngress{})),
				newProbe("apps", "listed", withIngressTargets(monitoringv1.ProbeTargetIngress{NamespaceSelector: monitoringv1.NamespaceSelector{MatchNames: []string{"web"}}})),
			)),
			want: []wantVerdict{{key: "apps/listed"}, {key: "apps/own"}},
			check: func(t *testing.T, res *Result) {
				if !slices.Equal(res.Namespaces, []string{"apps", "web"}) || res.AllNamespaces {
					t.Errorf("namespaces = %v, all = %v", res.Namespaces, res.AllNamespaces)
				}
				sd := jobNamed(t, parse(t, res.Config()), "probe/apps/own").KubernetesSDConfigs
				if len(sd) != 1 || sd[0].Role != "ingress" || !slices.Equal(sd[0].Namespaces.Names, []string{"apps"}) {
					t.Errorf("kubernetes_sd_configs = %+v", sd)
				}
			},
		},
		{
			name: "reports all namespaces when a Probe's ingress uses namespaceSelector.any",
			in:   in(probe(withIngressTargets(monitoringv1.ProbeTargetIngress{NamespaceSelector: monitoringv1.NamespaceSelector{Any: true}}))),
			want: []wantVerdict{{key: "default/site"}},
			check: func(t *testing.T, res *Result) {
				if !res.AllNamespaces {
					t.Errorf("namespaces = %v, all = %v", res.Namespaces, res.AllNamespaces)
				}
			},
		},
		{
			name: "sets the job label from jobName and shards on the probed target",
			in: newMixedInput(newPrometheus(withShards(4)), nil, nil, probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.JobName = "blackbox"
			}))),
			want: []wantVerdict{{key: "default/site"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "probe/default/site")
				if r := relabelRuleSetting(j.RelabelConfigs, "job"); r == nil || *r.Replacement != "blackbox" {
					t.Errorf("job rule = %+v", r)
				}
				if r := relabelRuleOn(j.RelabelConfigs, "__param_target", "__tmp_hash"); r == nil || r.TargetLabel != "__tmp_hash" {
					t.Errorf("sharding does not hash __param_target: %+v", j.RelabelConfigs)
				}
				if r := relabelRuleOn(j.RelabelConfigs, "__address__", "__tmp_hash"); r != nil {
					t.Errorf("sharding hashes __address__, which is the prober's for every target")
				}
				if r := relabelRuleOn(j.RelabelConfigs, "__tmp_hash"); r == nil || r.Modulus != 4 {
					t.Errorf("hashmod rule = %+v", r)
				}
			},
		},
		{
			name: "writes the prober's scheme, path and proxy",
			in: in(probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.ProberSpec.Scheme = ptr(monitoringv1.SchemeHTTPS)
				s.ProberSpec.Path = "/custom"
				s.ProberSpec.ProxyURL = ptr("http://proxy.internal:3128")
			}))),
			want: []wantVerdict{{key: "default/site"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "probe/default/site")
				if j.Scheme != "https" || j.MetricsPath != "/custom" || j.Proxy.ProxyURL != "http://proxy.internal:3128" {
					t.Errorf("scheme %q metrics_path %q proxy_url %q", j.Scheme, j.MetricsPath, j.Proxy.ProxyURL)
				}
			},
		},
		{
			name: "keeps a namespace label the Probe sets on its static targets",
			in:   in(probe(withStaticTargets([]string{"a.example.com"}, map[string]string{"namespace": "shared"}))),
			want: []wantVerdict{{key: "default/site"}},
			check: func(t *testing.T, res *Result) {
				if l := jobNamed(t, parse(t, res.Config()), "probe/default/site").StaticConfigs[0].Labels; l["namespace"] != "shared" {
					t.Errorf("static labels = %v", l)
				}
			},
		},
		{
			name: "applies the enforced namespace label, scrape class and limits to a Probe",
			in: newMixedInput(newPrometheus(
				withPromSpec(func(s *monitoringv1.PrometheusSpec) {
					s.EnforcedNamespaceLabel = "tenant"
					s.EnforcedSampleLimit = ptr(int64(100))
					s.EnforcedBodySizeLimit = "1MiB"
				}),
				withScrapeClass(monitoringv1.ScrapeClass{
					Name:              "probes",
					Relabelings:       []monitoringv1.RelabelConfig{relabelCfg("labeldrop", nil, "", "probe_.*")},
					MetricRelabelings: []monitoringv1.RelabelConfig{relabelCfg("labeldrop", nil, "", "class_.*")},
				}),
			), nil, nil, probe(withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.ScrapeClassName = ptr("probes")
				s.SampleLimit = ptr(int64(500))
				s.MetricRelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("labeldrop", nil, "", "own_.*")}
			}))),
			want: []wantVerdict{{key: "default/site"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "probe/default/site")
				if j.SampleLimit != 100 || j.BodySizeLimit != "1MiB" {
					t.Errorf("sample_limit %d body_size_limit %q", j.SampleLimit, j.BodySizeLimit)
				}
				// The scrape class's, then the Probe's own, then the enforced namespace label.
				m := j.MetricRelabelConfigs
				if len(m) != 3 || *m[0].Regex != "class_.*" || *m[1].Regex != "own_.*" || m[2].TargetLabel != "tenant" || *m[2].Replacement != "default" {
					t.Errorf("metric_relabel_configs = %+v", m)
				}
				if !slices.ContainsFunc(j.RelabelConfigs, func(r *relabelRule) bool { return r.Action == "labeldrop" && *r.Regex == "probe_.*" }) {
					t.Errorf("scrape class relabeling missing: %+v", j.RelabelConfigs)
				}
				if r := relabelRuleSetting(j.RelabelConfigs, "tenant"); r == nil || *r.Replacement != "default" {
					t.Errorf("enforced relabel rule = %+v", r)
				}
			},
		},
		{
			name: "leaves the enforced namespace label off Probes excluded from enforcement",
			in: newMixedInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.EnforcedNamespaceLabel = "tenant"
				s.ExcludedFromEnforcement = []monitoringv1.ObjectReference{{Resource: "probes", Namespace: "default"}}
			})), nil, nil, probe()),
			want: []wantVerdict{{key: "default/site"}},
			check: func(t *testing.T, res *Result) {
				if j := jobNamed(t, parse(t, res.Config()), "probe/default/site"); len(j.MetricRelabelConfigs) != 0 {
					t.Errorf("metric_relabel_configs = %+v", j.MetricRelabelConfigs)
				}
			},
		},
	})
}

func TestGenerateOrdersKinds(t *testing.T) {
	runVerdictCases(t, []verdictCase{{
		name: "orders verdicts and jobs by kind, then namespace/name, and rejects each kind alone",
		in: newMixedInput(newPrometheus(),
			monitors(newServiceMonitor("b", "sm"), newServiceMonitor("a", "sm", withEndpoints(endpoint(port("bad(port"))))),
			podMonitors(newPodMonitor("b", "pm"), newPodMonitor("a", "pm", withPodEndpoints(podEndpoint(podPortNumber(0))))),
			probes(newProbe("b", "probe"), newProbe("a", "probe", withProbeSpec(func(s *monitoringv1.ProbeSpec) { s.ProberSpec.URL = "" }))),
		),
		want: []wantVerdict{
			{kind: "ServiceMonitor", key: "a/sm", reason: ReasonInvalidPort},
			{kind: "ServiceMonitor", key: "b/sm"},
			{kind: "PodMonitor", key: "a/pm", reason: ReasonInvalidPort},
			{kind: "PodMonitor", key: "b/pm"},
			{kind: "Probe", key: "a/probe", reason: ReasonInvalidConfig},
			{kind: "Probe", key: "b/probe"},
		},
		check: func(t *testing.T, res *Result) {
			var names []string
			for _, j := range parse(t, res.Config()).ScrapeConfigs {
				names = append(names, j.JobName)
			}
			if want := []string{"serviceMonitor/b/sm/0", "podMonitor/b/pm/0", "probe/b/probe"}; !slices.Equal(names, want) {
				t.Errorf("jobs = %v, want %v", names, want)
			}
		},
	}})
}
