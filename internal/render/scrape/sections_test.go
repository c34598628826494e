package scrape

import (
	"errors"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	promdiscovery "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/kubernetes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// sectionsGoldenCases cover the top-level sections and global keys the Prometheus spec sets,
// each at the oldest spec.version that knows every key it writes.
func sectionsGoldenCases() map[string]Input {
	tlsCreds := newSecret("monitoring", "tracing-tls", map[string]string{"ca.crt": testPEM("ca.crt")})
	apiCreds := newSecret("monitoring", "apiserver", map[string]string{"user": "prom", "password": "s3cret", "token": "t0ken"})
	return map[string]Input{
		"sections_tsdb_exemplars_runtime": newInput(newPrometheus(withVersion("v3.13.0"), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.TSDB = &monitoringv1.TSDBSpec{
				OutOfOrderTimeWindow:           duration("30m"),
				StaleSeriesCompactionThreshold: ptr(resource.MustParse("0.5")),
				ChunkEncoding:                  &monitoringv1.ChunkEncodingSpec{Floats: ptr(monitoringv1.ChunkEncodingFloatsXor2)},
			}
			s.Exemplars = &monitoringv1.Exemplars{MaxSize: ptr(int64(100000))}
			s.Runtime = &monitoringv1.RuntimeConfig{GoGC: ptr(int32(75))}
		})), monitors(newServiceMonitor("default", "app"))),

		"sections_out_of_order_window_v2_39": newInput(newPrometheus(withVersion("v2.39.0"), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.TSDB = &monitoringv1.TSDBSpec{OutOfOrderTimeWindow: duration("1h")}
		})), nil),

		"sections_tracing": newInput(newPrometheus(withVersion("v2.34.0"), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.TracingConfig = &monitoringv1.TracingConfig{
				ClientType: ptr("GRPC"), Endpoint: "tempo.tracing.svc:4317", SamplingFraction: ptr(resource.MustParse("0.1")),
				Insecure: ptr(false), Headers: map[string]string{"X-Scope-OrgID": "platform"}, Compression: ptr("Gzip"),
				Timeout: duration("5s"),
				TLSConfig: &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{
					CA: monitoringv1.SecretOrConfigMap{Secret: secretPtr("tracing-tls", "ca.crt")}, ServerName: ptr("tempo")}},
			}
		})), nil, tlsCreds),

		"sections_otlp": newInput(newPrometheus(withVersion("v3.8.0"), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.EnableOTLPReceiver = ptr(true)
			s.OTLP = &monitoringv1.OTLPConfig{
				PromoteAllResourceAttributes:      ptr(true),
				IgnoreResourceAttributes:          []string{"process.pid"},
				TranslationStrategy:               ptr(monitoringv1.NoUTF8EscapingWithSuffixes),
				KeepIdentifyingResourceAttributes: ptr(true),
				ConvertHistogramsToNHCB:           ptr(true),
				PromoteScopeMetadata:              ptr(true),
				LabelNameUnderscoreSanitization:   ptr(true),
			}
		})), nil),

		"sections_otlp_v2_55": newInput(newPrometheus(withVersion("v2.55.0"), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.OTLP = &monitoringv1.OTLPConfig{PromoteResourceAttributes: []string{"k8s.namespace.name", "service.instance.id"}}
		})), nil),

		"sections_log_files": newInput(newPrometheus(withVersion("v2.55.0"), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.QueryLogFile = "query.log"
			s.ScrapeFailureLogFile = ptr("/dev/stdout")
		})), nil),

		"sections_apiserver_basic_auth": newMixedInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.APIServerConfig = &monitoringv1.APIServerConfig{
				Host:      "https://kube.example.com:6443",
				BasicAuth: &monitoringv1.BasicAuth{Username: secretRef("apiserver", "user"), Password: secretRef("apiserver", "password")},
				TLSConfig: &monitoringv1.TLSConfig{TLSFilesConfig: monitoringv1.TLSFilesConfig{CAFile: "/etc/prometheus/secrets/kube-ca/ca.crt"}},
			}
			s.Alerting = &monitoringv1.AlertingSpec{Alertmanagers: []monitoringv1.AlertmanagerEndpoints{{Name: "alertmanager-main", Namespace: ptr("monitoring"), Port: intstr.FromString("web")}}}
		})), monitors(newServiceMonitor("default", "app")), podMonitors(newPodMonitor("default", "app")), nil, apiCreds),

		"sections_apiserver_bearer_token_file": newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.APIServerConfig = &monitoringv1.APIServerConfig{Host: "https://kube.example.com", BearerTokenFile: "/var/run/secrets/remote/token"}
		})), monitors(newServiceMonitor("default", "app"))),
	}
}

