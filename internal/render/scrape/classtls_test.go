package scrape

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	commoncfg "github.com/prometheus/common/config"
)

// A scrape class's TLS config, as the existing operator applies it: to an endpoint without a
// TLS config of its own the whole of it (insecureSkipVerify, serverName, CA, certificate and key
// from the Prometheus's namespace, versions); to one with its own only the file paths it leaves
// unset. Each case's config is loaded by Prometheus's loader, and the TLS settings are read from
// what the loader made of it.
func TestScrapeClassTLS(t *testing.T) {
	class := func(tls monitoringv1.TLSConfig) promOpt {
		return withScrapeClass(monitoringv1.ScrapeClass{Name: "mesh", Default: ptr(true), TLSConfig: &tls})
	}
	fromSecret := monitoringv1.TLSConfig{SafeTLSConfig: tlsFromSecret()}
	skipVerify := monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{InsecureSkipVerify: ptr(true)}}
	https := withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) { ep.Scheme = ptr(monitoringv1.SchemeHTTPS) })))
	// loaded is the TLS config Prometheus's loader reads for the job.
	loaded := func(t *testing.T, res *Result, job string) commoncfg.TLSConfig {
		t.Helper()
		for _, sc := range mustLoad(t, res.Config()).ScrapeConfigs {
			if sc.JobName == job {
				return sc.HTTPClientConfig.TLSConfig
			}
		}
		t.Fatalf("no job %q in\n%s", job, res.Config())
		return commoncfg.TLSConfig{}
	}
	const smJob = "serviceMonitor/default/app/0"

	runVerdictCases(t, []verdictCase{
		{
			name: "gives a ServiceMonitor without a TLS config its class's insecureSkipVerify",
			in:   newInput(newPrometheus(class(skipVerify)), monitors(newServiceMonitor("default", "app", https))),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if tls := loaded(t, res, smJob); !tls.InsecureSkipVerify {
					t.Errorf("tls_config = %+v, want insecure_skip_verify from the class", tls)
				}
			},
		},
		{
			name: "inlines the class's CA, certificate and key from Secrets in the Prometheus's namespace, with its serverName and minVersion",
			in:   newInput(newPrometheus(class(fromSecret)), monitors(newServiceMonitor("default", "app", https)), tlsSecret("monitoring")),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				tls := loaded(t, res, smJob)
				if tls.CA != testPEM("ca.crt") || tls.Cert != testPEM("client.crt") || string(tls.Key) != testPEM("client.key") {
					t.Errorf("ca/cert/key not inlined from the class's Secret: %+v", tls)
				}
				if tls.ServerName != "app.default.svc" || tls.MinVersion.String() != "TLS12" {
					t.Errorf("server_name %q min_version %v", tls.ServerName, tls.MinVersion)
				}
			},
		},
		{
			name: "inlines the class's CA and certificate from ConfigMaps",
			in: withConfigMaps(newInput(newPrometheus(class(monitoringv1.TLSConfig{SafeTLSConfig: tlsFromConfigMap()})),
				monitors(newServiceMonitor("default", "app", https)), tlsSecret("monitoring")), tlsConfigMap("monitoring")),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				if tls := loaded(t, res, smJob); tls.CA != testPEM("ca.crt") || tls.Cert != testPEM("client.crt") {
					t.Errorf("tls_config = %+v", tls)
				}
			},
		},
		{
			name: "rejects a monitor of a class whose CA Secret is missing, naming the class",
			in:   newInput(newPrometheus(class(fromSecret)), monitors(newServiceMonitor("default", "app", https)), tlsSecret("default")),
			want: []wantVerdict{{key: "default/app", reason: ReasonSecretNotFound, message: `scrapeClass "mesh" tlsConfig.ca.secret: Secret monitoring/tls not found`}},
		},
		{
			name: "keeps an endpoint's own TLS config, taking from the class only the files it leaves unset",
			in: newInput(newPrometheus(class(monitoringv1.TLSConfig{
				SafeTLSConfig:  monitoringv1.SafeTLSConfig{InsecureSkipVerify: ptr(true), ServerName: ptr("class")},
				TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/mesh/ca.pem", CertFile: "/etc/mesh/cert.pem", KeyFile: "/etc/mesh/key.pem"},
			})), monitors(newServiceMonitor("default", "app", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{
					ServerName: ptr("app"),
					CA:         monitoringv1.SecretOrConfigMap{Secret: secretPtr("tls", "ca.crt")},
				}}
			}))))), tlsSecret("default")),
			want: []wantVerdict{{key: "default/app"}},
			check: func(t *testing.T, res *Result) {
				tls := loaded(t, res, smJob)
				if tls.InsecureSkipVerify || tls.ServerName != "app" || tls.CA != testPEM("ca.crt") || tls.CAFile != "" {
					t.Errorf("the endpoint's own settings are not kept: %+v", tls)
				}
				if tls.CertFile != "/etc/mesh/cert.pem" || tls.KeyFile != "/etc/mesh/key.pem" {
					t.Errorf("cert_file %q key_file %q, want the class's", tls.CertFile, tls.KeyFile)
				}
			},
		},
		{
			name: "gives a PodMonitor with an empty TLS config, a Probe and a ScrapeConfig the class's TLS config",
			in: withScrapeConfigs(newMixedInput(newPrometheus(class(skipVerify)), nil,
				podMonitors(newPodMonitor("default", "pods", withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
					ep.TLSConfig = &monitoringv1.SafeTLSConfig{}
				}))))),
				probes(newProbe("default", "blackbox", withStaticTargets([]string{"example.com"}, nil)))),
				newScrapeConfig("default", "static", withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
					s.StaticConfigs = []monitoringv1alpha1.StaticConfig{{Targets: []monitoringv1alpha1.Target{"host:9100"}}}
				}))),
			want: []wantVerdict{{key: "default/pods"}, {key: "default/blackbox"}, {key: "default/static"}},
			check: func(t *testing.T, res *Result) {
				for _, job := range []string{"podMonitor/default/pods/0", "probe/default/blackbox", "scrapeConfig/default/static"} {
					if tls := loaded(t, res, job); !tls.InsecureSkipVerify {
						t.Errorf("%s: tls_config = %+v, want the class's", job, tls)
					}
				}
			},
		},
		{
			name: "leaves out the class's max_version for a Prometheus older than v2.41, with a warning",
			in: newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.Version = "v2.40.7" }),
				class(monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{InsecureSkipVerify: ptr(true), MaxVersion: ptr(monitoringv1.TLSVersion13)}})),
				monitors(newServiceMonitor("default", "app", https))),
			want: []wantVerdict{{key: "default/app", msgContains: []string{"tls_config.max_version (needs v2.41)"}}},
			check: func(t *testing.T, res *Result) {
				if tls := loaded(t, res, smJob); !tls.InsecureSkipVerify || tls.MaxVersion != 0 {
					t.Errorf("tls_config = %+v", tls)
				}
			},
		},
	})
}
