package scrape

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// Every reference Generate follows must be listed by References: each reference
// below names its own object, and with only the listed objects given, every monitor of every
// kind is accepted.
func TestReferenceKeysCoverWhatGenerateReads(t *testing.T) {
	sec := func(name string) *corev1.SecretKeySelector { return secretPtr(name, "v") }
	tls := func(prefix string) *monitoringv1.SafeTLSConfig {
		return &monitoringv1.SafeTLSConfig{
			CA:        monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef(prefix+"-ca", "ca.crt")},
			Cert:      monitoringv1.SecretOrConfigMap{Secret: secretPtr(prefix+"-cert", "tls.crt")},
			KeySecret: secretPtr(prefix+"-key", "tls.key"),
		}
	}
	oauth := func(prefix string) *monitoringv1.OAuth2 {
		return &monitoringv1.OAuth2{
			ClientID:     monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef(prefix+"-oauth-id", "v")},
			ClientSecret: secretRef(prefix+"-oauth-secret", "v"),
			TokenURL:     "https://auth.example.com/token",
			TLSConfig:    tls(prefix + "-oauth"),
			ProxyConfig:  proxyWithHeader(prefix + "-oauth-proxy"),
		}
	}
	basic := func(prefix string) *monitoringv1.BasicAuth {
		return &monitoringv1.BasicAuth{Username: secretRef(prefix+"-user", "v"), Password: secretRef(prefix+"-password", "v")}
	}

	p := newPrometheus(withScrapeClass(monitoringv1.ScrapeClass{
		Name:          "default",
		Default:       ptr(true),
		Authorization: &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{Credentials: sec("class-token")}},
		TLSConfig:     &monitoringv1.TLSConfig{SafeTLSConfig: *tls("class")},
	}), withAlertmanagers(
		alertmanagerEndpoints("am0", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
			am.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: *tls("am0")}
			am.BasicAuth = basic("am0")
			am.ProxyConfig = proxyWithHeader("am0-proxy")
		}),
		alertmanagerEndpoints("am1", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
			am.Authorization = &monitoringv1.SafeAuthorization{Credentials: sec("am1-authz")}
		}),
		alertmanagerEndpoints("am2", "web", func(am *monitoringv1.AlertmanagerEndpoints) {
			am.Sigv4 = &monitoringv1.Sigv4{AccessKey: sec("am2-access"), SecretKey: sec("am2-secret")}
		}),
	))
	sm := newServiceMonitor("sm-ns", "sm", withEndpoints(
		endpoint(withEP(func(ep *monitoringv1.Endpoint) {
			ep.BasicAuth = basic("ep0")
			ep.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: *tls("ep0")}
			ep.ProxyConfig = proxyWithHeader("ep0-proxy")
		})),
		endpoint(withEP(func(ep *monitoringv1.Endpoint) { ep.OAuth2 = oauth("ep1") })),
		endpoint(withEP(func(ep *monitoringv1.Endpoint) { ep.BearerTokenSecret = sec("ep2-bearer") })),
		endpoint(withEP(func(ep *monitoringv1.Endpoint) {
			ep.Authorization = &monitoringv1.SafeAuthorization{Credentials: sec("ep3-authz")}
		})),
		endpoint(), // the scrape class's authorization and TLS config
	))
	pm := newPodMonitor("pm-ns", "pm", withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
		ep.Authorization = &monitoringv1.SafeAuthorization{Credentials: sec("pm-authz")}
		ep.TLSConfig = tls("pm")
	}))))
	probe := newProbe("probe-ns", "probe", withProbeSpec(func(s *monitoringv1.ProbeSpec) {
		s.OAuth2 = oauth("probe")
		s.TLSConfig = tls("probe")
		s.ProberSpec.ProxyConfig = proxyWithHeader("prober-proxy")
	}))
	sc := newScrapeConfig("sc-ns", "sc", withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
		s.BasicAuth = basic("sc")
		s.TLSConfig = tls("sc")
		s.ProxyConfig = proxyWithHeader("sc-proxy")
		s.HTTPSDConfigs = []monitoringv1alpha1.HTTPSDConfig{{
			URL:         "https://sd.example.com",
			OAuth2:      oauth("http-sd"),
			TLSConfig:   tls("http-sd"),
			ProxyConfig: proxyWithHeader("http-sd-proxy"),
		}}
		s.KubernetesSDConfigs = []monitoringv1alpha1.KubernetesSDConfig{{
			APIServer:     ptr("https://api.example.com"),
			Role:          monitoringv1alpha1.KubernetesRolePod,
			Authorization: &monitoringv1.SafeAuthorization{Credentials: sec("k8s-sd-authz")},
			TLSConfig:     tls("k8s-sd"),
			ProxyConfig:   proxyWithHeader("k8s-sd-proxy"),
		}}
	}))
	sc2 := newScrapeConfig("sc-ns", "sc2", withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
		s.Authorization = &monitoringv1.SafeAuthorization{Credentials: sec("sc2-authz")}
		s.HTTPSDConfigs = []monitoringv1alpha1.HTTPSDConfig{{URL: "https://sd.example.com", BasicAuth: basic("http-sd2")}}
		s.ConsulSDConfigs = []monitoringv1alpha1.ConsulSDConfig{{Server: "consul:8500", TokenRef: sec("consul-token"), TLSConfig: tls("consul")}}
		s.EC2SDConfigs = []monitoringv1alpha1.EC2SDConfig{{Region: ptr("eu-west-1"), AccessKey: sec("ec2-access"), SecretKey: sec("ec2-secret"), ProxyConfig: proxyWithHeader("ec2-proxy")}}
		s.AzureSDConfigs = []monitoringv1alpha1.AzureSDConfig{{SubscriptionID: "sub", TenantID: ptr("t"), ClientID: ptr("c"), ClientSecret: sec("azure-secret")}}
		s.OpenStackSDConfigs = []monitoringv1alpha1.OpenStackSDConfig{{Role: monitoringv1alpha1.OpenStackRoleInstance, Region: "r",
			Password: sec("os-password"), ApplicationCredentialSecret: sec("os-app"), TLSConfig: tls("os")}}
		s.KumaSDConfigs = []monitoringv1alpha1.KumaSDConfig{{Server: "http://kuma:5676", OAuth2: oauth("kuma")}}
		s.DockerSDConfigs = []monitoringv1alpha1.DockerSDConfig{{Host: "tcp://docker:2376", TLSConfig: tls("docker"), BasicAuth: basic("docker")}}
		s.NomadSDConfigs = []monitoringv1alpha1.NomadSDConfig{{Server: "http://nomad:4646", ProxyConfig: proxyWithHeader("nomad-proxy")}}
		s.LightSailSDConfigs = []monitoringv1alpha1.LightSailSDConfig{{AccessKey: sec("ls-access"), SecretKey: sec("ls-secret")}}
		s.OVHCloudSDConfigs = []monitoringv1alpha1.OVHCloudSDConfig{{ApplicationKey: "k", ApplicationSecret: secretRef("ovh-app", "v"),
			ConsumerKey: secretRef("ovh-consumer", "v"), Service: monitoringv1alpha1.OVHServiceVPS}}
		s.IonosSDConfigs = []monitoringv1alpha1.IonosSDConfig{{DataCenterID: "dc", Authorization: monitoringv1.SafeAuthorization{Credentials: sec("ionos-token")}}}
	}))

	in := withScrapeConfigs(newMixedInput(p, monitors(sm), podMonitors(pm), probes(probe)), sc, sc2)
	secretKeys, configMapKeys := References(in)
	for _, key := range secretKeys {
		ns, name, _ := strings.Cut(key, "/")
		in.Secrets[key] = newSecret(ns, name, map[string]string{"v": "x", "ca.crt": testPEM("ca.crt"), "tls.crt": testPEM("client.crt"), "tls.key": testPEM("client.key")})
	}
	for _, key := range configMapKeys {
		ns, name, _ := strings.Cut(key, "/")
		in = withConfigMaps(in, newConfigMap(ns, name, map[string]string{"v": "x", "ca.crt": testPEM("ca.crt")}))
	}
	for _, key := range []string{"sc-ns/ec2-secret", "sc-ns/os-app", "sc-ns/kuma-oauth-secret", "sc-ns/docker-key", "sc-ns/nomad-proxy", "sc-ns/ovh-consumer", "sc-ns/ionos-token"} {
		if !slices.Contains(secretKeys, key) {
			t.Errorf("References: no Secret %s among %v", key, secretKeys)
		}
	}
	if !slices.Contains(configMapKeys, "sc-ns/docker-ca") || !slices.Contains(secretKeys, "monitoring/class-token") || !slices.Contains(secretKeys, "monitoring/class-key") || !slices.Contains(secretKeys, "monitoring/am2-secret") ||
		!slices.Contains(configMapKeys, "monitoring/am0-ca") || !slices.Contains(configMapKeys, "sc-ns/http-sd-oauth-ca") {
		t.Errorf("References: Secrets %v\nConfigMaps %v", secretKeys, configMapKeys)
	}

	res, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	mustLoad(t, res.Config())
	for _, v := range res.Verdicts {
		if !v.Accepted {
			t.Errorf("%s %s/%s: %s: %s", v.Kind, v.Namespace, v.Name, v.Reason, v.Message)
		}
	}
	if len(res.Verdicts) != 5 {
		t.Errorf("got %d verdicts", len(res.Verdicts))
	}
}

func proxyWithHeader(secret string) monitoringv1.ProxyConfig {
	return monitoringv1.ProxyConfig{
		ProxyURL:           ptr("http://proxy.internal:3128"),
		ProxyConnectHeader: map[string][]corev1.SecretKeySelector{"Proxy-Authorization": {secretRef(secret, "v")}},
	}
}
