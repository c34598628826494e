package scrape

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// dnsGoldenCases need Prometheus's DNS discovery linked into the test binary to load.
var dnsGoldenCases = map[string]bool{"scrapeconfig_dns_sd": true}

func scrapeConfigGoldenCases() map[string]Input {
	creds := newSecret("default", "creds", map[string]string{"user": "alice", "password": "s3cret", "token": "t0ken"})
	dur := func(d string) *monitoringv1.Duration { v := monitoringv1.Duration(d); return &v }

	return map[string]Input{
		"scrapeconfig_static": withScrapeConfigs(newInput(newPrometheus(withShards(2), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.EnforcedNamespaceLabel = "tenant"
			s.EnforcedSampleLimit = ptr(int64(5000))
		})), nil), newScrapeConfig("infra", "nodes", withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.JobName = ptr("node-exporter")
			s.StaticConfigs = []monitoringv1alpha1.StaticConfig{
				{Targets: []monitoringv1alpha1.Target{"node-1.example.com:9100", "node-2.example.com:9100"}, Labels: map[string]string{"rack": "r1", "env": "prod"}},
				{Targets: []monitoringv1alpha1.Target{"10.0.0.3:9100"}},
			}
			s.MetricsPath = ptr("/metrics/node")
			s.Params = map[string][]string{"collect[]": {"cpu", "meminfo"}}
			s.Scheme = ptr(monitoringv1.SchemeHTTPS)
			s.ScrapeInterval = dur("15s")
			s.ScrapeTimeout = dur("10s")
			s.HonorLabels = ptr(true)
			s.HonorTimestamps = ptr(false)
			s.EnableCompression = ptr(false)
			s.RelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("replace", []string{"__address__"}, "host", "([^:]+):.*")}
			s.MetricRelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("drop", []string{"__name__"}, "", "node_scrape_collector_.*")}
			s.SampleLimit = ptr(int64(10000))
			s.KeepDroppedTargets = ptr(int64(5))
			s.ScrapeProtocols = []monitoringv1.ScrapeProtocol{monitoringv1.PrometheusText0_0_4}
			s.FallbackScrapeProtocol = ptr(monitoringv1.PrometheusText0_0_4)
			s.BodySizeLimit = ptr(monitoringv1.ByteSize("10MiB"))
			s.NativeHistogramMinBucketFactor = ptr(resource.MustParse("1.1"))
			s.NameValidationScheme = ptr(monitoringv1.UTF8NameValidationScheme)
		}))),

		"scrapeconfig_http_sd_basic_auth": withScrapeConfigs(newInput(newPrometheus(), nil, creds), newScrapeConfig("default", "http-sd", withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.StaticConfigs = nil
			s.HTTPSDConfigs = []monitoringv1alpha1.HTTPSDConfig{{
				URL:             "https://targets.example.com/prometheus",
				RefreshInterval: dur("1m"),
				BasicAuth:       &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")},
				ProxyConfig:     monitoringv1.ProxyConfig{ProxyURL: ptr("http://proxy.internal:3128")},
				FollowRedirects: ptr(false),
			}}
			// The targets themselves are scraped with a bearer token.
			s.Authorization = &monitoringv1.SafeAuthorization{Credentials: secretPtr("creds", "token")}
		}))),

		"scrapeconfig_kubernetes_sd_pod_selectors": withConfigMaps(withScrapeConfigs(newInput(newPrometheus(), nil, creds),
			newScrapeConfig("default", "pods", withKubernetesSD(monitoringv1alpha1.KubernetesSDConfig{
				Role:           monitoringv1alpha1.KubernetesRolePod,
				Namespaces:     &monitoringv1alpha1.NamespaceDiscovery{Names: []string{"web", "shop"}, IncludeOwnNamespace: ptr(true)},
				Selectors:      []monitoringv1alpha1.K8SSelectorConfig{{Role: monitoringv1alpha1.KubernetesRolePod, Label: ptr("app.kubernetes.io/part-of=shop"), Field: ptr("status.phase=Running")}},
				AttachMetadata: &monitoringv1alpha1.AttachMetadata{Node: ptr(true)},
			}), withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.RelabelConfigs = []monitoringv1.RelabelConfig{
					relabelCfg("keep", []string{"__meta_kubernetes_pod_annotation_prometheus_io_scrape"}, "", "true"),
					relabelCfg("replace", []string{"__meta_kubernetes_namespace"}, "namespace", ""),
				}
			})),
			newScrapeConfig("default", "remote-cluster", withKubernetesSD(monitoringv1alpha1.KubernetesSDConfig{
				APIServer:     ptr("https://api.other-cluster.example.com:6443"),
				Role:          monitoringv1alpha1.KubernetesRoleEndpointSlice,
				Authorization: &monitoringv1.SafeAuthorization{Credentials: secretPtr("creds", "token")},
				TLSConfig:     &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("tls", "ca.crt")}},
			})),
		), tlsConfigMap("default")),

		"scrapeconfig_dns_sd": withScrapeConfigs(newInput(newPrometheus(), nil), newScrapeConfig("default", "dns", withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.StaticConfigs = nil
			s.DNSSDConfigs = []monitoringv1alpha1.DNSSDConfig{
				{Names: []string{"_metrics._tcp.example.com"}},
				{Names: []string{"db-1.example.com", "db-2.example.com"}, Type: ptr(monitoringv1alpha1.DNSRecordTypeA), Port: ptr(int32(9187)), RefreshInterval: dur("5m")},
			}
		}))),

		"mixed_kinds_with_scrapeconfigs": withScrapeConfigs(newMixedInput(
			newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.EnforcedNamespaceLabel = "tenant" })),
			monitors(newServiceMonitor("default", "zeta"), newServiceMonitor("apps", "alpha")),
			podMonitors(newPodMonitor("apps", "web")),
			probes(newProbe("apps", "site")),
		),
			newScrapeConfig("default", "static"),
			newScrapeConfig("apps", "files", withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.StaticConfigs = nil
				s.FileSDConfigs = []monitoringv1alpha1.FileSDConfig{{Files: []monitoringv1alpha1.SDFile{"/etc/prometheus/targets/*.json"}, RefreshInterval: dur("2m")}}
			})),
		),
	}
}

