package scrape

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	commoncfg "github.com/prometheus/common/config"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testPEM reads a test certificate or key from testdata/tls: ca.crt, client.crt (signed by ca)
// and client.key. They exist for these tests only.
func testPEM(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "tls", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func newConfigMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func configMapRef(name, key string) *corev1.ConfigMapKeySelector {
	return &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func secretPtr(name, key string) *corev1.SecretKeySelector {
	ref := secretRef(name, key)
	return &ref
}

// withConfigMaps adds ConfigMaps to an input built by newInput or newMixedInput.
func withConfigMaps(in Input, cms ...*corev1.ConfigMap) Input {
	if in.ConfigMaps == nil {
		in.ConfigMaps = map[string]*corev1.ConfigMap{}
	}
	for _, cm := range cms {
		in.ConfigMaps[cm.Namespace+"/"+cm.Name] = cm
	}
	return in
}

// tlsSecret and tlsConfigMap hold the test CA, client certificate and key in namespace ns.
func tlsSecret(ns string) *corev1.Secret {
	return newSecret(ns, "tls", map[string]string{"ca.crt": testPEM("ca.crt"), "tls.crt": testPEM("client.crt"), "tls.key": testPEM("client.key")})
}

func tlsConfigMap(ns string) *corev1.ConfigMap {
	return newConfigMap(ns, "tls", map[string]string{"ca.crt": testPEM("ca.crt"), "tls.crt": testPEM("client.crt")})
}

// tlsFromSecret is a client TLS config whose CA, certificate and key all come from tlsSecret.
func tlsFromSecret() monitoringv1.SafeTLSConfig {
	return monitoringv1.SafeTLSConfig{
		CA:         monitoringv1.SecretOrConfigMap{Secret: secretPtr("tls", "ca.crt")},
		Cert:       monitoringv1.SecretOrConfigMap{Secret: secretPtr("tls", "tls.crt")},
		KeySecret:  secretPtr("tls", "tls.key"),
		ServerName: ptr("app.default.svc"),
		MinVersion: ptr(monitoringv1.TLSVersion12),
	}
}

// tlsFromConfigMap takes the CA and certificate from tlsConfigMap and the key from tlsSecret.
func tlsFromConfigMap() monitoringv1.SafeTLSConfig {
	return monitoringv1.SafeTLSConfig{
		CA:        monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("tls", "ca.crt")},
		Cert:      monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("tls", "tls.crt")},
		KeySecret: secretPtr("tls", "tls.key"),
	}
}

// oauth2From reads the client ID from a Secret or ConfigMap named "oauth" (key "id") and the
// client secret from the Secret "oauth" (key "secret").
func oauth2From(clientID monitoringv1.SecretOrConfigMap) *monitoringv1.OAuth2 {
	return &monitoringv1.OAuth2{
		ClientID:       clientID,
		ClientSecret:   secretRef("oauth", "secret"),
		TokenURL:       "https://auth.example.com/token",
		Scopes:         []string{"metrics:read"},
		EndpointParams: map[string]string{"audience": "prometheus"},
	}
}

func oauthSecret(ns string) *corev1.Secret {
	return newSecret(ns, "oauth", map[string]string{"id": "client-from-secret", "secret": "s3cret"})
}

func oauthConfigMap(ns string) *corev1.ConfigMap {
	return newConfigMap(ns, "oauth", map[string]string{"id": "client-from-configmap"})
}

