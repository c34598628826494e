package scrape

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// wantVerdict is what a test expects of one monitor's verdict.
type wantVerdict struct {
	kind        string // checked when set
	key         string // namespace/name
	reason      string // "" when accepted
	message     string // exact message, when set
	msgContains []string
}

// verdictCase is one table case: the verdicts Generate must give for in, and anything else
// check wants to see in the result. Every case's config must load in Prometheus.
type verdictCase struct {
	name  string
	in    Input
	want  []wantVerdict
	check func(t *testing.T, res *Result)
}

func runVerdictCases(t *testing.T, tests []verdictCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Generate(tc.in)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			mustLoad(t, res.Config())
			if len(res.Verdicts) != len(tc.want) {
				t.Fatalf("got %d verdicts, want %d: %+v", len(res.Verdicts), len(tc.want), res.Verdicts)
			}
			for i, w := range tc.want {
				v := res.Verdicts[i]
				if got := v.Namespace + "/" + v.Name; got != w.key {
					t.Errorf("verdict %d is for %s, want %s", i, got, w.key)
				}
				if w.kind != "" && v.Kind != w.kind {
					t.Errorf("verdict %d is for a %s, want a %s", i, v.Kind, w.kind)
				}
				if v.Accepted != (w.reason == "") || v.Reason != w.reason {
					t.Errorf("%s: accepted=%v reason=%q, want reason %q (message %q)", w.key, v.Accepted, v.Reason, w.reason, v.Message)
				}
				if w.message != "" && v.Message != w.message {
					t.Errorf("%s: message\n got %s\nwant %s", w.key, v.Message, w.message)
				}
				for _, s := range w.msgContains {
					if !strings.Contains(v.Message, s) {
						t.Errorf("%s: message %q does not contain %q", w.key, v.Message, s)
					}
				}
				if !v.Accepted && v.Message == "" {
					t.Errorf("%s: rejected without a message", w.key)
				}
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

func TestGenerateVerdicts(t *testing.T) {
	bad := func(rcs ...monitoringv1.RelabelConfig) smOpt { return withEndpoints(endpoint(relabelings(rcs...))) }
	creds := newSecret("default", "creds", map[string]string{"user": "alice", "password": "s3cret", "token": "t0ken"})

	tests := []verdictCase{
		{
			name: "accepts a minimal ServiceMonitor",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app"))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				jobNamed(t, parse(t, res.Config()), "serviceMonitor/default/app/0")
			},
		},
		{
			name: "rejects a ServiceMonitor whose relabeling regex does not compile",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", bad(
				relabelCfg("replace", []string{"__address__"}, "x", ""),
				relabelCfg("keep", []string{"__address__"}, "", "(foo"),
			)))),
			want: []wantVerdict{{
				key:     "default/app",
				reason:  ReasonInvalidRegex,
				message: `endpoints[0].relabelings[1].regex: error parsing regexp: missing closing ): "(foo"`,
			}},
		},
		{
			name: "keeps the other monitors when one has an invalid regex",
			in: newInput(newPrometheus(), monitors(
				newServiceMonitor("team-b", "zeta"),
				newServiceMonitor("team-a", "broken", withEndpoints(endpoint(metricRelabelings(relabelCfg("drop", []string{"__name__"}, "", "go_(.*"))))),
				newServiceMonitor("team-a", "alpha"),
			)),
			want: []wantVerdict{
				{key: "team-a/alpha"},
				{key: "team-a/broken", reason: ReasonInvalidRegex, msgContains: []string{"endpoints[0].metricRelabelings[0].regex"}},
				{key: "team-b/zeta"},
			},
			check: func(t *testing.T, res *Result) {
				d := parse(t, res.Config())
				var names []string
				for _, j := range d.ScrapeConfigs {
					names = append(names, j.JobName)
				}
				want := []string{"serviceMonitor/team-a/alpha/0", "serviceMonitor/team-b/zeta/0"}
				if !slices.Equal(names, want) {
					t.Errorf("jobs = %v, want %v", names, want)
				}
				if !slices.Equal(res.Namespaces, []string{"team-a", "team-b"}) {
					t.Errorf("namespaces = %v", res.Namespaces)
				}
			},
		},
		{
			name: "rejects an unknown relabel action",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", bad(relabelCfg("Explode", nil, "x", ""))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonUnknownRelabelAction, msgContains: []string{`endpoints[0].relabelings[0].action: unknown relabel action "Explode"`, "labelkeep"}}},
		},
		{
			name: "accepts the CRD's CamelCase relabel actions and writes them lowercase",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", bad(
				relabelCfg("LabelDrop", nil, "", "pod_template_hash"),
				relabelCfg("KeepEqual", []string{"__meta_kubernetes_pod_container_port_number"}, "__meta_kubernetes_pod_annotation_port", ""),
				func() monitoringv1.RelabelConfig {
					rc := relabelCfg("HashMod", []string{"__address__"}, "__tmp_mine", "")
					rc.Modulus = 4
					return rc
				}(),
			)))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "serviceMonitor/default/app/0")
				var got []string
				for _, r := range j.RelabelConfigs {
					if r.Action == "labeldrop" || r.Action == "keepequal" || (r.Action == "hashmod" && r.TargetLabel == "__tmp_mine") {
						got = append(got, r.Action)
					}
				}
				if !slices.Equal(got, []string{"labeldrop", "keepequal", "hashmod"}) {
					t.Errorf("user actions written as %v", got)
				}
			},
		},
		{
			name: "rejects a hashmod rule without a modulus",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", bad(relabelCfg("HashMod", []string{"__address__"}, "__tmp_mine", ""))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRelabelConfig, msgContains: []string{"endpoints[0].relabelings[0]", "non-zero modulus"}}},
		},
		{
			name: "rejects a replace rule without a target label",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", bad(relabelCfg("replace", []string{"a"}, "", ""))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRelabelConfig, msgContains: []string{"endpoints[0].relabelings[0]: relabel configuration for replace action requires 'target_label' value"}}},
		},
		{
			name: "rejects a keepequal rule that also sets a regex",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", bad(relabelCfg("keepequal", []string{"a"}, "b", "x"))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRelabelConfig, msgContains: []string{"keepequal action requires only 'source_labels' and `target_label`"}}},
		},
		{
			name: "rejects a relabeling with an empty source label",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", bad(relabelCfg("replace", []string{"a", ""}, "b", ""))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRelabelConfig, message: `endpoints[0].relabelings[0].sourceLabels[1]: "" is not a valid label name`}},
		},
		{
			name: "rejects a target label Prometheus's legacy name validation refuses",
			in: newInput(
				newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
					s.NameValidationScheme = ptr(monitoringv1.LegacyNameValidationScheme)
				})),
				monitors(newServiceMonitor("default", "app", bad(relabelCfg("replace", []string{"a"}, "team.name", "")))),
			),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidRelabelConfig, msgContains: []string{`"team.name" is invalid 'target_label'`}}},
		},
		{
			name: "rejects a ServiceMonitor whose password Secret is missing",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(basicAuthFrom("missing", "user", "password")))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonSecretNotFound, message: "endpoints[0].basicAuth.username: Secret default/missing not found"}},
		},
		{
			name: "rejects a ServiceMonitor whose password key is missing from its Secret",
			in: newInput(newPrometheus(),
				monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(basicAuthFrom("creds", "user", "pass"))))),
				creds),
			want: []wantVerdict{{key: "default/app", reason: ReasonSecretKeyNotFound, message: `endpoints[0].basicAuth.password: key "pass" not found in Secret default/creds`}},
		},
		{
			name: "looks Secrets up in the monitor's own namespace",
			in: newInput(newPrometheus(),
				monitors(newServiceMonitor("other", "app", withEndpoints(endpoint(authorizationFrom("", "creds", "token"))))),
				creds),
			want: []wantVerdict{{key: "other/app", reason: ReasonSecretNotFound, msgContains: []string{"endpoints[0].authorization.credentials: Secret other/creds not found"}}},
		},
		{
			name: "accepts an optional Secret that does not exist",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ref := secretRef("missing", "token")
				ref.Optional = ptr(true)
				ep.BearerTokenSecret = &ref
			})))))),
			want: []wantVerdict{{key: "default/app"}},
		},
		{
			name: "inlines credentials from Secrets",
			in: newInput(newPrometheus(), monitors(
				newServiceMonitor("default", "basic", withEndpoints(endpoint(basicAuthFrom("creds", "user", "password")))),
				newServiceMonitor("default", "bearer", withEndpoints(endpoint(authorizationFrom("", "creds", "token")))),
			), creds),
			want: []wantVerdict{{key: "default/basic"}, {key: "default/bearer"}},
			check: func(t *testing.T, res *Result) {
				d := parse(t, res.Config())
				if ba := jobNamed(t, d, "serviceMonitor/default/basic/0").BasicAuth; ba == nil || ba.Username != "alice" || ba.Password != "s3cret" {
					t.Errorf("basic_auth = %+v", ba)
				}
				if a := jobNamed(t, d, "serviceMonitor/default/bearer/0").Authorization; a == nil || a.Type != "Bearer" || a.Credentials != "t0ken" {
					t.Errorf("authorization = %+v", a)
				}
			},
		},
		{
			name: "scrapes every port, with no endpoint label, when an endpoint names neither port nor targetPort (as the existing operator does)",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(port("")))))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "serviceMonitor/default/app/0")
				for _, r := range j.RelabelConfigs {
					for _, l := range r.SourceLabels {
						if strings.Contains(l, "port_name") || strings.Contains(l, "port_number") {
							t.Errorf("a port filter on %s: %+v", l, r)
						}
					}
					if r.TargetLabel == "endpoint" {
						t.Errorf("an endpoint label: %+v", r)
					}
				}
			},
		},
		{
			name: "rejects a targetPort number outside 1-65535",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(), endpoint(targetPortNumber(70000)))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidPort, message: "endpoints[1].targetPort: 70000 is not a port number between 1 and 65535"}},
		},
		{
			name: "accepts a port that is a regex of several Service port names, as the existing operator matches it",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(port("http|metrics")))))),
			want: []wantVerdict{{key: "default/app"}},
		},
		{
			name: "rejects a targetPort name that does not compile as a regex",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(targetPortName("metrics(")))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidPort, msgContains: []string{`endpoints[0].targetPort: "metrics(" is not a valid port name pattern`, "missing closing )"}}},
		},
		{
			name: "rejects a port that does not compile as a regex",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(port("web[")))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidPort, msgContains: []string{`endpoints[0].port: "web[" is not a valid port name pattern`}}},
		},
		{
			name: "accepts a Service port name longer than an IANA service name",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(port("http-metrics-extended")))))),
			want: []wantVerdict{{key: "default/app"}},
		},
		{
			name: "rejects an interval that is not a duration",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(interval("30 seconds")))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidDuration, msgContains: []string{`endpoints[0].interval: invalid duration "30 seconds"`}}},
		},
		{
			name: "rejects a scrape timeout longer than the scrape interval",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(interval("10s"), scrapeTimeout("15s")))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidDuration, message: "endpoints[0].scrapeTimeout: 15s is greater than the scrape interval 10s"}},
		},
		{
			name: "rejects a ServiceMonitor whose TLS CA Secret is missing",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ref := secretRef("tls", "ca.crt")
				ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: &ref}}}
			})))))),
			want: []wantVerdict{{key: "default/app", reason: ReasonSecretNotFound, message: "endpoints[0].tlsConfig.ca.secret: Secret default/tls not found"}},
		},
		{
			name: "rejects a ServiceMonitor whose OAuth2 client ID ConfigMap is missing",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.OAuth2 = &monitoringv1.OAuth2{
					ClientID:     monitoringv1.SecretOrConfigMap{ConfigMap: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "oauth"}, Key: "id"}},
					ClientSecret: secretRef("creds", "password"),
					TokenURL:     "https://auth.example.com/token",
				}
			}))))), creds),
			want: []wantVerdict{{key: "default/app", reason: ReasonConfigMapNotFound, message: "endpoints[0].oauth2.clientId.configMap: ConfigMap default/oauth not found"}},
		},
		{
			name: "renders OAuth2 with credentials from Secrets",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				id := secretRef("creds", "user")
				ep.OAuth2 = &monitoringv1.OAuth2{
					ClientID:     monitoringv1.SecretOrConfigMap{Secret: &id},
					ClientSecret: secretRef("creds", "password"),
					TokenURL:     "https://auth.example.com/token",
					Scopes:       []string{"metrics"},
				}
			}))))), creds),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				o := jobNamed(t, parse(t, res.Config()), "serviceMonitor/default/app/0").OAuth2
				if o == nil || o.ClientID != "alice" || o.ClientSecret != "s3cret" || o.TokenURL != "https://auth.example.com/token" {
					t.Errorf("oauth2 = %+v", o)
				}
			},
		},
		{
			name: "rejects two kinds of credentials on one endpoint",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(
				basicAuthFrom("creds", "user", "password"), authorizationFrom("", "creds", "token")))),
			), creds),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{"endpoints[0]: authorization and basicAuth cannot be configured at the same time"}}},
		},
		{
			name: "rejects a ServiceMonitor naming a scrape class the Prometheus does not define",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) { s.ScrapeClassName = ptr("nope") })))),
			want: []wantVerdict{{key: "default/app", reason: ReasonScrapeClassNotFound, msgContains: []string{`no scrape class "nope"`}}},
		},
		{
			name: "rejects a selector the API machinery cannot parse",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withSelector(metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}},
			})))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidSelector, msgContains: []string{"selector:"}}},
		},
		{
			name: "rejects file paths when the Prometheus denies arbitrary file access",
			in: newInput(
				newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.ArbitraryFSAccessThroughSMs.Deny = true })),
				monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
					ep.BearerTokenFile = "/etc/shadow"
				}))))),
			),
			want: []wantVerdict{{key: "default/app", reason: ReasonFileAccessDenied, msgContains: []string{"endpoints[0].bearerTokenFile"}}},
		},
		{
			name: "rejects an empty namespace in matchNames instead of discovering everywhere",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withNamespaceSelector(monitoringv1.NamespaceSelector{MatchNames: []string{"a", ""}})))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{"namespaceSelector.matchNames[1]"}}},
		},
		{
			name: "rejects with the loader's message what only Prometheus's loader catches",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
				s.ScrapeProtocols = []monitoringv1.ScrapeProtocol{monitoringv1.PrometheusProto, monitoringv1.PrometheusProto}
			})))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{"endpoints[0]: Prometheus refuses the generated job", "duplicated protocol"}}},
		},
		{
			name: "names the endpoint whose job only Prometheus's loader refuses",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(
				endpoint(),
				endpoint(withEP(func(ep *monitoringv1.Endpoint) {
					ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{MinVersion: ptr(monitoringv1.TLSVersion("TLS14"))}}
				})),
			)))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{"endpoints[1]: Prometheus refuses the generated job", "TLS14"}}},
		},
		{
			name: "accepts a ServiceMonitor without endpoints and grants nothing for it",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("apps", "empty", withEndpoints()))),
			want: []wantVerdict{{key: "apps/empty"}},
			check: func(t *testing.T, res *Result) {
				if d := parse(t, res.Config()); len(d.ScrapeConfigs) != 0 || len(res.Namespaces) != 0 {
					t.Errorf("jobs %d namespaces %v", len(d.ScrapeConfigs), res.Namespaces)
				}
			},
		},
		{
			name: "reads Secrets given with stringData, as the CLI reads them from files",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(authorizationFrom("", "from-file", "token"))))),
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "from-file"}, StringData: map[string]string{"token": "abc"}}),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if a := jobNamed(t, parse(t, res.Config()), "serviceMonitor/default/app/0").Authorization; a == nil || a.Credentials != "abc" {
					t.Errorf("authorization = %+v", a)
				}
			},
		},
		{
			name: "rejects the second copy of a ServiceMonitor given twice",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("default", "app"), newServiceMonitor("default", "app"))),
			want: []wantVerdict{{key: "default/app"}, {key: "default/app", reason: ReasonDuplicate}},
		},
		{
			name: "reports each monitor's generation and sorts verdicts by namespace/name",
			in: newInput(newPrometheus(), monitors(
				newServiceMonitor("b", "x", withGeneration(7)),
				newServiceMonitor("a-b", "x", withGeneration(3)),
				newServiceMonitor("a", "x", withGeneration(5)),
			)),
			want: []wantVerdict{{key: "a-b/x"}, {key: "a/x"}, {key: "b/x"}},
			check: func(t *testing.T, res *Result) {
				gens := []int64{res.Verdicts[0].Generation, res.Verdicts[1].Generation, res.Verdicts[2].Generation}
				if !slices.Equal(gens, []int64{3, 5, 7}) {
					t.Errorf("generations = %v", gens)
				}
				for _, v := range res.Verdicts {
					if v.Kind != "ServiceMonitor" {
						t.Errorf("kind = %q", v.Kind)
					}
				}
			},
		},
		{
			name: "reports the namespaces accepted monitors discover in, for RBAC",
			in: newInput(newPrometheus(), monitors(
				newServiceMonitor("apps", "own"),
				newServiceMonitor("apps", "listed", withNamespaceSelector(monitoringv1.NamespaceSelector{MatchNames: []string{"web", "db", "web"}})),
				newServiceMonitor("secret-ns", "rejected", withNamespaceSelector(monitoringv1.NamespaceSelector{Any: true}), withEndpoints(endpoint(port("bad(port")))),
			)),
			want: []wantVerdict{{key: "apps/listed"}, {key: "apps/own"}, {key: "secret-ns/rejected", reason: ReasonInvalidPort}},
			check: func(t *testing.T, res *Result) {
				if !slices.Equal(res.Namespaces, []string{"apps", "db", "web"}) || res.AllNamespaces {
					t.Errorf("namespaces = %v, all = %v", res.Namespaces, res.AllNamespaces)
				}
				sd := jobNamed(t, parse(t, res.Config()), "serviceMonitor/apps/listed/0").KubernetesSDConfigs[0]
				if !slices.Equal(sd.Namespaces.Names, []string{"web", "db"}) {
					t.Errorf("sd namespaces = %v", sd.Namespaces.Names)
				}
			},
		},
		{
			name: "reports all namespaces when an accepted monitor uses namespaceSelector.any",
			in:   newInput(newPrometheus(), monitors(newServiceMonitor("apps", "any", withNamespaceSelector(monitoringv1.NamespaceSelector{Any: true})))),
			want: []wantVerdict{{key: "apps/any"}},
			check: func(t *testing.T, res *Result) {
				if !res.AllNamespaces || len(res.Namespaces) != 0 {
					t.Errorf("namespaces = %v, all = %v", res.Namespaces, res.AllNamespaces)
				}
				if sd := jobNamed(t, parse(t, res.Config()), "serviceMonitor/apps/any/0").KubernetesSDConfigs[0]; sd.Namespaces != nil {
					t.Errorf("sd namespaces = %+v, want none", sd.Namespaces)
				}
			},
		},
		{
			name: "prefers the monitor's serviceDiscoveryRole over the Prometheus's",
			in: newInput(newPrometheus(withPromRole(monitoringv1.EndpointSliceRole)), monitors(
				newServiceMonitor("default", "inherits"),
				newServiceMonitor("default", "overrides", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) { s.ServiceDiscoveryRole = ptr(monitoringv1.EndpointsRole) })),
			)),
			want: []wantVerdict{{key: "default/inherits"}, {key: "default/overrides"}},
			check: func(t *testing.T, res *Result) {
				d := parse(t, res.Config())
				inh := jobNamed(t, d, "serviceMonitor/default/inherits/0")
				if inh.KubernetesSDConfigs[0].Role != "endpointslice" || inh.RelabelConfigs[2].SourceLabels[0] != "__meta_kubernetes_endpointslice_port_name" {
					t.Errorf("inheriting job: role %q, port rule %+v", inh.KubernetesSDConfigs[0].Role, inh.RelabelConfigs[2])
				}
				if r := jobNamed(t, d, "serviceMonitor/default/overrides/0").KubernetesSDConfigs[0].Role; r != "endpoints" {
					t.Errorf("overriding job role = %q", r)
				}
			},
		},
		{
			name: "caps monitor limits by the Prometheus's enforced limits",
			in: newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.EnforcedSampleLimit = ptr(int64(1000))
				s.EnforcedTargetLimit = ptr(int64(50))
				s.TargetLimit = ptr(int64(10))
				s.EnforcedBodySizeLimit = "10MiB"
			})), monitors(
				newServiceMonitor("default", "over", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
					s.SampleLimit = ptr(int64(5000))
					s.TargetLimit = ptr(int64(100))
					s.BodySizeLimit = ptr(monitoringv1.ByteSize("1GiB"))
				})),
				newServiceMonitor("default", "under", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
					s.SampleLimit = ptr(int64(500))
					s.BodySizeLimit = ptr(monitoringv1.ByteSize("1MiB"))
				})),
				newServiceMonitor("default", "unset"),
			)),
			want: []wantVerdict{{key: "default/over"}, {key: "default/under"}, {key: "default/unset"}},
			check: func(t *testing.T, res *Result) {
				d := parse(t, res.Config())
				loaded := mustLoad(t, res.Config())
				for i, c := range []struct {
					job                          string
					sample, tgt                  uint64
					body                         string
					loadedTargets, loadedSamples uint
				}{
					{"over", 1000, 50, "10MiB", 50, 1000},
					{"under", 500, 0, "1MiB", 10, 500},
					// Without its own limit a job inherits the global one, which the enforced one
					// caps (the existing operator writes no per-job limit then).
					{"unset", 0, 0, "10MiB", 10, 1000},
				} {
					j := jobNamed(t, d, "serviceMonitor/default/"+c.job+"/0")
					if j.SampleLimit != c.sample || j.TargetLimit != c.tgt || j.BodySizeLimit != c.body {
						t.Errorf("%s: sample_limit %d target_limit %d body_size_limit %q, want %d %d %q", c.job, j.SampleLimit, j.TargetLimit, j.BodySizeLimit, c.sample, c.tgt, c.body)
					}
					if got := loaded.ScrapeConfigs[i].TargetLimit; got != c.loadedTargets {
						t.Errorf("%s: Prometheus applies target limit %d, want %d", c.job, got, c.loadedTargets)
					}
					if got := loaded.ScrapeConfigs[i].SampleLimit; got != c.loadedSamples {
						t.Errorf("%s: Prometheus applies sample limit %d, want %d", c.job, got, c.loadedSamples)
					}
				}
			},
		},
		{
			name: "writes honor_labels false and honor_timestamps false when the Prometheus overrides them",
			in: newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.OverrideHonorLabels = true
				s.OverrideHonorTimestamps = true
			})), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.HonorLabels = true
				ep.HonorTimestamps = ptr(true)
			})))))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "serviceMonitor/default/app/0")
				if j.HonorLabels || j.HonorTimestamps == nil || *j.HonorTimestamps {
					t.Errorf("honor_labels %v honor_timestamps %v", j.HonorLabels, j.HonorTimestamps)
				}
			},
		},
		{
			name: "leaves the enforced namespace label off monitors excluded from enforcement",
			in: newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.EnforcedNamespaceLabel = "tenant"
				s.ExcludedFromEnforcement = []monitoringv1.ObjectReference{{Resource: "servicemonitors", Namespace: "infra"}}
			})), monitors(newServiceMonitor("infra", "app"), newServiceMonitor("team", "app"))),
			want: []wantVerdict{{key: "infra/app"}, {key: "team/app"}},
			check: func(t *testing.T, res *Result) {
				d := parse(t, res.Config())
				if j := jobNamed(t, d, "serviceMonitor/infra/app/0"); len(j.MetricRelabelConfigs) != 0 {
					t.Errorf("excluded monitor got metric relabelings %+v", j.MetricRelabelConfigs)
				}
				j := jobNamed(t, d, "serviceMonitor/team/app/0")
				if len(j.MetricRelabelConfigs) != 1 || j.MetricRelabelConfigs[0].TargetLabel != "tenant" || *j.MetricRelabelConfigs[0].Replacement != "team" {
					t.Errorf("metric relabelings = %+v", j.MetricRelabelConfigs)
				}
			},
		},
		{
			name: "writes no jobs and grants nothing when there are no monitors",
			in:   newInput(newPrometheus(), nil),
			want: nil,
			check: func(t *testing.T, res *Result) {
				if d := parse(t, res.Config()); len(d.ScrapeConfigs) != 0 || len(res.Namespaces) != 0 {
					t.Errorf("jobs %d namespaces %v", len(d.ScrapeConfigs), res.Namespaces)
				}
			},
		},
	}

	runVerdictCases(t, tests)
}