func TestGenerateScrapeConfigVerdicts(t *testing.T) {
	in := func(scs ...*monitoringv1alpha1.ScrapeConfig) Input {
		return withScrapeConfigs(newInput(newPrometheus(), nil), scs...)
	}
	sc := func(opts ...scOpt) *monitoringv1alpha1.ScrapeConfig { return newScrapeConfig("default", "sc", opts...) }
	spec := func(f func(*monitoringv1alpha1.ScrapeConfigSpec)) *monitoringv1alpha1.ScrapeConfig {
		return sc(withSCSpec(f))
	}
	job := func(t *testing.T, res *Result) *scrapeJob {
		return jobNamed(t, parse(t, res.Config()), "scrapeConfig/default/sc")
	}
	creds := newSecret("default", "creds", map[string]string{"user": "alice", "password": "s3cret", "token": "t0ken"})
	pod := monitoringv1alpha1.KubernetesSDConfig{Role: monitoringv1alpha1.KubernetesRolePod}

	tests := []verdictCase{
		{
			name: "accepts a static ScrapeConfig and wraps it in the job name and job label, without sharding rules for one shard",
			in:   in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) { s.JobName = ptr("nodes") })),
			want: []wantVerdict{{kind: "ScrapeConfig", key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				j := job(t, res)
				if len(j.StaticConfigs) != 1 || !slices.Equal(j.StaticConfigs[0].Targets, []string{"node-1.example.com:9100"}) {
					t.Errorf("static_configs = %+v", j.StaticConfigs)
				}
				rules := j.RelabelConfigs
				if len(rules) != 2 || rules[0].TargetLabel != "__tmp_prometheus_job_name" || rules[1].TargetLabel != "job" || *rules[1].Replacement != "nodes" {
					t.Errorf("relabel_configs = %+v", rules)
				}
				if res.AllNamespaces || len(res.Namespaces) != 0 || res.DiscoverNodes {
					t.Errorf("a static ScrapeConfig grants discovery: %v %v %v", res.Namespaces, res.AllNamespaces, res.DiscoverNodes)
				}
			},
		},
		{
			name: "gives a ScrapeConfig the sharding rules when the Prometheus has several shards",
			in: withScrapeConfigs(newInput(func() *monitoringv1.Prometheus {
				p := newPrometheus()
				p.Spec.Shards = ptr[int32](2)
				return p
			}(), nil), sc()),
			want: []wantVerdict{{kind: "ScrapeConfig", key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				rules := job(t, res).RelabelConfigs
				if len(rules) != 4 || rules[2].Action != "hashmod" || rules[2].Modulus != 2 || rules[3].Action != "keep" {
					t.Errorf("relabel_configs = %+v", rules)
				}
			},
		},
		{
			name: "writes the discovery configs of several mechanisms into the one job, in the API's order",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.EC2SDConfigs = []monitoringv1alpha1.EC2SDConfig{{Region: ptr("eu-west-1")}}
				s.ConsulSDConfigs = []monitoringv1alpha1.ConsulSDConfig{{Server: "consul:8500"}}
			})),
			want: []wantVerdict{{key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "scrapeConfig/default/sc")
				if len(j.StaticConfigs) != 1 || len(j.ConsulSDConfigs) != 1 || len(j.EC2SDConfigs) != 1 {
					t.Errorf("job = %+v", j)
				}
				if cfg := string(res.Config()); strings.Index(cfg, "consul_sd_configs:") > strings.Index(cfg, "ec2_sd_configs:") {
					t.Errorf("consul_sd_configs written after ec2_sd_configs:\n%s", cfg)
				}
			},
		},
		{
			name: "grants Kubernetes discovery for the Kubernetes part only of a ScrapeConfig with other mechanisms",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.KubernetesSDConfigs = []monitoringv1alpha1.KubernetesSDConfig{pod}
				s.HetznerSDConfigs = []monitoringv1alpha1.HetznerSDConfig{{Role: "Hcloud"}}
			})),
			want: []wantVerdict{{key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				j := jobNamed(t, parse(t, res.Config()), "scrapeConfig/default/sc")
				if len(j.KubernetesSDConfigs) != 1 || len(j.HetznerSDConfigs) != 1 || j.HetznerSDConfigs[0].Role != "hcloud" {
					t.Errorf("job = %+v", j)
				}
				if res.DiscoverNodes {
					t.Error("Hetzner discovery grants node discovery")
				}
			},
		},
		{
			name: "rejects file discovery when the Prometheus denies arbitrary file access",
			in: withScrapeConfigs(newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.ArbitraryFSAccessThroughSMs.Deny = true })), nil),
				spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
					s.FileSDConfigs = []monitoringv1alpha1.FileSDConfig{{Files: []monitoringv1alpha1.SDFile{"/etc/targets.json"}}}
				})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonFileAccessDenied, msgContains: []string{"fileSDConfigs: reading files from the Prometheus container is denied"}}},
		},
		{
			name: "writes file discovery when file access is allowed",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.FileSDConfigs = []monitoringv1alpha1.FileSDConfig{{Files: []monitoringv1alpha1.SDFile{"/etc/targets/*.yaml"}}}
			})),
			want: []wantVerdict{{key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				if f := job(t, res).FileSDConfigs; len(f) != 1 || !slices.Equal(f[0].Files, []string{"/etc/targets/*.yaml"}) {
					t.Errorf("file_sd_configs = %+v", f)
				}
			},
		},
		{
			name: "rejects with the loader's message a file name Prometheus refuses",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.FileSDConfigs = []monitoringv1alpha1.FileSDConfig{{Files: []monitoringv1alpha1.SDFile{"/etc/targets.txt"}}}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, msgContains: []string{"Prometheus refuses the generated job", "not valid for file discovery"}}},
		},
		{
			name: "rejects a ScrapeConfig whose relabeling regex does not compile",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.RelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("keep", []string{"__address__"}, "", "(foo")}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidRegex, message: `relabelings[0].regex: error parsing regexp: missing closing ): "(foo"`}},
		},
		{
			name: "rejects an unknown action in a ScrapeConfig's metricRelabelings",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.MetricRelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("Explode", nil, "x", "")}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonUnknownRelabelAction, msgContains: []string{`metricRelabelings[0].action: unknown relabel action "Explode"`}}},
		},
		{
			name: "rejects a scrape timeout longer than the ScrapeConfig's scrape interval",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.ScrapeInterval = ptr(monitoringv1.Duration("10s"))
				s.ScrapeTimeout = ptr(monitoringv1.Duration("20s"))
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidDuration, message: "scrapeTimeout: 20s is greater than the scrape interval 10s"}},
		},
		{
			name: "rejects a refresh interval that is not a duration",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.HTTPSDConfigs = []monitoringv1alpha1.HTTPSDConfig{{URL: "https://sd.example.com", RefreshInterval: ptr(monitoringv1.Duration("often"))}}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidDuration, msgContains: []string{`httpSDConfigs[0].refreshInterval: invalid duration "often"`}}},
		},
		{
			name: "rejects an HTTP discovery URL without a scheme",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.HTTPSDConfigs = []monitoringv1alpha1.HTTPSDConfig{{URL: "sd.example.com/targets"}}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, message: `httpSDConfigs[0].url: "sd.example.com/targets" must use http or https`}},
		},
		{
			name: "rejects a ScrapeConfig whose HTTP discovery credentials Secret is missing",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.HTTPSDConfigs = []monitoringv1alpha1.HTTPSDConfig{{URL: "https://sd.example.com", BasicAuth: &monitoringv1.BasicAuth{Username: secretRef("missing", "user"), Password: secretRef("missing", "password")}}}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonSecretNotFound, message: "httpSDConfigs[0].basicAuth.username: Secret default/missing not found"}},
		},
		{
			name: "rejects two kinds of credentials on one HTTP discovery config",
			in: withScrapeConfigs(newInput(newPrometheus(), nil, creds), spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.HTTPSDConfigs = []monitoringv1alpha1.HTTPSDConfig{{
					URL:           "https://sd.example.com",
					BasicAuth:     &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")},
					Authorization: &monitoringv1.SafeAuthorization{Credentials: secretPtr("creds", "token")},
				}}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, message: "httpSDConfigs[0]: authorization and basicAuth cannot be configured at the same time"}},
		},
		{
			name: "rejects a ScrapeConfig whose Kubernetes API server CA ConfigMap is missing",
			in: withScrapeConfigs(newInput(newPrometheus(), nil, creds), sc(withKubernetesSD(monitoringv1alpha1.KubernetesSDConfig{
				APIServer: ptr("https://api.example.com:6443"),
				Role:      monitoringv1alpha1.KubernetesRoleService,
				TLSConfig: &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("api-ca", "ca.crt")}},
			}))),
			want: []wantVerdict{{key: "default/sc", reason: ReasonConfigMapNotFound, message: "kubernetesSDConfigs[0].tlsConfig.ca.configMap: ConfigMap default/api-ca not found"}},
		},
		{
			name: "rejects Kubernetes discovery credentials without an API server",
			in: withScrapeConfigs(newInput(newPrometheus(), nil, creds), sc(withKubernetesSD(monitoringv1alpha1.KubernetesSDConfig{
				Role:          monitoringv1alpha1.KubernetesRolePod,
				Authorization: &monitoringv1.SafeAuthorization{Credentials: secretPtr("creds", "token")},
			}))),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, msgContains: []string{"kubernetesSDConfigs[0]: basicAuth, authorization, oauth2, tlsConfig and proxyUrl need apiServer"}}},
		},
		{
			name: "rejects an unknown Kubernetes role",
			in:   in(sc(withKubernetesSD(monitoringv1alpha1.KubernetesSDConfig{Role: "Deployment"}))),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, msgContains: []string{`kubernetesSDConfigs[0].role: unknown role "Deployment"`}}},
		},
		{
			name: "rejects an empty namespace name in Kubernetes discovery",
			in: in(sc(withKubernetesSD(monitoringv1alpha1.KubernetesSDConfig{
				Role: monitoringv1alpha1.KubernetesRolePod, Namespaces: &monitoringv1alpha1.NamespaceDiscovery{Names: []string{"a", ""}},
			}))),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, msgContains: []string{"kubernetesSDConfigs[0].namespaces.names[1]"}}},
		},
		{
			name: "rejects with the loader's message a selector role Prometheus does not allow for the role",
			in: in(sc(withKubernetesSD(monitoringv1alpha1.KubernetesSDConfig{
				Role:      monitoringv1alpha1.KubernetesRolePod,
				Selectors: []monitoringv1alpha1.K8SSelectorConfig{{Role: monitoringv1alpha1.KubernetesRoleService, Label: ptr("a=b")}},
			}))),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, msgContains: []string{"Prometheus refuses the generated job", "pod role supports only pod, node selectors"}}},
		},
		{
			name: "rejects an empty static target",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.StaticConfigs = []monitoringv1alpha1.StaticConfig{{Targets: []monitoringv1alpha1.Target{"a:1"}}, {Targets: []monitoringv1alpha1.Target{" "}}}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, message: "staticConfigs[1].targets[0]: the target is empty"}},
		},
		{
			name: "rejects a static label name Prometheus's legacy name validation refuses",
			in: withScrapeConfigs(newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.NameValidationScheme = ptr(monitoringv1.LegacyNameValidationScheme)
			})), nil), spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.StaticConfigs[0].Labels = map[string]string{"team.name": "x"}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, message: `staticConfigs[0].labels: "team.name" is not a valid label name`}},
		},
		{
			name: "rejects an empty jobName",
			in:   in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) { s.JobName = ptr("") })),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, message: "jobName: must not be empty when set"}},
		},
		{
			name: "rejects a ScrapeConfig naming a scrape class the Prometheus does not define",
			in:   in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) { s.ScrapeClassName = ptr("nope") })),
			want: []wantVerdict{{key: "default/sc", reason: ReasonScrapeClassNotFound}},
		},
		{
			name: "rejects the second copy of a ScrapeConfig given twice",
			in:   in(sc(), sc()),
			want: []wantVerdict{{key: "default/sc"}, {key: "default/sc", reason: ReasonDuplicate}},
		},
		{
			name: "applies the scrape class, the enforced limits and the enforced namespace label",
			in: withScrapeConfigs(newInput(newPrometheus(
				withPromSpec(func(s *monitoringv1.PrometheusSpec) {
					s.EnforcedNamespaceLabel = "tenant"
					s.EnforcedSampleLimit = ptr(int64(100))
					s.OverrideHonorLabels = true
				}),
				withScrapeClass(monitoringv1.ScrapeClass{
					Name:    "default",
					Default: ptr(true),
					Relabelings: []monitoringv1.RelabelConfig{func() monitoringv1.RelabelConfig {
						rc := relabelCfg("replace", nil, "class", "")
						rc.Replacement = ptr("x")
						return rc
					}()},
					MetricRelabelings: []monitoringv1.RelabelConfig{relabelCfg("labeldrop", nil, "", "tmp_.*")},
					TLSConfig:         &monitoringv1.TLSConfig{TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/ca.pem"}},
				}),
			), nil), spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.SampleLimit = ptr(int64(1000))
				s.HonorLabels = ptr(true)
			})),
			want: []wantVerdict{{key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				j := job(t, res)
				if j.SampleLimit != 100 || j.HonorLabels || j.TLSConfig == nil || j.TLSConfig.CAFile != "/etc/ca.pem" {
					t.Errorf("sample_limit %d honor_labels %v tls %+v", j.SampleLimit, j.HonorLabels, j.TLSConfig)
				}
				r := j.RelabelConfigs
				if r[1].TargetLabel != "class" || r[2].TargetLabel != "tenant" || *r[2].Replacement != "default" {
					t.Errorf("relabel_configs = %+v", r)
				}
				m := j.MetricRelabelConfigs
				if len(m) != 2 || m[0].Action != "labeldrop" || m[1].TargetLabel != "tenant" {
					t.Errorf("metric_relabel_configs = %+v", m)
				}
			},
		},
		{
			name: "leaves the enforced namespace label off ScrapeConfigs excluded from enforcement",
			in: withScrapeConfigs(newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.EnforcedNamespaceLabel = "tenant"
				s.ExcludedFromEnforcement = []monitoringv1.ObjectReference{{Resource: "scrapeconfigs", Namespace: "default", Name: "sc"}}
			})), nil), sc()),
			want: []wantVerdict{{key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				if j := job(t, res); len(j.MetricRelabelConfigs) != 0 {
					t.Errorf("metric_relabel_configs = %+v", j.MetricRelabelConfigs)
				}
			},
		},
		{
			name: "reports the namespaces Kubernetes discovery needs, the Prometheus's own with ownNamespace",
			in: in(sc(withKubernetesSD(
				monitoringv1alpha1.KubernetesSDConfig{Role: monitoringv1alpha1.KubernetesRolePod, Namespaces: &monitoringv1alpha1.NamespaceDiscovery{Names: []string{"web", "db"}}},
				monitoringv1alpha1.KubernetesSDConfig{Role: monitoringv1alpha1.KubernetesRoleService, Namespaces: &monitoringv1alpha1.NamespaceDiscovery{IncludeOwnNamespace: ptr(true), Names: []string{"web"}}},
			))),
			want: []wantVerdict{{key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				if !slices.Equal(res.Namespaces, []string{"db", "monitoring", "web"}) || res.AllNamespaces || res.DiscoverNodes {
					t.Errorf("namespaces %v all %v nodes %v", res.Namespaces, res.AllNamespaces, res.DiscoverNodes)
				}
				sd := job(t, res).KubernetesSDConfigs
				if sd[1].Namespaces == nil || !sd[1].Namespaces.OwnNamespace || sd[0].Role != "pod" || sd[1].Role != "service" {
					t.Errorf("kubernetes_sd_configs = %+v", sd)
				}
			},
		},
		{
			name: "reports all namespaces for Kubernetes discovery without namespaces",
			in:   in(sc(withKubernetesSD(pod))),
			want: []wantVerdict{{key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				if !res.AllNamespaces || res.DiscoverNodes {
					t.Errorf("all %v nodes %v", res.AllNamespaces, res.DiscoverNodes)
				}
			},
		},
		{
			name: "reports node discovery for the Node role, and no namespace",
			in:   in(sc(withKubernetesSD(monitoringv1alpha1.KubernetesSDConfig{Role: monitoringv1alpha1.KubernetesRoleNode}))),
			want: []wantVerdict{{key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				if !res.DiscoverNodes || res.AllNamespaces || len(res.Namespaces) != 0 {
					t.Errorf("namespaces %v all %v nodes %v", res.Namespaces, res.AllNamespaces, res.DiscoverNodes)
				}
			},
		},
		{
			name: "grants nothing for Kubernetes discovery against another API server",
			in: withScrapeConfigs(newInput(newPrometheus(), nil, creds), sc(withKubernetesSD(monitoringv1alpha1.KubernetesSDConfig{
				APIServer:     ptr("https://api.example.com:6443"),
				Role:          monitoringv1alpha1.KubernetesRoleNode,
				BasicAuth:     &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")},
				ProxyConfig:   monitoringv1.ProxyConfig{ProxyURL: ptr("http://proxy:3128")},
				EnableHTTP2:   ptr(false),
				Authorization: nil,
			}))),
			want: []wantVerdict{{key: "default/sc"}},
			check: func(t *testing.T, res *Result) {
				if res.DiscoverNodes || res.AllNamespaces || len(res.Namespaces) != 0 {
					t.Errorf("namespaces %v all %v nodes %v", res.Namespaces, res.AllNamespaces, res.DiscoverNodes)
				}
				sd := job(t, res).KubernetesSDConfigs[0]
				if sd.APIServer != "https://api.example.com:6443" || sd.HTTPClient.BasicAuth == nil || sd.HTTPClient.BasicAuth.Password != "s3cret" || sd.HTTPClient.Proxy.ProxyURL == "" {
					t.Errorf("kubernetes_sd_configs[0] = %+v", sd)
				}
			},
		},
		{
			name: "reports node discovery for a ServiceMonitor attaching node metadata",
			in: newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
				s.AttachMetadata = &monitoringv1.AttachMetadata{Node: ptr(true)}
			})))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if !res.DiscoverNodes {
					t.Error("DiscoverNodes is false")
				}
			},
		},
		{
			name: "orders ScrapeConfigs after the other kinds",
			in: withScrapeConfigs(newMixedInput(newPrometheus(), monitors(newServiceMonitor("z", "sm")), podMonitors(newPodMonitor("z", "pm")), probes(newProbe("z", "probe"))),
				newScrapeConfig("b", "sc"), newScrapeConfig("a", "sc")),
			want: []wantVerdict{{kind: "ServiceMonitor", key: "z/sm"}, {kind: "PodMonitor", key: "z/pm"}, {kind: "Probe", key: "z/probe"}, {kind: "ScrapeConfig", key: "a/sc"}, {kind: "ScrapeConfig", key: "b/sc"}},
			check: func(t *testing.T, res *Result) {
				var names []string
				for _, j := range parse(t, res.Config()).ScrapeConfigs {
					names = append(names, j.JobName)
				}
				want := []string{"serviceMonitor/z/sm/0", "podMonitor/z/pm/0", "probe/z/probe", "scrapeConfig/a/sc", "scrapeConfig/b/sc"}
				if !slices.Equal(names, want) {
					t.Errorf("jobs = %v, want %v", names, want)
				}
			},
		},
	}
	if !sdLinked("dns") {
		tests = append(tests, verdictCase{
			name: "rejects DNS discovery while Prometheus's DNS discovery is not linked in",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.DNSSDConfigs = []monitoringv1alpha1.DNSSDConfig{{Names: []string{"_metrics._tcp.example.com"}}}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonUnsupported, msgContains: []string{"dnsSDConfigs: not supported by this build of Lookout"}}},
		})
	} else {
		tests = append(tests, verdictCase{
			name: "rejects with the loader's message a DNS A record without a port",
			in: in(spec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.DNSSDConfigs = []monitoringv1alpha1.DNSSDConfig{{Names: []string{"db.example.com"}, Type: ptr(monitoringv1alpha1.DNSRecordTypeA)}}
			})),
			want: []wantVerdict{{key: "default/sc", reason: ReasonInvalidConfig, msgContains: []string{"a port is required"}}},
		})
	}
	runVerdictCases(t, tests)
}