// credentialGoldenCases are the golden cases for credentials read from Secrets and ConfigMaps.
func credentialGoldenCases() map[string]Input {
	return map[string]Input{
		"tls_from_secret": newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
			ep.Scheme = ptr(monitoringv1.SchemeHTTPS)
			ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: tlsFromSecret()}
		}))))), tlsSecret("default")),

		"tls_from_configmap": withConfigMaps(newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
			ep.Scheme = ptr(monitoringv1.SchemeHTTPS)
			ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: tlsFromConfigMap()}
		}))))), tlsSecret("default")), tlsConfigMap("default")),

		"oauth2_client_id_from_secret_and_configmap": withConfigMaps(newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(
			endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{Secret: secretPtr("oauth", "id")})
			})),
			endpoint(port("admin"), withEP(func(ep *monitoringv1.Endpoint) {
				ep.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("oauth", "id")})
				ep.OAuth2.TLSConfig = &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("tls", "ca.crt")}}
				ep.OAuth2.ProxyURL = ptr("http://proxy.internal:3128")
			})),
		))), oauthSecret("default")), oauthConfigMap("default"), tlsConfigMap("default")),

		"podmonitor_tls_and_oauth2": withConfigMaps(newMixedInput(newPrometheus(), nil, podMonitors(newPodMonitor("default", "app", withPodEndpoints(
			podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
				ep.Scheme = ptr(monitoringv1.SchemeHTTPS)
				tls := tlsFromConfigMap()
				ep.TLSConfig = &tls
				ep.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("oauth", "id")})
			})),
		))), nil, tlsSecret("default"), oauthSecret("default")), tlsConfigMap("default"), oauthConfigMap("default")),

		"probe_tls_and_oauth2": withConfigMaps(newMixedInput(newPrometheus(), nil, nil, probes(newProbe("default", "site", withProbeSpec(func(s *monitoringv1.ProbeSpec) {
			s.ProberSpec.Scheme = ptr(monitoringv1.SchemeHTTPS)
			tls := tlsFromSecret()
			s.TLSConfig = &tls
			s.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("oauth", "id")})
		}))), tlsSecret("default"), oauthSecret("default")), oauthConfigMap("default")),
	}
}

