package scrape

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// alertmanagerEndpoints builds the entry of spec.alerting.alertmanagers for the Service name
// and port (a name, or a number given as an int).
func alertmanagerEndpoints(name string, port any, opts ...func(*monitoringv1.AlertmanagerEndpoints)) monitoringv1.AlertmanagerEndpoints {
	am := monitoringv1.AlertmanagerEndpoints{Name: name}
	switch p := port.(type) {
	case string:
		am.Port = intstr.FromString(p)
	case int:
		am.Port = intstr.FromInt32(int32(p))
	}
	for _, o := range opts {
		o(&am)
	}
	return am
}

func withAlertmanagers(ams ...monitoringv1.AlertmanagerEndpoints) promOpt {
	return withPromSpec(func(s *monitoringv1.PrometheusSpec) {
		s.Alerting = &monitoringv1.AlertingSpec{Alertmanagers: ams}
	})
}

// kubePrometheus is the Prometheus of kube-prometheus: monitoring/k8s, sending to the
// Alertmanagers behind the Service monitoring/alertmanager-main, port "web".
func kubePrometheus(opts ...promOpt) *monitoringv1.Prometheus {
	p := newPrometheus(append([]promOpt{withAlertmanagers(alertmanagerEndpoints("alertmanager-main", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
		am.Namespace = ptr("monitoring")
		am.APIVersion = ptr(monitoringv1.AlertmanagerAPIVersion("v2"))
	}))}, opts...)...)
	p.Name = "k8s"
	return p
}

func withAdditionalAlerting(in Input, alertmanagers, relabel string) Input {
	in.AdditionalAlertManagerConfigs = []byte(alertmanagers)
	in.AdditionalAlertRelabelConfigs = []byte(relabel)
	return in
}

const additionalAlertmanagers = `# Alertmanagers outside the cluster.
- scheme: https
  path_prefix: /eu
  static_configs:
  - targets: ['am-1.example.com:443', 'am-2.example.com:443']
  basic_auth:
    username: prom
    password: s3cret
- file_sd_configs:
  - files: [/etc/prometheus/alertmanagers/*.json]
  relabel_configs:
  - source_labels: [__meta_filepath]
    regex: .*/eu-.*
    action: keep
`

const additionalAlertRelabel = `- source_labels: [severity]
  regex: debug
  action: drop
- target_label: cluster
  replacement: eu-1
`

func alertingGoldenCases() map[string]Input {
	creds := newSecret("monitoring", "creds", map[string]string{"user": "alice", "password": "s3cret", "token": "t0ken"})
	aws := newSecret("monitoring", "aws", map[string]string{"access": "AKIDEXAMPLE", "secret": "wJalrXUtnFEMI"})
	https := ptr(monitoringv1.SchemeHTTPS)
	return map[string]Input{
		"alerting_kube_prometheus": newInput(kubePrometheus(), nil),

		"alerting_endpointslice_role": newInput(newPrometheus(withPromRole(monitoringv1.EndpointSliceRole), withAlertmanagers(
			alertmanagerEndpoints("alertmanager-main", "web"),
			alertmanagerEndpoints("alertmanager-edge", 9093, func(am *monitoringv1.AlertmanagerEndpoints) { am.Namespace = ptr("edge") }),
		)), nil),

		"alerting_tls_bearer_basic_auth_from_secrets": withConfigMaps(newInput(newPrometheus(withAlertmanagers(
			alertmanagerEndpoints("alertmanager-main", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
				am.Scheme = https
				am.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: tlsFromSecret()}
				am.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")}
			}),
			alertmanagerEndpoints("alertmanager-token", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
				am.Scheme = https
				am.PathPrefix = ptr("/alertmanager")
				am.Timeout = ptr(monitoringv1.Duration("15s"))
				am.EnableHttp2 = ptr(false)
				am.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{
					CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("tls", "ca.crt")}, InsecureSkipVerify: ptr(false),
				}}
				am.Authorization = &monitoringv1.SafeAuthorization{Credentials: secretPtr("creds", "token")}
				am.ProxyURL = ptr("http://proxy.internal:3128")
			}),
			alertmanagerEndpoints("alertmanager-file", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
				am.BearerTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
				am.TLSConfig = &monitoringv1.TLSConfig{TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/prometheus/secrets/am-ca/ca.crt"}}
			}),
		)), nil, creds, tlsSecret("monitoring")), tlsConfigMap("monitoring")),

		"alerting_sigv4": newInput(newPrometheus(withAlertmanagers(
			alertmanagerEndpoints("alertmanager-aws", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
				am.Sigv4 = &monitoringv1.Sigv4{Region: "eu-west-1", AccessKey: secretPtr("aws", "access"), SecretKey: secretPtr("aws", "secret")}
			}),
			alertmanagerEndpoints("alertmanager-role", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
				am.Sigv4 = &monitoringv1.Sigv4{Region: "eu-west-1", RoleArn: "arn:aws:iam::123456789012:role/prometheus", UseFIPSSTSEndpoint: ptr(true)}
			}),
		)), nil, aws),

		"alerting_relabelings_and_alert_relabelings": newInput(newPrometheus(withAlertmanagers(
			alertmanagerEndpoints("alertmanager-main", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
				am.RelabelConfigs = []monitoringv1.RelabelConfig{
					relabelCfg("keep", []string{"__meta_kubernetes_pod_label_zone"}, "", "eu-.*"),
					relabelCfg("replace", []string{"__meta_kubernetes_pod_node_name"}, "node", ""),
				}
				am.AlertRelabelConfigs = []monitoringv1.RelabelConfig{
					relabelCfg("Drop", []string{"severity"}, "", "info"),
					relabelCfg("labeldrop", nil, "", "tmp_.*"),
				}
			}),
		)), nil),

		"alerting_additional_alertmanager_configs": withAdditionalAlerting(newInput(kubePrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.AdditionalAlertManagerConfigs = secretPtr("alerting", "alertmanagers.yaml")
		})), nil), additionalAlertmanagers, ""),

		"alerting_additional_alert_relabel_configs": withAdditionalAlerting(newInput(kubePrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.AdditionalAlertRelabelConfigs = secretPtr("alerting", "relabel.yaml")
		})), nil), "", additionalAlertRelabel),

		"alerting_replica_label_renamed": newInput(kubePrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.ReplicaExternalLabelName = ptr("replica.id")
		})), nil),

		"alerting_replica_label_empty": newInput(kubePrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.ReplicaExternalLabelName = ptr("")
		})), nil),
	}
}