func TestSectionsRefusals(t *testing.T) {
	on := func(version string, set func(*monitoringv1.PrometheusSpec)) Input {
		return newInput(newPrometheus(withVersion(version), withPromSpec(set)), nil)
	}
	cases := []struct {
		name    string
		in      Input
		reason  string
		message []string
	}{
		{"refuses outOfOrderTimeWindow before v2.39", on("v2.38.0", func(s *monitoringv1.PrometheusSpec) {
			s.TSDB = &monitoringv1.TSDBSpec{OutOfOrderTimeWindow: duration("1h")}
		}), workload.ReasonUnsupportedField, []string{"spec.tsdb.outOfOrderTimeWindow: requires Prometheus v2.39.0 or later, spec.version is v2.38.0"}},
		{"refuses chunkEncoding before v3.13", on("v3.12.0", func(s *monitoringv1.PrometheusSpec) {
			s.TSDB = &monitoringv1.TSDBSpec{ChunkEncoding: &monitoringv1.ChunkEncodingSpec{Floats: ptr(monitoringv1.ChunkEncodingFloatsXor)}}
		}), workload.ReasonUnsupportedField, []string{"spec.tsdb.chunkEncoding: requires Prometheus v3.13.0"}},
		{"refuses exemplars maxSize before v2.30", on("v2.29.2", func(s *monitoringv1.PrometheusSpec) {
			s.Exemplars = &monitoringv1.Exemplars{MaxSize: ptr(int64(10))}
		}), workload.ReasonUnsupportedField, []string{"spec.exemplars.maxSize: requires Prometheus v2.30.0"}},
		{"refuses tracing before v2.34", on("v2.33.0", func(s *monitoringv1.PrometheusSpec) {
			s.TracingConfig = &monitoringv1.TracingConfig{Endpoint: "tempo:4317"}
		}), workload.ReasonUnsupportedField, []string{"spec.tracingConfig: requires Prometheus v2.34.0"}},
		{"refuses otlp before v2.55", on("v2.54.1", func(s *monitoringv1.PrometheusSpec) {
			s.OTLP = &monitoringv1.OTLPConfig{PromoteResourceAttributes: []string{"a"}}
		}), workload.ReasonUnsupportedField, []string{"spec.otlp: requires Prometheus v2.55.0"}},
		{"refuses otlp translationStrategy before v3.0", on("v2.55.0", func(s *monitoringv1.PrometheusSpec) {
			s.OTLP = &monitoringv1.OTLPConfig{TranslationStrategy: ptr(monitoringv1.NoTranslation)}
		}), workload.ReasonUnsupportedField, []string{"spec.otlp.translationStrategy: requires Prometheus v3.0.0"}},
		{"refuses runtime goGC before v2.53", on("v2.52.0", func(s *monitoringv1.PrometheusSpec) {
			s.Runtime = &monitoringv1.RuntimeConfig{GoGC: ptr(int32(50))}
		}), workload.ReasonUnsupportedField, []string{"spec.runtime.goGC: requires Prometheus v2.53.0"}},
		{"refuses scrapeFailureLogFile before v2.55", on("v2.54.0", func(s *monitoringv1.PrometheusSpec) { s.ScrapeFailureLogFile = ptr("/dev/stdout") }),
			workload.ReasonUnsupportedField, []string{"spec.scrapeFailureLogFile: requires Prometheus v2.55.0"}},
		{"refuses a tracing endpoint that is missing", on("v3.0.0", func(s *monitoringv1.PrometheusSpec) { s.TracingConfig = &monitoringv1.TracingConfig{} }),
			workload.ReasonInvalidSpec, []string{"spec.tracingConfig.endpoint: is required"}},
		{"refuses a sampling fraction above 1", on("v3.0.0", func(s *monitoringv1.PrometheusSpec) {
			s.TracingConfig = &monitoringv1.TracingConfig{Endpoint: "t:1", SamplingFraction: ptr(resource.MustParse("2"))}
		}), workload.ReasonInvalidSpec, []string{"spec.tracingConfig.samplingFraction"}},
		{"refuses a tracing CA from a missing Secret", on("v3.0.0", func(s *monitoringv1.PrometheusSpec) {
			s.TracingConfig = &monitoringv1.TracingConfig{Endpoint: "t:1", TLSConfig: &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{
				CA: monitoringv1.SecretOrConfigMap{Secret: secretPtr("gone", "ca.crt")}}}}
		}), ReasonSecretNotFound, []string{"spec.tracingConfig.tlsConfig.ca.secret: Secret monitoring/gone not found"}},
		{"refuses promoteAllResourceAttributes with a promote list", on("v3.5.0", func(s *monitoringv1.PrometheusSpec) {
			s.OTLP = &monitoringv1.OTLPConfig{PromoteAllResourceAttributes: ptr(true), PromoteResourceAttributes: []string{"a"}}
		}), workload.ReasonInvalidSpec, []string{"spec.otlp:"}},
		{"refuses a stale series threshold above 1", on("v3.10.0", func(s *monitoringv1.PrometheusSpec) {
			s.TSDB = &monitoringv1.TSDBSpec{StaleSeriesCompactionThreshold: ptr(resource.MustParse("1.5"))}
		}), workload.ReasonInvalidSpec, []string{"spec.tsdb.staleSeriesCompactionThreshold"}},
		{"refuses an API server without a host", on("v3.0.0", func(s *monitoringv1.PrometheusSpec) { s.APIServerConfig = &monitoringv1.APIServerConfig{} }),
			workload.ReasonInvalidSpec, []string{"spec.apiserverConfig.host: is required"}},
		{"refuses two kinds of API server credentials", on("v3.0.0", func(s *monitoringv1.PrometheusSpec) {
			s.APIServerConfig = &monitoringv1.APIServerConfig{Host: "https://k", BearerToken: "x", BearerTokenFile: "/t"}
		}), workload.ReasonInvalidSpec, []string{"spec.apiserverConfig: bearerToken and bearerTokenFile cannot be set together"}},
		{"refuses API server credentials from a missing Secret", on("v3.0.0", func(s *monitoringv1.PrometheusSpec) {
			s.APIServerConfig = &monitoringv1.APIServerConfig{Host: "https://k", BasicAuth: &monitoringv1.BasicAuth{Username: secretRef("gone", "u"), Password: secretRef("gone", "p")}}
		}), ReasonSecretNotFound, []string{"spec.apiserverConfig.basicAuth.username: Secret monitoring/gone not found"}},
	}
	webTLS := func(certKey string, secrets ...*corev1.Secret) Input {
		return newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Web = &monitoringv1.PrometheusWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
				Cert:      monitoringv1.SecretOrConfigMap{Secret: secretPtr("web-tls", certKey)},
				KeySecret: secretRef("web-tls", "tls.key"),
			}}}
		})), nil, secrets...)
	}
	webSecret := newSecret("monitoring", "web-tls", map[string]string{
		"tls.crt": testPEM("client.crt"), "tls.key": testPEM("client.key"), "other.crt": testPEM("ca.crt")})
	cases = append(cases, []struct {
		name    string
		in      Input
		reason  string
		message []string
	}{
		{"refuses web TLS from a missing Secret, which would leave the pod stuck", webTLS("tls.crt"),
			ReasonSecretNotFound, []string{"spec.web.tlsConfig.cert.secret: Secret monitoring/web-tls not found"}},
		{"refuses a web certificate that does not match its key", webTLS("other.crt", webSecret),
			workload.ReasonInvalidSpec, []string{"spec.web.tlsConfig: the certificate and key do not make a key pair"}},
	}...)
	if _, err := Generate(webTLS("tls.crt", webSecret)); err != nil {
		t.Errorf("a matching web certificate and key: %v", err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(tc.in)
			var se *workload.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Generate = %v, want a *workload.SpecError", err)
			}
			if se.Reason != tc.reason {
				t.Errorf("reason = %q, want %q (%s)", se.Reason, tc.reason, se.Message)
			}
			for _, m := range tc.message {
				if !strings.Contains(se.Message, m) {
					t.Errorf("message %q does not contain %q", se.Message, m)
				}
			}
		})
	}
}