func TestGenerateCredentialVerdicts(t *testing.T) {
	tlsEndpoint := func(tls monitoringv1.SafeTLSConfig) smOpt {
		return withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
			ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: tls}
		})))
	}
	sm := func(opts ...smOpt) []*monitoringv1.ServiceMonitor {
		return monitors(newServiceMonitor("default", "app", opts...))
	}
	job := func(t *testing.T, res *Result) *scrapeJob {
		return jobNamed(t, parse(t, res.Config()), "serviceMonitor/default/app/0")
	}

	tests := []verdictCase{
		{
			name: "inlines the CA, client certificate and key from a Secret",
			in:   newInput(newPrometheus(), sm(tlsEndpoint(tlsFromSecret())), tlsSecret("default")),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				tls := job(t, res).TLSConfig
				if tls == nil || tls.CA != testPEM("ca.crt") || tls.Cert != testPEM("client.crt") || tls.Key != testPEM("client.key") {
					t.Fatalf("tls_config = %+v", tls)
				}
				if tls.CAFile != "" || tls.CertFile != "" || tls.KeyFile != "" || tls.ServerName != "app.default.svc" || tls.MinVersion != "TLS12" {
					t.Errorf("tls_config = %+v", tls)
				}
			},
		},
		{
			name: "inlines the CA and client certificate from a ConfigMap",
			in:   withConfigMaps(newInput(newPrometheus(), sm(tlsEndpoint(tlsFromConfigMap())), tlsSecret("default")), tlsConfigMap("default")),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if tls := job(t, res).TLSConfig; tls == nil || tls.CA != testPEM("ca.crt") || tls.Cert != testPEM("client.crt") || tls.Key != testPEM("client.key") {
					t.Errorf("tls_config = %+v", tls)
				}
			},
		},
		{
			name: "reads a ConfigMap's binaryData",
			in: withConfigMaps(newInput(newPrometheus(), sm(tlsEndpoint(monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("bin", "ca.crt")}}))),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bin"}, BinaryData: map[string][]byte{"ca.crt": []byte(testPEM("ca.crt"))}}),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if tls := job(t, res).TLSConfig; tls == nil || tls.CA != testPEM("ca.crt") {
					t.Errorf("tls_config = %+v", tls)
				}
			},
		},
		{
			name: "rejects a ServiceMonitor whose CA ConfigMap is missing",
			in:   newInput(newPrometheus(), sm(tlsEndpoint(tlsFromConfigMap())), tlsSecret("default")),
			want: []wantVerdict{{key: "default/app", reason: ReasonConfigMapNotFound, message: "endpoints[0].tlsConfig.ca.configMap: ConfigMap default/tls not found"}},
		},
		{
			name: "rejects a ServiceMonitor whose CA ConfigMap lacks the key",
			in: withConfigMaps(newInput(newPrometheus(), sm(tlsEndpoint(tlsFromConfigMap())), tlsSecret("default")),
				newConfigMap("default", "tls", map[string]string{"tls.crt": testPEM("client.crt")})),
			want: []wantVerdict{{key: "default/app", reason: ReasonConfigMapKeyNotFound, message: `endpoints[0].tlsConfig.ca.configMap: key "ca.crt" not found in ConfigMap default/tls`}},
		},
		{
			name: "rejects a ServiceMonitor whose client key Secret lacks the key",
			in: withConfigMaps(newInput(newPrometheus(), sm(tlsEndpoint(tlsFromConfigMap())), newSecret("default", "tls", map[string]string{"other": "x"})),
				tlsConfigMap("default")),
			want: []wantVerdict{{key: "default/app", reason: ReasonSecretKeyNotFound, message: `endpoints[0].tlsConfig.keySecret: key "tls.key" not found in Secret default/tls`}},
		},
		{
			name: "looks ConfigMaps up in the monitor's own namespace",
			in: withConfigMaps(newInput(newPrometheus(), monitors(newServiceMonitor("other", "app", tlsEndpoint(tlsFromConfigMap()))), tlsSecret("other")),
				tlsConfigMap("default")),
			want: []wantVerdict{{key: "other/app", reason: ReasonConfigMapNotFound, message: "endpoints[0].tlsConfig.ca.configMap: ConfigMap other/tls not found"}},
		},
		{
			name: "accepts an optional CA ConfigMap that does not exist and writes no CA",
			in: newInput(newPrometheus(), sm(tlsEndpoint(func() monitoringv1.SafeTLSConfig {
				ref := configMapRef("missing", "ca.crt")
				ref.Optional = ptr(true)
				return monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: ref}, ServerName: ptr("app")}
			}()))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if tls := job(t, res).TLSConfig; tls == nil || tls.CA != "" || tls.ServerName != "app" {
					t.Errorf("tls_config = %+v", tls)
				}
			},
		},
		{
			name: "rejects a ConfigMap reference without a key",
			in:   newInput(newPrometheus(), sm(tlsEndpoint(monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("tls", "")}}))),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, message: "endpoints[0].tlsConfig.ca.configMap: the ConfigMap key is empty"}},
		},
		{
			name: "rejects a CA that is not a PEM certificate",
			in: newInput(newPrometheus(), sm(tlsEndpoint(monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: secretPtr("tls", "tls.key")}})),
				tlsSecret("default")),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{"endpoints[0].tlsConfig.ca: unable to use specified CA cert"}}},
		},
		{
			name: "rejects a client certificate that does not match its key",
			in: newInput(newPrometheus(), sm(tlsEndpoint(monitoringv1.SafeTLSConfig{
				Cert:      monitoringv1.SecretOrConfigMap{Secret: secretPtr("tls", "tls.crt")},
				KeySecret: secretPtr("tls", "wrong.key"),
			})), func() *corev1.Secret {
				s := tlsSecret("default")
				s.Data["wrong.key"] = []byte(testPEM("client.crt"))
				return s
			}()),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{"endpoints[0].tlsConfig: the client certificate and key cannot be used together"}}},
			check: func(t *testing.T, res *Result) {
				if strings.Contains(res.Verdicts[0].Message, "BEGIN") {
					t.Errorf("the message quotes PEM material: %s", res.Verdicts[0].Message)
				}
			},
		},
		{
			name: "rejects a client certificate without a key",
			in:   newInput(newPrometheus(), sm(tlsEndpoint(monitoringv1.SafeTLSConfig{Cert: monitoringv1.SecretOrConfigMap{Secret: secretPtr("tls", "tls.crt")}})), tlsSecret("default")),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{"endpoints[0]: tlsConfig: cannot specify client cert without client key"}}},
		},
		{
			name: "rejects a CA given both as a file and from a Secret",
			in: newInput(newPrometheus(), sm(withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.TLSConfig = &monitoringv1.TLSConfig{
					SafeTLSConfig:  monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: secretPtr("tls", "ca.crt")}},
					TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/ca.crt"},
				}
			})))), tlsSecret("default")),
			want: []wantVerdict{{key: "default/app", reason: ReasonInvalidConfig, msgContains: []string{"cannot specify both 'caFile' and 'ca'"}}},
		},
		{
			name: "prefers the endpoint's inline CA and certificate over its scrape class's files",
			in: newInput(newPrometheus(withScrapeClass(monitoringv1.ScrapeClass{
				Name:      "mesh",
				Default:   ptr(true),
				TLSConfig: &monitoringv1.TLSConfig{TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/mesh/ca.pem", CertFile: "/etc/mesh/cert.pem", KeyFile: "/etc/mesh/key.pem"}},
			})), sm(tlsEndpoint(tlsFromSecret())), tlsSecret("default")),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				tls := job(t, res).TLSConfig
				if tls == nil || tls.CA == "" || tls.Cert == "" || tls.Key == "" || tls.CAFile != "" || tls.CertFile != "" || tls.KeyFile != "" {
					t.Errorf("tls_config = %+v", tls)
				}
			},
		},
		{
			name: "accepts inline TLS material when the Prometheus denies arbitrary file access",
			in: newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.ArbitraryFSAccessThroughSMs.Deny = true })),
				sm(tlsEndpoint(tlsFromSecret())), tlsSecret("default")),
			want: []wantVerdict{{key: "default/app"}},
		},
		{
			name: "inlines an OAuth2 client ID from a ConfigMap and its token server's CA",
			in: withConfigMaps(newInput(newPrometheus(), sm(withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("oauth", "id")})
				ep.OAuth2.TLSConfig = &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("tls", "ca.crt")}}
			})))), oauthSecret("default")), oauthConfigMap("default"), tlsConfigMap("default")),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				o := job(t, res).OAuth2
				if o == nil || o.ClientID != "client-from-configmap" || o.ClientSecret != "s3cret" || o.TLSConfig == nil || o.TLSConfig.CA != testPEM("ca.crt") {
					t.Errorf("oauth2 = %+v", o)
				}
			},
		},
		{
			name: "rejects a ServiceMonitor whose OAuth2 client ID ConfigMap lacks the key",
			in: withConfigMaps(newInput(newPrometheus(), sm(withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("oauth", "client")})
			})))), oauthSecret("default")), oauthConfigMap("default")),
			want: []wantVerdict{{key: "default/app", reason: ReasonConfigMapKeyNotFound, message: `endpoints[0].oauth2.clientId.configMap: key "client" not found in ConfigMap default/oauth`}},
		},
		{
			name: "rejects a ServiceMonitor whose OAuth2 token server CA Secret is missing",
			in: newInput(newPrometheus(), sm(withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{Secret: secretPtr("oauth", "id")})
				ep.OAuth2.TLSConfig = &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: secretPtr("oauth-ca", "ca.crt")}}
			})))), oauthSecret("default")),
			want: []wantVerdict{{key: "default/app", reason: ReasonSecretNotFound, message: "endpoints[0].oauth2.tlsConfig.ca.secret: Secret default/oauth-ca not found"}},
		},
		{
			name: "rejects a PodMonitor whose CA ConfigMap is missing",
			in: newMixedInput(newPrometheus(), nil, podMonitors(newPodMonitor("default", "app", withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
				tls := tlsFromConfigMap()
				ep.TLSConfig = &tls
			}))))), nil, tlsSecret("default")),
			want: []wantVerdict{{key: "default/app", reason: ReasonConfigMapNotFound, message: "podMetricsEndpoints[0].tlsConfig.ca.configMap: ConfigMap default/tls not found"}},
		},
		{
			name: "rejects a Probe whose OAuth2 client ID ConfigMap is missing",
			in: newMixedInput(newPrometheus(), nil, nil, probes(newProbe("default", "site", withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("oauth", "id")})
			}))), oauthSecret("default")),
			want: []wantVerdict{{key: "default/site", reason: ReasonConfigMapNotFound, message: "oauth2.clientId.configMap: ConfigMap default/oauth not found"}},
		},
	}
	runVerdictCases(t, tests)
}