// The alerting section of kube-prometheus's Prometheus, as the existing operator writes it (its
// own test fixtures), for both discovery roles: Prometheus must load the same alerting config
// from Lookout's.
func TestAlertingMatchesTheExistingOperator(t *testing.T) {
	const existing = `alerting:
  alert_relabel_configs:
  - action: labeldrop
    regex: prometheus_replica
  alertmanagers:
  - kubernetes_sd_configs:
    - role: ROLE
      namespaces:
        names:
        - monitoring
    api_version: v2
    relabel_configs:
    - action: keep
      source_labels:
      - __meta_kubernetes_service_name
      regex: alertmanager-main
    - action: keep
      source_labels:
      - PORT_LABEL
      regex: web
`
	for _, tc := range []struct {
		name      string
		opts      []promOpt
		role      string
		portLabel string
	}{
		{"endpoints role", nil, "endpoints", "__meta_kubernetes_endpoint_port_name"},
		{"endpointslice role", []promOpt{withPromRole(monitoringv1.EndpointSliceRole)}, "endpointslice", "__meta_kubernetes_endpointslice_port_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Generate(newInput(kubePrometheus(tc.opts...), nil))
			if err != nil {
				t.Fatal(err)
			}
			ours := mustLoad(t, res.Config())
			want := strings.NewReplacer("ROLE", tc.role, "PORT_LABEL", tc.portLabel).Replace(existing)
			theirs, err := config.Load("global:\n  scrape_interval: 30s\n"+want, discardLogger)
			if err != nil {
				t.Fatalf("the existing operator's section does not load: %v", err)
			}
			got, _ := yaml.Marshal(ours.AlertingConfig)
			exp, _ := yaml.Marshal(theirs.AlertingConfig)
			if !bytes.Equal(got, exp) {
				t.Errorf("Prometheus loads a different alerting config:\n--- Lookout\n%s--- existing operator\n%s", got, exp)
			}
		})
	}
}

func TestAlertingSectionComesLastAndOnlyWhenAsked(t *testing.T) {
	res, err := Generate(newInput(newPrometheus(), monitors(newServiceMonitor("default", "app"))))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(res.Config(), []byte("alerting:")) || len(res.Tail) != 0 {
		t.Errorf("a Prometheus without alerting got an alerting section:\n%s", res.Config())
	}
	res, err = Generate(newInput(kubePrometheus(), monitors(newServiceMonitor("default", "app"))))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(res.Config())
	if i, j := strings.Index(cfg, "\nscrape_configs:\n"), strings.Index(cfg, "\nalerting:\n"); i < 0 || j < i || !strings.HasSuffix(cfg, string(res.Tail)) {
		t.Errorf("alerting is not the section after scrape_configs:\n%s", cfg)
	}
	if res.Size != len(res.Config()) {
		t.Errorf("Size %d, config %d bytes", res.Size, len(res.Config()))
	}
}