// Every field of the ScrapeConfig API types is either rendered or refused: a field added by an
// API upgrade must be looked at, not silently dropped.
func TestScrapeConfigFieldsAreAllHandled(t *testing.T) {
	handled := map[reflect.Type][]string{
		reflect.TypeFor[monitoringv1alpha1.ScrapeConfigSpec](): {
			"JobName", "StaticConfigs", "FileSDConfigs", "HTTPSDConfigs", "KubernetesSDConfigs", "DNSSDConfigs",
			"ConsulSDConfigs", "EC2SDConfigs", "AzureSDConfigs", "GCESDConfigs", "OpenStackSDConfigs", "DigitalOceanSDConfigs",
			"KumaSDConfigs", "EurekaSDConfigs", "DockerSDConfigs", "LinodeSDConfigs", "HetznerSDConfigs", "NomadSDConfigs",
			"DockerSwarmSDConfigs", "PuppetDBSDConfigs", "LightSailSDConfigs", "OVHCloudSDConfigs", "ScalewaySDConfigs", "IonosSDConfigs",
			"RelabelConfigs", "MetricsPath", "ScrapeInterval", "ScrapeTimeout", "ScrapeProtocols", "FallbackScrapeProtocol",
			"HonorTimestamps", "TrackTimestampsStaleness", "HonorLabels", "Params", "Scheme", "EnableCompression", "EnableHTTP2",
			"BasicAuth", "Authorization", "OAuth2", "TLSConfig", "SampleLimit", "TargetLimit", "LabelLimit",
			"LabelNameLengthLimit", "LabelValueLengthLimit", "BodySizeLimit", "NativeHistogramConfig", "KeepDroppedTargets",
			"MetricRelabelConfigs", "ProxyConfig", "NameValidationScheme", "NameEscapingScheme", "ScrapeClassName",
		},
		reflect.TypeFor[monitoringv1alpha1.StaticConfig]():       {"Targets", "Labels"},
		reflect.TypeFor[monitoringv1alpha1.FileSDConfig]():       {"Files", "RefreshInterval"},
		reflect.TypeFor[monitoringv1alpha1.DNSSDConfig]():        {"Names", "RefreshInterval", "Type", "Port"},
		reflect.TypeFor[monitoringv1alpha1.NamespaceDiscovery](): {"IncludeOwnNamespace", "Names"},
		reflect.TypeFor[monitoringv1alpha1.K8SSelectorConfig]():  {"Role", "Label", "Field"},
		reflect.TypeFor[monitoringv1alpha1.AttachMetadata]():     {"Node"},
		reflect.TypeFor[monitoringv1alpha1.HTTPSDConfig](): {
			"URL", "RefreshInterval", "BasicAuth", "Authorization", "OAuth2", "ProxyConfig", "TLSConfig", "FollowRedirects", "EnableHTTP2",
		},
		reflect.TypeFor[monitoringv1alpha1.KubernetesSDConfig](): {
			"APIServer", "Role", "Namespaces", "AttachMetadata", "Selectors", "BasicAuth", "Authorization", "OAuth2",
			"ProxyConfig", "FollowRedirects", "EnableHTTP2", "TLSConfig",
		},
		reflect.TypeFor[monitoringv1alpha1.ConsulSDConfig](): {
			"Server", "PathPrefix", "TokenRef", "Datacenter", "Namespace", "Partition", "Scheme", "Services", "Tags", "TagSeparator",
			"NodeMeta", "Filter", "HealthFilter", "AllowStale", "RefreshInterval", "BasicAuth", "Authorization", "OAuth2", "ProxyConfig",
			"FollowRedirects", "EnableHttp2", "TLSConfig",
		},
		reflect.TypeFor[monitoringv1alpha1.EC2SDConfig](): {
			"Region", "AccessKey", "SecretKey", "RoleARN", "Port", "RefreshInterval", "Filters", "ProxyConfig", "TLSConfig", "FollowRedirects", "EnableHTTP2",
		},
		reflect.TypeFor[monitoringv1alpha1.AzureSDConfig](): {
			"Environment", "AuthenticationMethod", "SubscriptionID", "TenantID", "ClientID", "ClientSecret", "ResourceGroup", "RefreshInterval", "Port",
			"BasicAuth", "Authorization", "OAuth2", "ProxyConfig", "FollowRedirects", "EnableHTTP2", "TLSConfig",
		},
		reflect.TypeFor[monitoringv1alpha1.GCESDConfig](): {"Project", "Zone", "Filter", "RefreshInterval", "Port", "TagSeparator"},
		reflect.TypeFor[monitoringv1alpha1.OpenStackSDConfig](): {
			"Role", "Region", "IdentityEndpoint", "Username", "UserID", "Password", "DomainName", "DomainID", "ProjectName", "ProjectID",
			"ApplicationCredentialName", "ApplicationCredentialID", "ApplicationCredentialSecret", "AllTenants", "RefreshInterval", "Port",
			"Availability", "TLSConfig",
		},
		reflect.TypeFor[monitoringv1alpha1.DigitalOceanSDConfig](): {
			"Authorization", "OAuth2", "ProxyConfig", "FollowRedirects", "EnableHTTP2", "TLSConfig", "Port", "RefreshInterval",
		},
		reflect.TypeFor[monitoringv1alpha1.KumaSDConfig](): {
			"Server", "ClientID", "RefreshInterval", "FetchTimeout", "ProxyConfig", "TLSConfig", "BasicAuth", "Authorization", "OAuth2",
			"FollowRedirects", "EnableHTTP2",
		},
		reflect.TypeFor[monitoringv1alpha1.EurekaSDConfig](): {
			"Server", "BasicAuth", "Authorization", "OAuth2", "TLSConfig", "ProxyConfig", "FollowRedirects", "EnableHTTP2", "RefreshInterval",
		},
		reflect.TypeFor[monitoringv1alpha1.DockerSDConfig](): {
			"Host", "ProxyConfig", "TLSConfig", "Port", "HostNetworkingHost", "MatchFirstNetwork", "Filters", "RefreshInterval", "BasicAuth",
			"Authorization", "OAuth2", "FollowRedirects", "EnableHTTP2",
		},
		reflect.TypeFor[monitoringv1alpha1.LinodeSDConfig](): {
			"Region", "Port", "TagSeparator", "RefreshInterval", "Authorization", "OAuth2", "ProxyConfig", "FollowRedirects", "TLSConfig", "EnableHTTP2",
		},
		reflect.TypeFor[monitoringv1alpha1.HetznerSDConfig](): {
			"Role", "BasicAuth", "Authorization", "OAuth2", "ProxyConfig", "FollowRedirects", "EnableHTTP2", "TLSConfig", "Port", "RefreshInterval", "LabelSelector",
		},
		reflect.TypeFor[monitoringv1alpha1.NomadSDConfig](): {
			"AllowStale", "Namespace", "RefreshInterval", "Region", "Server", "TagSeparator", "BasicAuth", "Authorization", "OAuth2", "TLSConfig",
			"ProxyConfig", "FollowRedirects", "EnableHTTP2",
		},
		reflect.TypeFor[monitoringv1alpha1.DockerSwarmSDConfig](): {
			"Host", "Role", "Port", "Filters", "RefreshInterval", "BasicAuth", "Authorization", "OAuth2", "ProxyConfig", "TLSConfig", "FollowRedirects", "EnableHTTP2",
		},
		reflect.TypeFor[monitoringv1alpha1.PuppetDBSDConfig](): {
			"URL", "Query", "IncludeParameters", "RefreshInterval", "Port", "BasicAuth", "Authorization", "OAuth2", "ProxyConfig", "TLSConfig",
			"FollowRedirects", "EnableHTTP2",
		},
		reflect.TypeFor[monitoringv1alpha1.LightSailSDConfig](): {
			"Region", "AccessKey", "SecretKey", "RoleARN", "Endpoint", "RefreshInterval", "Port", "BasicAuth", "Authorization", "OAuth2",
			"ProxyConfig", "TLSConfig", "FollowRedirects", "EnableHTTP2",
		},
		reflect.TypeFor[monitoringv1alpha1.OVHCloudSDConfig](): {"ApplicationKey", "ApplicationSecret", "ConsumerKey", "Service", "Endpoint", "RefreshInterval"},
		reflect.TypeFor[monitoringv1alpha1.ScalewaySDConfig](): {
			"AccessKey", "SecretKey", "ProjectID", "Role", "Port", "ApiURL", "Zone", "NameFilter", "TagsFilter", "RefreshInterval", "ProxyConfig",
			"FollowRedirects", "EnableHTTP2", "TLSConfig",
		},
		reflect.TypeFor[monitoringv1alpha1.IonosSDConfig](): {
			"DataCenterID", "Port", "RefreshInterval", "Authorization", "ProxyConfig", "TLSConfig", "FollowRedirects", "EnableHTTP2", "OAuth2",
		},
		reflect.TypeFor[monitoringv1.NativeHistogramConfig](): {
			"ScrapeNativeHistograms", "ScrapeClassicHistograms", "NativeHistogramBucketLimit", "NativeHistogramMinBucketFactor", "ConvertClassicHistogramsToNHCB",
		},
	}
	for typ, names := range handled {
		for i := range typ.NumField() {
			f := typ.Field(i).Name
			if !slices.Contains(names, f) {
				t.Errorf("%s.%s is neither rendered nor refused", typ.Name(), f)
			}
		}
	}
}