// The inlined material must be what Prometheus builds its scrape client from: load the generated
// config and build the TLS config of the job the way Prometheus does.
func TestInlinedTLSMaterialBuildsAClient(t *testing.T) {
	res, err := Generate(newInput(newPrometheus(), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
		ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: tlsFromSecret()}
	}))))), tlsSecret("default")))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	cfg := mustLoad(t, res.Config())
	if len(cfg.ScrapeConfigs) != 1 {
		t.Fatalf("got %d jobs", len(cfg.ScrapeConfigs))
	}
	tlsCfg, err := commoncfg.NewTLSConfig(&cfg.ScrapeConfigs[0].HTTPClientConfig.TLSConfig)
	if err != nil {
		t.Fatalf("Prometheus cannot build the TLS client: %v", err)
	}
	if tlsCfg.RootCAs == nil || tlsCfg.GetClientCertificate == nil {
		t.Fatalf("TLS client lacks the CA or the client certificate")
	}
	cert, err := tlsCfg.GetClientCertificate(nil)
	if err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	block, _ := pem.Decode([]byte(testPEM("client.crt")))
	want, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.Certificate) == 0 || !want.Equal(mustParseCert(t, cert.Certificate[0])) {
		t.Errorf("the client presents another certificate")
	}
}

func mustParseCert(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConfigMapKeys(t *testing.T) {
	in := newMixedInput(newPrometheus(),
		monitors(newServiceMonitor("apps", "sm", withEndpoints(
			endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: tlsFromConfigMap()}
			})),
			endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("oauth", "id")})
				ep.OAuth2.TLSConfig = &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("oauth-ca", "ca.crt")}}
			})),
		))),
		podMonitors(nil, newPodMonitor("pods", "pm", withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
			ep.TLSConfig = &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("pm-ca", "ca.crt")}}
		}))))),
		probes(newProbe("web", "probe", withProbeSpec(func(s *monitoringv1.ProbeSpec) {
			s.TLSConfig = &monitoringv1.SafeTLSConfig{Cert: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("probe-cert", "tls.crt")}}
			s.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("oauth", "id")})
		})), newProbe("web", "unnamed", withProbeSpec(func(s *monitoringv1.ProbeSpec) {
			s.TLSConfig = &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("", "ca.crt")}}
		}))),
	)
	want := []string{"apps/oauth", "apps/oauth-ca", "apps/tls", "pods/pm-ca", "web/oauth", "web/probe-cert"}
	if _, got := References(in); !slices.Equal(got, want) {
		t.Errorf("References: ConfigMaps %v, want %v", got, want)
	}
	// Secrets and ConfigMaps of the same SecretOrConfigMap fields are listed apart.
	if got, _ := References(in); !slices.Equal(got, []string{"apps/oauth", "apps/tls", "web/oauth"}) {
		t.Errorf("References: Secrets %v", got)
	}
}