// TestAPIServerConfigReachesEveryKubernetesDiscovery checks the api_server and credentials on
// every kubernetes_sd_configs entry of monitors and alertmanagers, as Prometheus loads them.
func TestAPIServerConfigReachesEveryKubernetesDiscovery(t *testing.T) {
	in := sectionsGoldenCases()["sections_apiserver_basic_auth"]
	res, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustLoad(t, res.Config())
	n := 0
	for _, sc := range cfg.ScrapeConfigs {
		for _, sd := range sc.ServiceDiscoveryConfigs {
			checkAPIServer(t, sc.JobName, sd)
			n++
		}
	}
	for _, am := range cfg.AlertingConfig.AlertmanagerConfigs {
		for _, sd := range am.ServiceDiscoveryConfigs {
			checkAPIServer(t, "alertmanagers", sd)
			n++
		}
	}
	if n != 3 {
		t.Errorf("checked %d discovery configs, want 3 (ServiceMonitor, PodMonitor, alertmanagers)", n)
	}
}

func checkAPIServer(t *testing.T, where string, sd promdiscovery.Config) {
	t.Helper()
	k, ok := sd.(*kubernetes.SDConfig)
	if !ok {
		t.Errorf("%s: discovery %T, want kubernetes", where, sd)
		return
	}
	if got := k.APIServer.String(); got != "https://kube.example.com:6443" {
		t.Errorf("%s: api_server = %q", where, got)
	}
	if ba := k.HTTPClientConfig.BasicAuth; ba == nil || ba.Username != "prom" || string(ba.Password) != "s3cret" {
		t.Errorf("%s: basic_auth = %+v, want the Secret's user and password", where, ba)
	}
	if k.HTTPClientConfig.TLSConfig.CAFile != "/etc/prometheus/secrets/kube-ca/ca.crt" {
		t.Errorf("%s: tls_config.ca_file = %q", where, k.HTTPClientConfig.TLSConfig.CAFile)
	}
}