func TestGenerateRefusesAnInvalidPrometheus(t *testing.T) {
	tests := []struct {
		name    string
		in      Input
		wantErr string
	}{
		{
			name:    "returns an error when there is no Prometheus",
			in:      Input{},
			wantErr: "no Prometheus",
		},
		{
			name:    "returns an error when the scrape interval is not a duration",
			in:      newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.ScrapeInterval = "soon" })), nil),
			wantErr: "spec.scrapeInterval",
		},
		{
			name: "returns an error when the scrape timeout exceeds the scrape interval",
			in: newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.ScrapeInterval = "10s"
				s.ScrapeTimeout = "20s"
			})), nil),
			wantErr: "spec.scrapeTimeout",
		},
		{
			name: "returns an error when an external label name is invalid",
			in: newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.NameValidationScheme = ptr(monitoringv1.LegacyNameValidationScheme)
				s.ExternalLabels = map[string]string{"team-name": "x"}
			})), nil),
			wantErr: `"team-name" is not a valid label name`,
		},
		{
			name:    "returns an error when the service discovery role is unknown",
			in:      newInput(newPrometheus(withPromRole("Pods")), nil),
			wantErr: "spec.serviceDiscoveryRole",
		},
		{
			name: "returns an error when two scrape classes are the default",
			in: newInput(newPrometheus(
				withScrapeClass(monitoringv1.ScrapeClass{Name: "a", Default: ptr(true)}),
				withScrapeClass(monitoringv1.ScrapeClass{Name: "b", Default: ptr(true)}),
			), nil),
			wantErr: "both marked default",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.ServiceMonitors = monitors(newServiceMonitor("default", "app"))
			res, err := Generate(tc.in)
			if err == nil {
				t.Fatalf("Generate succeeded, want an error containing %q:\n%s", tc.wantErr, res.Config())
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}