func TestAdditionalAlertingConfigsAreAppendedAsGiven(t *testing.T) {
	in := withAdditionalAlerting(newInput(kubePrometheus(), nil), additionalAlertmanagers, additionalAlertRelabel)
	res, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustLoad(t, res.Config())
	if n := len(cfg.AlertingConfig.AlertmanagerConfigs); n != 3 {
		t.Errorf("%d alertmanager configs, want the generated one and two additional", n)
	}
	if n := len(cfg.AlertingConfig.AlertRelabelConfigs); n != 3 {
		t.Errorf("%d alert relabel configs, want the replica label drop and two additional", n)
	}
	var doc struct {
		Alerting struct {
			AlertRelabelConfigs []yaml.MapSlice `yaml:"alert_relabel_configs"`
			Alertmanagers       []yaml.MapSlice `yaml:"alertmanagers"`
		} `yaml:"alerting"`
	}
	if err := yaml.Unmarshal(res.Config(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		got   []yaml.MapSlice
		given string
	}{{doc.Alerting.Alertmanagers[1:], additionalAlertmanagers}, {doc.Alerting.AlertRelabelConfigs[1:], additionalAlertRelabel}} {
		var given []yaml.MapSlice
		if err := yaml.Unmarshal([]byte(c.given), &given); err != nil {
			t.Fatal(err)
		}
		got, _ := yaml.Marshal(c.got)
		want, _ := yaml.Marshal(given)
		if !bytes.Equal(got, want) {
			t.Errorf("additional items changed:\n--- got\n%s--- given\n%s", got, want)
		}
	}
}

func TestAlertingRefusals(t *testing.T) {
	p := func(opts ...promOpt) *monitoringv1.Prometheus { return newPrometheus(opts...) }
	am := alertmanagerEndpoints
	cases := []struct {
		name    string
		in      Input
		reason  string
		message []string // all in the message
	}{
		{"refuses additional alertmanager configs that do not parse",
			withAdditionalAlerting(newInput(kubePrometheus(), nil), "- static_configs: [targets: [a:1]\n", ""),
			ReasonInvalidAdditionalAlertManagerConfigs, []string{"spec.additionalAlertManagerConfigs: not a YAML list of alertmanager configs"}},
		{"refuses one additional alertmanager config instead of a list",
			withAdditionalAlerting(newInput(kubePrometheus(), nil), "static_configs:\n- targets: [a:1]\n", ""),
			ReasonInvalidAdditionalAlertManagerConfigs, []string{"got a mapping", "(- static_configs: ...)"}},
		{"refuses an additional alertmanager config Prometheus refuses, naming the item",
			withAdditionalAlerting(newInput(kubePrometheus(), nil), "- static_configs: [{targets: ['a:1']}]\n- timeout: banana\n", ""),
			ReasonInvalidAdditionalAlertManagerConfigs, []string{"spec.additionalAlertManagerConfigs: item 1: Prometheus refuses it", "banana"}},
		{"refuses additional alert relabel configs that do not parse",
			withAdditionalAlerting(newInput(kubePrometheus(), nil), "", "- action: drop\n  - oops\n"),
			ReasonInvalidAdditionalAlertRelabelConfigs, []string{"spec.additionalAlertRelabelConfigs: not a YAML list of relabel configs"}},
		{"refuses an additional alert relabel config with an unknown action",
			withAdditionalAlerting(newInput(kubePrometheus(), nil), "", "- source_labels: [a]\n  action: explode\n"),
			ReasonInvalidAdditionalAlertRelabelConfigs, []string{"spec.additionalAlertRelabelConfigs: item 0: Prometheus refuses it", "explode"}},
		{"refuses a bad regex in alertRelabelings",
			newInput(p(withAlertmanagers(am("am", "web", func(a *monitoringv1.AlertmanagerEndpoints) {
				a.AlertRelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("drop", []string{"severity"}, "", "(info")}
			}))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0].alertRelabelings[0].regex", "missing closing )"}},
		{"refuses an unknown action in relabelings",
			newInput(p(withAlertmanagers(am("am", "web"), am("am2", "web", func(a *monitoringv1.AlertmanagerEndpoints) {
				a.RelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("explode", nil, "", "")}
			}))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[1].relabelings[0].action"}},
		{"refuses a missing TLS Secret",
			newInput(p(withAlertmanagers(am("am", "web", func(a *monitoringv1.AlertmanagerEndpoints) {
				a.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: tlsFromSecret()}
			}))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0].tlsConfig.ca.secret: Secret monitoring/tls not found"}},
		{"refuses a missing basic auth key",
			newInput(p(withAlertmanagers(am("am", "web", func(a *monitoringv1.AlertmanagerEndpoints) {
				a.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "nope")}
			}))), nil, newSecret("monitoring", "creds", map[string]string{"user": "u"})),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0].basicAuth.password", `key "nope"`}},
		{"refuses two kinds of credentials",
			newInput(p(withAlertmanagers(am("am", "web", func(a *monitoringv1.AlertmanagerEndpoints) {
				a.BearerTokenFile = "/token"
				a.Sigv4 = &monitoringv1.Sigv4{Region: "eu-west-1"}
			}))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0]: bearerTokenFile and sigv4 cannot be set together"}},
		{"refuses a sigv4 access key without a secret key",
			newInput(p(withAlertmanagers(am("am", "web", func(a *monitoringv1.AlertmanagerEndpoints) {
				a.Sigv4 = &monitoringv1.Sigv4{AccessKey: secretPtr("aws", "access")}
			}))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0].sigv4: accessKey and secretKey"}},
		{"refuses an endpoint without a Service name",
			newInput(p(withAlertmanagers(am("", "web"))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0].name"}},
		{"refuses an endpoint without a port",
			newInput(p(withAlertmanagers(am("am", ""))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0].port: the Service port name or number is required"}},
		{"refuses a port number out of range",
			newInput(p(withAlertmanagers(am("am", 70000))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0].port: 70000"}},
		{"refuses a timeout that is not a duration",
			newInput(p(withAlertmanagers(am("am", "web", func(a *monitoringv1.AlertmanagerEndpoints) { a.Timeout = ptr(monitoringv1.Duration("10 s")) }))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0].timeout"}},
		{"refuses an unknown scheme",
			newInput(p(withAlertmanagers(am("am", "web", func(a *monitoringv1.AlertmanagerEndpoints) { a.Scheme = ptr(monitoringv1.Scheme("ftp")) }))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0].scheme"}},
		{"refuses the v1 API for a Prometheus v2",
			newInput(p(withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.Version = "v2.55.1" }), withAlertmanagers(am("am", "web", func(a *monitoringv1.AlertmanagerEndpoints) {
				a.APIVersion = ptr(monitoringv1.AlertmanagerAPIVersion1)
			}))), nil),
			ReasonInvalidAlerting, []string{"spec.alerting.alertmanagers[0].apiVersion", "v1 API"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(tc.in)
			var ae *AlertingError
			if !errors.As(err, &ae) {
				t.Fatalf("Generate = %v, want an *AlertingError", err)
			}
			if ae.Reason != tc.reason {
				t.Errorf("reason %s, want %s (%s)", ae.Reason, tc.reason, ae.Message)
			}
			for _, m := range tc.message {
				if !strings.Contains(ae.Message, m) {
					t.Errorf("message %q lacks %q", ae.Message, m)
				}
			}
		})
	}
}

func TestAlertingAccepts(t *testing.T) {
	cases := []struct {
		name string
		in   Input
		want string // in the config
	}{
		{"writes v2 for the v1 API on Prometheus v3, where the field has no effect",
			newInput(newPrometheus(withAlertmanagers(alertmanagerEndpoints("am", "web", func(a *monitoringv1.AlertmanagerEndpoints) {
				a.APIVersion = ptr(monitoringv1.AlertmanagerAPIVersion1)
			}))), nil), "api_version: v2"},
		{"writes v2 when apiVersion is left out", newInput(newPrometheus(withAlertmanagers(alertmanagerEndpoints("am", "web"))), nil), "api_version: v2"},
		{"skips an optional Secret's missing additional configs", newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.AdditionalAlertManagerConfigs = secretPtr("gone", "x")
		})), nil), "regex: prometheus_replica"},
		{"ships additional configs with discovery this binary does not link",
			withAdditionalAlerting(newInput(newPrometheus(), nil), "- ec2_sd_configs:\n  - region: eu-west-1\n", ""), "ec2_sd_configs:"},
		{"discovers in the Prometheus's namespace by default",
			newInput(newPrometheus(withAlertmanagers(alertmanagerEndpoints("am", "web"))), nil), "names:\n        - monitoring\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Generate(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(res.Config(), []byte("ec2_sd_configs")) {
				mustLoad(t, res.Config())
			}
			if !strings.Contains(string(res.Config()), tc.want) {
				t.Errorf("config lacks %q:\n%s", tc.want, res.Config())
			}
		})
	}
}

// Prometheus needs the right to discover the alertmanagers' endpoints in their namespaces.
func TestAlertmanagerNamespacesAreDiscoveryNamespaces(t *testing.T) {
	res, err := Generate(newInput(newPrometheus(withAlertmanagers(
		alertmanagerEndpoints("am", "web"),
		alertmanagerEndpoints("am", "web", func(am *monitoringv1.AlertmanagerEndpoints) { am.Namespace = ptr("alerting") }),
	)), monitors(newServiceMonitor("apps", "app"))))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"alerting", "apps", "monitoring"}; !slices.Equal(res.Namespaces, want) {
		t.Errorf("Namespaces = %v, want %v", res.Namespaces, want)
	}
}