// Every discovery mechanism of the API is rendered; one a later API adds is refused by its
// JSON name (shown here with only the first five counted as rendered).
func TestUnsupportedDiscoveryNamesEveryOtherField(t *testing.T) {
	spec := &monitoringv1alpha1.ScrapeConfigSpec{}
	v := reflect.ValueOf(spec).Elem()
	supported := map[string]bool{"FileSDConfigs": true, "HTTPSDConfigs": true, "KubernetesSDConfigs": true, "DNSSDConfigs": true}
	var want []string
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !strings.HasSuffix(f.Name, "SDConfigs") {
			continue
		}
		if !supportedSDFields[f.Name] {
			t.Errorf("%s is not rendered", f.Name)
		}
		if supported[f.Name] {
			continue
		}
		v.Field(i).Set(reflect.MakeSlice(f.Type, 1, 1))
		want = append(want, jsonName(f))
	}
	if len(want) != 18 {
		t.Fatalf("%d other discovery fields found, want 18: %v", len(want), want)
	}
	if rej := unsupportedDiscovery(spec); rej != nil {
		t.Errorf("unsupportedDiscovery refuses what Lookout renders: %+v", rej)
	}
	rej := discoveryOutside(spec, supported)
	if rej == nil || rej.reason != ReasonUnsupported || rej.message != strings.Join(want, ", ")+": not supported by Lookout yet" {
		t.Errorf("rejection = %+v", rej)
	}
	for _, name := range want {
		if !strings.HasSuffix(name, "SDConfigs") || name[0] < 'a' || name[0] > 'z' {
			t.Errorf("field named %q in the message, want its JSON name", name)
		}
	}
}

// TestScrapeConfigThatShardsItselfGetsNoSecondHashmod: a ScrapeConfig whose relabelings
// carry a hashmod of their own is left to shard itself; the others get the sharding rules.
func TestScrapeConfigThatShardsItselfGetsNoSecondHashmod(t *testing.T) {
	self := newScrapeConfig("default", "self", withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
		s.RelabelConfigs = []monitoringv1.RelabelConfig{{
			SourceLabels: []monitoringv1.LabelName{"__address__"}, Modulus: 4, TargetLabel: "__tmp_hash", Action: "hashmod",
		}}
	}))
	res, err := Generate(withScrapeConfigs(newInput(newPrometheus(withShards(3)), nil), self, newScrapeConfig("default", "plain")))
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustLoad(t, res.Config())
	for _, sc := range cfg.ScrapeConfigs {
		n := 0
		for _, r := range sc.RelabelConfigs {
			if r.Action == "hashmod" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d hashmod rules, want 1", sc.JobName, n)
		}
	}
}
