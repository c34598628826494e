package scrape

import (
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestSecretKeys(t *testing.T) {
	ref := func(name, key string) *corev1.SecretKeySelector { r := secretRef(name, key); return &r }
	oauth2 := func(prefix string) *monitoringv1.OAuth2 {
		return &monitoringv1.OAuth2{
			ClientID:     monitoringv1.SecretOrConfigMap{Secret: ref(prefix+"-id", "id")},
			ClientSecret: secretRef(prefix+"-secret", "secret"),
			TokenURL:     "https://auth.example.com/token",
			TLSConfig:    &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: ref(prefix+"-oauth-ca", "ca.crt")}},
		}
	}

	tests := []struct {
		name string
		in   Input
		want []string
	}{
		{
			name: "lists nothing when no monitor references a Secret",
			in: newMixedInput(newPrometheus(), monitors(newServiceMonitor("a", "sm")), podMonitors(newPodMonitor("a", "pm")),
				probes(newProbe("a", "probe"))),
			want: []string{},
		},
		{
			name: "lists the Secrets of ServiceMonitor endpoints in the monitor's namespace",
			in: newInput(newPrometheus(), monitors(
				newServiceMonitor("apps", "sm", withEndpoints(
					endpoint(basicAuthFrom("basic", "user", "password")),
					endpoint(authorizationFrom("", "authz", "token")),
					endpoint(withEP(func(ep *monitoringv1.Endpoint) {
						ep.BearerTokenSecret = ref("bearer", "token")
						ep.ProxyConnectHeader = map[string][]corev1.SecretKeySelector{"X-Auth": {secretRef("proxy-header", "v")}}
					})),
					endpoint(withEP(func(ep *monitoringv1.Endpoint) {
						ep.OAuth2 = oauth2("sm")
						ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{KeySecret: ref("tls", "key")}}
					})),
				)),
				nil,
			)),
			want: []string{"apps/authz", "apps/basic", "apps/bearer", "apps/proxy-header", "apps/sm-id", "apps/sm-oauth-ca", "apps/sm-secret", "apps/tls"},
		},
		{
			name: "lists the Secrets of PodMonitor endpoints in the monitor's namespace",
			in: newMixedInput(newPrometheus(), nil, podMonitors(newPodMonitor("pods", "pm", withPodEndpoints(
				podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
					ep.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("basic", "user"), Password: secretRef("basic-pw", "password")}
				})),
				podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
					ep.OAuth2 = oauth2("pm")
					ep.TLSConfig = &monitoringv1.SafeTLSConfig{Cert: monitoringv1.SecretOrConfigMap{Secret: ref("cert", "tls.crt")}}
				})),
			))), nil),
			want: []string{"pods/basic", "pods/basic-pw", "pods/cert", "pods/pm-id", "pods/pm-oauth-ca", "pods/pm-secret"},
		},
		{
			name: "lists the Secrets of Probes, their prober proxy headers included",
			in: newMixedInput(newPrometheus(), nil, nil, probes(
				newProbe("web", "authz", withProbeSpec(func(s *monitoringv1.ProbeSpec) {
					s.Authorization = &monitoringv1.SafeAuthorization{Credentials: ref("probe-token", "token")}
					s.ProberSpec.ProxyConnectHeader = map[string][]corev1.SecretKeySelector{"X-Auth": {secretRef("prober-proxy", "v")}}
				})),
				newProbe("web", "basic", withProbeSpec(func(s *monitoringv1.ProbeSpec) {
					s.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("probe-basic", "user"), Password: secretRef("probe-basic", "password")}
					s.TLSConfig = &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: ref("probe-ca", "ca.crt")}}
				})),
			)),
			want: []string{"web/probe-basic", "web/probe-ca", "web/probe-token", "web/prober-proxy"},
		},
		{
			name: "lists scrape class credentials in the Prometheus's namespace, sorted and unique across kinds",
			in: newMixedInput(
				newPrometheus(withScrapeClass(monitoringv1.ScrapeClass{
					Name:          "authz",
					Authorization: &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{Credentials: ref("class-token", "token")}},
				})),
				monitors(newServiceMonitor("shared", "sm", withEndpoints(endpoint(basicAuthFrom("creds", "user", "password"))))),
				podMonitors(newPodMonitor("shared", "pm", withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
					ep.BearerTokenSecret = ref("creds", "token")
				}))))),
				probes(newProbe("shared", "probe", withProbeSpec(func(s *monitoringv1.ProbeSpec) {
					s.Authorization = &monitoringv1.SafeAuthorization{Credentials: ref("creds", "token")}
				}))),
			),
			want: []string{"monitoring/class-token", "shared/creds"},
		},
		{
			name: "skips nil monitors and references without a Secret name",
			in: newMixedInput(nil, monitors(nil, newServiceMonitor("a", "sm", withEndpoints(endpoint(withEP(func(ep *monitoringv1.Endpoint) {
				ep.BearerTokenSecret = ref("", "token")
			}))))), podMonitors(nil), probes(nil)),
			want: []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := References(tc.in)
			if !slices.Equal(got, tc.want) {
				t.Errorf("References: Secrets %v, want %v", got, tc.want)
			}
		})
	}
}

// Every Secret Generate reads must be one References lists: with only those Secrets given, no
// monitor is rejected for a missing Secret.
func TestSecretKeysCoverWhatGenerateReads(t *testing.T) {
	sms, in := variedMonitors()
	pms, ps := variedPodMonitorsAndProbes()
	in.ServiceMonitors, in.PodMonitors, in.Probes = sms, pms, ps
	in.ScrapeConfigs = variedScrapeConfigs()
	keys, _ := References(in)
	if !slices.Equal(keys, []string{"ns-1/creds"}) {
		t.Fatalf("References: Secrets %v", keys)
	}
	res, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	for _, v := range res.Verdicts {
		if v.Reason == ReasonSecretNotFound || v.Reason == ReasonSecretKeyNotFound {
			t.Errorf("%s %s/%s: %s", v.Kind, v.Namespace, v.Name, v.Message)
		}
	}
}
