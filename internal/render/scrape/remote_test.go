package scrape

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
)

func withRemoteWrite(rws ...monitoringv1.RemoteWriteSpec) promOpt {
	return withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.RemoteWrite = append(s.RemoteWrite, rws...) })
}

func withRemoteRead(rrs ...monitoringv1.RemoteReadSpec) promOpt {
	return withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.RemoteRead = append(s.RemoteRead, rrs...) })
}

func withVersion(v string) promOpt {
	return withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.Version = v })
}

// remoteWrite is an entry sending to url, changed by opts.
func remoteWrite(url string, opts ...func(*monitoringv1.RemoteWriteSpec)) monitoringv1.RemoteWriteSpec {
	rw := monitoringv1.RemoteWriteSpec{URL: monitoringv1.URL(url)}
	for _, o := range opts {
		o(&rw)
	}
	return rw
}

func remoteRead(url string, opts ...func(*monitoringv1.RemoteReadSpec)) monitoringv1.RemoteReadSpec {
	rr := monitoringv1.RemoteReadSpec{URL: monitoringv1.URL(url)}
	for _, o := range opts {
		o(&rr)
	}
	return rr
}

func duration(d string) *monitoringv1.Duration {
	v := monitoringv1.Duration(d)
	return &v
}

// remoteCreds holds the credentials the remote goldens read, in the Prometheus's namespace.
func remoteCreds() *corev1.Secret {
	return newSecret("monitoring", "remote", map[string]string{
		"user": "alice", "password": "s3cret", "token": "t0ken", "access": "AKIDEXAMPLE", "secret": "wJalrXUtnFEMI",
		"azure": "azure-s3cret", "proxy": "Basic cHJveHk6cGFzcw==",
	})
}

const (
	clientUUID = "2d3c9b8e-5f1a-4c7e-9a0b-1c2d3e4f5a6b"
	tenantUUID = "7e8f9a0b-1c2d-4e3f-8a5b-6c7d8e9f0a1b"
)

func remoteGoldenCases() map[string]Input {
	creds := remoteCreds()
	return map[string]Input{
		"remote_write_minimal": newInput(newPrometheus(withRemoteWrite(remoteWrite("https://metrics.example.com/api/v1/write"))), nil),

		"remote_write_options": newInput(newPrometheus(withRemoteWrite(remoteWrite("https://metrics.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Name = ptr("central")
			rw.RemoteTimeout = duration("45s")
			rw.Headers = map[string]string{"X-Scope-OrgID": "team-a", "X-Source": "lookout"}
			rw.SendExemplars = ptr(true)
			rw.SendNativeHistograms = ptr(true)
			rw.RoundRobinDNS = ptr(true)
			rw.MessageVersion = ptr(monitoringv1.RemoteWriteMessageVersion2_0)
			rw.EnableHttp2 = ptr(false)
			rw.FollowRedirects = ptr(true)
			rw.ProxyURL = ptr("http://proxy.internal:3128")
			rw.NoProxy = ptr("10.0.0.0/8,.cluster.local")
			rw.ProxyConnectHeader = map[string][]corev1.SecretKeySelector{"Proxy-Authorization": {secretRef("remote", "proxy")}}
		}), remoteWrite("https://backup.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Name = ptr("backup")
			rw.MessageVersion = ptr(monitoringv1.RemoteWriteMessageVersion1_0)
			rw.ProxyFromEnvironment = ptr(true)
		}))), nil, creds),

		"remote_write_queue_and_metadata": newInput(newPrometheus(withRemoteWrite(remoteWrite("https://metrics.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Name = ptr("tuned")
			rw.QueueConfig = &monitoringv1.QueueConfig{
				Capacity: 2500, MinShards: 2, MaxShards: 200, MaxSamplesPerSend: 1000,
				BatchSendDeadline: duration("5s"), MinBackoff: duration("30ms"), MaxBackoff: duration("5s"),
				RetryOnRateLimit: true, SampleAgeLimit: duration("2h"),
			}
			rw.MetadataConfig = &monitoringv1.MetadataConfig{Send: true, SendInterval: "30s", MaxSamplesPerSend: ptr(int32(500))}
		}), remoteWrite("https://metrics.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			// An empty metadataConfig sends no metadata, as the API documents.
			rw.Name = ptr("no-metadata")
			rw.MetadataConfig = &monitoringv1.MetadataConfig{}
			rw.QueueConfig = &monitoringv1.QueueConfig{}
		}))), nil),

		"remote_write_basic_auth_and_tls": withConfigMaps(newInput(newPrometheus(withRemoteWrite(remoteWrite("https://metrics.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("remote", "user"), Password: secretRef("remote", "password")}
			rw.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: tlsFromSecret()}
		}), remoteWrite("https://files.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.TLSConfig = &monitoringv1.TLSConfig{
				SafeTLSConfig:  monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("tls", "ca.crt")}, InsecureSkipVerify: ptr(false)},
				TLSFilesConfig: monitoringv1.TLSFilesConfig{CertFile: "/etc/prometheus/secrets/remote/tls.crt", KeyFile: "/etc/prometheus/secrets/remote/tls.key"},
			}
		}))), nil, creds, tlsSecret("monitoring")), tlsConfigMap("monitoring")),

		"remote_write_authorization_and_bearer_tokens": newInput(newPrometheus(withRemoteWrite(
			remoteWrite("https://a.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.Authorization = &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{Type: "Token", Credentials: secretPtr("remote", "token")}}
			}),
			remoteWrite("https://b.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.Authorization = &monitoringv1.Authorization{CredentialsFile: "/var/run/secrets/remote/token"}
			}),
			remoteWrite("https://c.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.BearerTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
			}),
			remoteWrite("https://d.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.BearerToken = "plain-t0ken"
			}),
		)), nil, creds),

		"remote_write_oauth2": withConfigMaps(newInput(newPrometheus(withRemoteWrite(remoteWrite("https://metrics.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef("oauth", "id")})
		}))), nil, oauthSecret("monitoring")), oauthConfigMap("monitoring")),

		"remote_write_sigv4": newInput(newPrometheus(withRemoteWrite(
			remoteWrite("https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.Sigv4 = &monitoringv1.Sigv4{Region: "eu-west-1", AccessKey: secretPtr("remote", "access"), SecretKey: secretPtr("remote", "secret")}
			}),
			remoteWrite("https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-2/api/v1/remote_write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.Sigv4 = &monitoringv1.Sigv4{Region: "eu-west-1", Profile: "prometheus", RoleArn: "arn:aws:iam::123456789012:role/prometheus",
					ExternalID: "lookout", UseFIPSSTSEndpoint: ptr(true)}
			}),
			remoteWrite("https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-3/api/v1/remote_write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.Sigv4 = &monitoringv1.Sigv4{} // the default credential chain
			}),
		)), nil, creds),

		"remote_write_azuread": newInput(newPrometheus(withRemoteWrite(
			remoteWrite("https://a.monitor.azure.com/dataCollectionRules/dcr-1/streams/Microsoft-PrometheusMetrics/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.AzureAD = &monitoringv1.AzureAD{Cloud: ptr("AzurePublic"), ManagedIdentity: &monitoringv1.ManagedIdentity{ClientID: ptr(clientUUID)}}
			}),
			remoteWrite("https://b.monitor.azure.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.AzureAD = &monitoringv1.AzureAD{ManagedIdentity: &monitoringv1.ManagedIdentity{}} // system-assigned
			}),
			remoteWrite("https://c.monitor.azure.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.AzureAD = &monitoringv1.AzureAD{Cloud: ptr("AzureChina"), OAuth: &monitoringv1.AzureOAuth{ClientID: clientUUID, ClientSecret: secretRef("remote", "azure"), TenantID: tenantUUID}}
			}),
			remoteWrite("https://d.monitor.azure.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.AzureAD = &monitoringv1.AzureAD{SDK: &monitoringv1.AzureSDK{TenantID: ptr(tenantUUID)}}
			}),
			remoteWrite("https://e.monitor.azure.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
				rw.AzureAD = &monitoringv1.AzureAD{Cloud: ptr("AzureGovernment"), WorkloadIdentity: &monitoringv1.AzureWorkloadIdentity{ClientID: clientUUID, TenantID: tenantUUID},
					Scope: ptr("https://monitor.azure.us/.default")}
			}),
		)), nil, creds),

		"remote_write_relabel": newInput(newPrometheus(withRemoteWrite(remoteWrite("https://metrics.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.WriteRelabelConfigs = []monitoringv1.RelabelConfig{
				relabelCfg("Keep", []string{"__name__"}, "", "up|node_.*|kube_.*"),
				relabelCfg("labeldrop", nil, "", "pod_template_hash"),
				func() monitoringv1.RelabelConfig {
					rc := relabelCfg("replace", []string{"namespace", "pod"}, "workload", "(.+);(.+)")
					rc.Separator = ptr(";")
					rc.Replacement = ptr("$1/$2")
					return rc
				}(),
				relabelCfg("lowercase", []string{"env"}, "env", ""),
			}
		}))), nil),

		"remote_read": withConfigMaps(newInput(newPrometheus(withRemoteRead(
			remoteRead("https://long-term.example.com/api/v1/read", func(rr *monitoringv1.RemoteReadSpec) {
				rr.Name = "long-term"
				rr.RequiredMatchers = map[string]string{"tier": "archive"}
				rr.RemoteTimeout = duration("2m")
				rr.Headers = map[string]string{"X-Scope-OrgID": "team-a"}
				rr.ReadRecent = true
				rr.FilterExternalLabels = ptr(false)
				rr.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("remote", "user"), Password: secretRef("remote", "password")}
				rr.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: tlsFromSecret()}
				rr.FollowRedirects = ptr(false)
				rr.ProxyURL = ptr("http://proxy.internal:3128")
			}),
			remoteRead("https://oauth.example.com/api/v1/read", func(rr *monitoringv1.RemoteReadSpec) {
				rr.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{Secret: secretPtr("oauth", "id")})
			}),
			remoteRead("https://token.example.com/api/v1/read", func(rr *monitoringv1.RemoteReadSpec) {
				rr.Authorization = &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{Credentials: secretPtr("remote", "token")}}
			}),
			remoteRead("https://files.example.com/api/v1/read", func(rr *monitoringv1.RemoteReadSpec) {
				rr.BearerTokenFile = "/var/run/secrets/remote/token"
			}),
			remoteRead("https://plain.example.com/api/v1/read", func(rr *monitoringv1.RemoteReadSpec) {
				rr.BearerToken = "plain-t0ken"
			}),
		), withRemoteWrite(remoteWrite("https://long-term.example.com/api/v1/write"))), nil, creds, tlsSecret("monitoring"), oauthSecret("monitoring")), tlsConfigMap("monitoring")),

		// A Prometheus v2 gets the keys it knows: messageVersion V1.0 is written from v2.54 on.
		"remote_write_prometheus_v2_55": newInput(newPrometheus(withVersion("v2.55.1"), withRemoteWrite(remoteWrite("https://metrics.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Name = ptr("v1")
			rw.MessageVersion = ptr(monitoringv1.RemoteWriteMessageVersion1_0)
			rw.SendNativeHistograms = ptr(true)
			rw.QueueConfig = &monitoringv1.QueueConfig{SampleAgeLimit: duration("1h")}
			rw.Sigv4 = &monitoringv1.Sigv4{Region: "eu-west-1", UseFIPSSTSEndpoint: ptr(true)}
		}), remoteWrite("https://metrics.example.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Name = ptr("v2")
			rw.MessageVersion = ptr(monitoringv1.RemoteWriteMessageVersion2_0)
		}))), nil),

		// Before v2.54 there is no protobuf_message key: Remote Write 1.0 is the only message.
		"remote_write_prometheus_v2_45": newInput(newPrometheus(withVersion("v2.45.0"), withRemoteWrite(remoteWrite("https://a.monitor.azure.com/api/v1/write", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.MessageVersion = ptr(monitoringv1.RemoteWriteMessageVersion1_0)
			rw.AzureAD = &monitoringv1.AzureAD{ManagedIdentity: &monitoringv1.ManagedIdentity{ClientID: ptr(clientUUID)}}
			rw.EnableHttp2 = ptr(true)
		}))), nil),
	}
}

// Prometheus reads every generated key the way the spec means it.
func TestRemoteWriteKeysReachPrometheus(t *testing.T) {
	cases := remoteGoldenCases()
	load := func(name string) *Result {
		t.Helper()
		res, err := Generate(cases[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	cfg := mustLoad(t, load("remote_write_options").Config())
	rw := cfg.RemoteWriteConfigs[0]
	if rw.Name != "central" || time.Duration(rw.RemoteTimeout) != 45*time.Second || rw.Headers["X-Scope-OrgID"] != "team-a" ||
		!rw.SendExemplars || !rw.SendNativeHistograms || !rw.RoundRobinDNS || string(rw.ProtobufMessage) != protobufMessageV2 ||
		rw.HTTPClientConfig.EnableHTTP2 || !rw.HTTPClientConfig.FollowRedirects || rw.HTTPClientConfig.ProxyURL.String() != "http://proxy.internal:3128" ||
		rw.HTTPClientConfig.NoProxy != "10.0.0.0/8,.cluster.local" || len(rw.HTTPClientConfig.ProxyConnectHeader["Proxy-Authorization"]) != 1 {
		t.Errorf("remote write options not as written: %+v", rw)
	}
	if rw := cfg.RemoteWriteConfigs[1]; string(rw.ProtobufMessage) != protobufMessageV1 || !rw.HTTPClientConfig.ProxyFromEnvironment {
		t.Errorf("second remote write: %+v", rw)
	}

	cfg = mustLoad(t, load("remote_write_queue_and_metadata").Config())
	q, m := cfg.RemoteWriteConfigs[0].QueueConfig, cfg.RemoteWriteConfigs[0].MetadataConfig
	if q.Capacity != 2500 || q.MinShards != 2 || q.MaxShards != 200 || q.MaxSamplesPerSend != 1000 || time.Duration(q.BatchSendDeadline) != 5*time.Second ||
		time.Duration(q.MinBackoff) != 30*time.Millisecond || time.Duration(q.MaxBackoff) != 5*time.Second || !q.RetryOnRateLimit ||
		time.Duration(q.SampleAgeLimit) != 2*time.Hour {
		t.Errorf("queue config: %+v", q)
	}
	if !m.Send || time.Duration(m.SendInterval) != 30*time.Second || m.MaxSamplesPerSend != 500 {
		t.Errorf("metadata config: %+v", m)
	}
	if m := cfg.RemoteWriteConfigs[1].MetadataConfig; m.Send || time.Duration(m.SendInterval) != time.Minute {
		t.Errorf("an empty metadataConfig must send nothing, with Prometheus's interval: %+v", m)
	}

	cfg = mustLoad(t, load("remote_write_basic_auth_and_tls").Config())
	hc := cfg.RemoteWriteConfigs[0].HTTPClientConfig
	if hc.BasicAuth == nil || hc.BasicAuth.Username != "alice" || string(hc.BasicAuth.Password) != "s3cret" || hc.TLSConfig.CA != testPEM("ca.crt") ||
		hc.TLSConfig.ServerName != "app.default.svc" {
		t.Errorf("basic auth and TLS: %+v", hc)
	}
	if tls := cfg.RemoteWriteConfigs[1].HTTPClientConfig.TLSConfig; !strings.HasSuffix(tls.CertFile, "/remote/tls.crt") || tls.CA != testPEM("ca.crt") {
		t.Errorf("TLS files: %+v", tls)
	}

	cfg = mustLoad(t, load("remote_write_authorization_and_bearer_tokens").Config())
	for i, want := range []struct{ typ, creds, file string }{
		{"Token", "t0ken", ""}, {"Bearer", "", "/var/run/secrets/remote/token"},
		{"Bearer", "", "/var/run/secrets/kubernetes.io/serviceaccount/token"}, {"Bearer", "plain-t0ken", ""},
	} {
		a := cfg.RemoteWriteConfigs[i].HTTPClientConfig.Authorization
		if a == nil || a.Type != want.typ || string(a.Credentials) != want.creds || a.CredentialsFile != want.file {
			t.Errorf("remote write %d: authorization %+v, want %+v", i, a, want)
		}
	}

	cfg = mustLoad(t, load("remote_write_sigv4").Config())
	if s := cfg.RemoteWriteConfigs[0].SigV4Config; s == nil || s.AccessKey != "AKIDEXAMPLE" || string(s.SecretKey) != "wJalrXUtnFEMI" || s.Region != "eu-west-1" {
		t.Errorf("sigv4 with keys: %+v", s)
	}
	if s := cfg.RemoteWriteConfigs[1].SigV4Config; s == nil || s.RoleARN == "" || s.ExternalID != "lookout" || !s.UseFIPSSTSEndpoint || s.Profile != "prometheus" {
		t.Errorf("sigv4 with a role: %+v", s)
	}

	cfg = mustLoad(t, load("remote_write_azuread").Config())
	az := cfg.RemoteWriteConfigs
	if az[0].AzureADConfig.ManagedIdentity.ClientID != clientUUID || az[1].AzureADConfig.ManagedIdentity == nil ||
		az[2].AzureADConfig.OAuth == nil || string(az[2].AzureADConfig.OAuth.ClientSecret) != "azure-s3cret" || az[2].AzureADConfig.Cloud != "AzureChina" ||
		az[3].AzureADConfig.SDK == nil || az[3].AzureADConfig.SDK.TenantID != tenantUUID ||
		az[4].AzureADConfig.WorkloadIdentity == nil || az[4].AzureADConfig.Scope != "https://monitor.azure.us/.default" {
		t.Errorf("azuread: %+v %+v %+v %+v %+v", az[0].AzureADConfig, az[1].AzureADConfig, az[2].AzureADConfig, az[3].AzureADConfig, az[4].AzureADConfig)
	}

	cfg = mustLoad(t, load("remote_write_relabel").Config())
	if rc := cfg.RemoteWriteConfigs[0].WriteRelabelConfigs; len(rc) != 4 || rc[0].Action != "keep" || rc[2].Replacement != "$1/$2" || rc[3].Action != "lowercase" {
		t.Errorf("write relabel configs: %+v", rc)
	}

	cfg = mustLoad(t, load("remote_read").Config())
	rr := cfg.RemoteReadConfigs[0]
	if rr.Name != "long-term" || rr.RequiredMatchers["tier"] != "archive" || time.Duration(rr.RemoteTimeout) != 2*time.Minute || rr.Headers["X-Scope-OrgID"] != "team-a" ||
		!rr.ReadRecent || rr.FilterExternalLabels || rr.HTTPClientConfig.BasicAuth == nil || rr.HTTPClientConfig.FollowRedirects ||
		rr.HTTPClientConfig.TLSConfig.Cert != testPEM("client.crt") || rr.HTTPClientConfig.ProxyURL.String() != "http://proxy.internal:3128" {
		t.Errorf("remote read: %+v", rr)
	}
	if !cfg.RemoteReadConfigs[1].FilterExternalLabels || cfg.RemoteReadConfigs[1].HTTPClientConfig.OAuth2 == nil ||
		cfg.RemoteReadConfigs[2].HTTPClientConfig.Authorization == nil || cfg.RemoteReadConfigs[3].HTTPClientConfig.Authorization.CredentialsFile == "" ||
		string(cfg.RemoteReadConfigs[4].HTTPClientConfig.Authorization.Credentials) != "plain-t0ken" {
		t.Errorf("remote read credentials: %+v", cfg.RemoteReadConfigs[1:])
	}

	if b := load("remote_write_prometheus_v2_45").Config(); bytes.Contains(b, []byte("protobuf_message")) {
		t.Errorf("protobuf_message written for Prometheus v2.45:\n%s", b)
	}
}

func TestRemoteSectionsComeAfterAlertingAndOnlyWhenAsked(t *testing.T) {
	res, err := Generate(newInput(newPrometheus(), monitors(newServiceMonitor("default", "app"))))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(res.Config(), []byte("remote_")) {
		t.Errorf("a Prometheus without remote write got a remote section:\n%s", res.Config())
	}
	res, err = Generate(newInput(kubePrometheus(withRemoteWrite(remoteWrite("https://w.example.com/push")), withRemoteRead(remoteRead("https://r.example.com/read"))),
		monitors(newServiceMonitor("default", "app"))))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(res.Config())
	scrape, alerting := strings.Index(cfg, "\nscrape_configs:\n"), strings.Index(cfg, "\nalerting:\n")
	write, read := strings.Index(cfg, "\nremote_write:\n"), strings.Index(cfg, "\nremote_read:\n")
	if scrape < 0 || alerting < scrape || write < alerting || read < write || !strings.HasSuffix(cfg, string(res.Tail)) || !bytes.Contains(res.Tail, []byte("remote_write:")) {
		t.Errorf("remote_write and remote_read are not the sections after alerting, in the tail:\n%s", cfg)
	}
	if res.Size != len(res.Config()) {
		t.Errorf("Size %d, config %d bytes", res.Size, len(res.Config()))
	}
	c := mustLoad(t, res.Config())
	if len(c.RemoteWriteConfigs) != 1 || len(c.RemoteReadConfigs) != 1 || len(c.AlertingConfig.AlertmanagerConfigs) != 1 {
		t.Errorf("loaded %d remote write, %d remote read, %d alertmanager configs", len(c.RemoteWriteConfigs), len(c.RemoteReadConfigs), len(c.AlertingConfig.AlertmanagerConfigs))
	}
}

func TestRemoteRefusals(t *testing.T) {
	rwIn := func(rws ...monitoringv1.RemoteWriteSpec) Input {
		return newInput(newPrometheus(withRemoteWrite(rws...)), nil, remoteCreds())
	}
	rwOn := func(version string, opt func(*monitoringv1.RemoteWriteSpec)) Input {
		return newInput(newPrometheus(withVersion(version), withRemoteWrite(remoteWrite("https://w.example.com/push", opt))), nil, remoteCreds())
	}
	rrIn := func(rrs ...monitoringv1.RemoteReadSpec) Input {
		return newInput(newPrometheus(withRemoteRead(rrs...)), nil, remoteCreds())
	}
	w := func(opt func(*monitoringv1.RemoteWriteSpec)) monitoringv1.RemoteWriteSpec {
		return remoteWrite("https://w.example.com/push", opt)
	}
	cases := []struct {
		name    string
		in      Input
		reason  string
		message []string
	}{
		{"a missing Secret", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("gone", "user"), Password: secretRef("gone", "password")}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].basicAuth.username: Secret monitoring/gone not found"}},
		{"a missing key", rwIn(remoteWrite("https://a.example.com"), w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Authorization = &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{Credentials: secretPtr("remote", "nope")}}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[1].authorization.credentials", `key "nope" not found in Secret monitoring/remote`}},
		{"a missing sigv4 Secret", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Sigv4 = &monitoringv1.Sigv4{AccessKey: secretPtr("aws", "a"), SecretKey: secretPtr("aws", "s")}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].sigv4.accessKey: Secret monitoring/aws not found"}},
		{"a missing Azure OAuth secret", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.AzureAD = &monitoringv1.AzureAD{OAuth: &monitoringv1.AzureOAuth{ClientID: clientUUID, ClientSecret: secretRef("azure", "s"), TenantID: tenantUUID}}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].azureAd.oauth.clientSecret: Secret monitoring/azure not found"}},
		{"a missing proxy header Secret", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.ProxyURL = ptr("http://proxy:3128")
			rw.ProxyConnectHeader = map[string][]corev1.SecretKeySelector{"X-Auth": {secretRef("gone", "v")}}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].proxyConnectHeader[X-Auth][0]: Secret monitoring/gone not found"}},
		{"a missing remote read Secret", rrIn(remoteRead("https://r.example.com/read", func(rr *monitoringv1.RemoteReadSpec) {
			rr.TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: secretPtr("tls", "ca.crt")}}}
		})), ReasonInvalidRemoteRead, []string{"spec.remoteRead[0].tlsConfig.ca.secret: Secret monitoring/tls not found"}},
		{"a URL without a scheme", rwIn(remoteWrite("metrics.example.com/push")), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].url", "http or https"}},
		{"a URL with another scheme", rrIn(remoteRead("ftp://r.example.com/read")), ReasonInvalidRemoteRead, []string{"spec.remoteRead[0].url", "http or https"}},
		{"a URL that does not parse", rwIn(remoteWrite("http://bad host/push")), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].url"}},
		{"an empty URL", rwIn(remoteWrite("")), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].url: the URL is required"}},
		{"a bad remote timeout", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) { rw.RemoteTimeout = duration("30 s") })),
			ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].remoteTimeout", "invalid duration"}},
		{"a bad queue backoff", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.QueueConfig = &monitoringv1.QueueConfig{MinBackoff: duration("soon")}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].queueConfig.minBackoff"}},
		{"a bad metadata interval", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.MetadataConfig = &monitoringv1.MetadataConfig{Send: true, SendInterval: "1 minute"}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].metadataConfig.sendInterval"}},
		{"a bad remote read timeout", rrIn(remoteRead("https://r.example.com", func(rr *monitoringv1.RemoteReadSpec) { rr.RemoteTimeout = duration("-1s") })),
			ReasonInvalidRemoteRead, []string{"spec.remoteRead[0].remoteTimeout"}},
		{"a negative queue setting", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) { rw.QueueConfig = &monitoringv1.QueueConfig{MaxShards: -1} })),
			ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].queueConfig.maxShards: must not be negative"}},
		{"more min shards than max shards, as Prometheus refuses", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.QueueConfig = &monitoringv1.QueueConfig{MinShards: 10, MaxShards: 5}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0]: Prometheus refuses the generated remote write config", "min_shards"}},
		{"maxRetries, which Prometheus removed", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) { rw.QueueConfig = &monitoringv1.QueueConfig{MaxRetries: 3} })),
			ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].queueConfig.maxRetries", "remove the field"}},
		{"metadata maxSamplesPerSend under -1", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.MetadataConfig = &monitoringv1.MetadataConfig{MaxSamplesPerSend: ptr(int32(-2))}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].metadataConfig.maxSamplesPerSend"}},
		{"two kinds of credentials", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("remote", "user")}
			rw.Sigv4 = &monitoringv1.Sigv4{}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0]: basicAuth and sigv4 cannot be set together"}},
		{"a bearer token next to authorization", rrIn(remoteRead("https://r.example.com", func(rr *monitoringv1.RemoteReadSpec) {
			rr.BearerToken = "x"
			rr.Authorization = &monitoringv1.Authorization{CredentialsFile: "/token"}
		})), ReasonInvalidRemoteRead, []string{"spec.remoteRead[0]: authorization and bearerToken cannot be set together"}},
		{"authorization with credentials and a file", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Authorization = &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{Credentials: secretPtr("remote", "token")}, CredentialsFile: "/token"}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].authorization"}},
		{"Azure AD without a way to get a token", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) { rw.AzureAD = &monitoringv1.AzureAD{Cloud: ptr("AzurePublic")} })),
			ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].azureAd: one of managedIdentity, oauth, sdk or workloadIdentity is required"}},
		{"Azure AD with two ways", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.AzureAD = &monitoringv1.AzureAD{SDK: &monitoringv1.AzureSDK{}, ManagedIdentity: &monitoringv1.ManagedIdentity{ClientID: ptr(clientUUID)}}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].azureAd: managedIdentity and sdk cannot be set together"}},
		{"an Azure client ID Prometheus refuses", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.AzureAD = &monitoringv1.AzureAD{ManagedIdentity: &monitoringv1.ManagedIdentity{ClientID: ptr("not-a-uuid")}}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0]: Prometheus refuses", "client_id is invalid"}},
		{"a header Prometheus sets itself", rwIn(remoteWrite("https://a.example.com"), w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Headers = map[string]string{"Authorization": "Bearer x"}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[1]: Prometheus refuses the generated remote write config", "authorization header"}},
		{"an unknown message version", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.MessageVersion = ptr(monitoringv1.RemoteWriteMessageVersion("V3.0"))
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].messageVersion", "V3.0"}},
		{"a bad write relabeling", rwIn(w(func(rw *monitoringv1.RemoteWriteSpec) {
			rw.WriteRelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("drop", []string{"__name__"}, "", "(go_")}
		})), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].writeRelabelConfigs[0].regex"}},
		{"two remote writes with one name", rwIn(
			remoteWrite("https://a.example.com", func(rw *monitoringv1.RemoteWriteSpec) { rw.Name = ptr("q") }),
			remoteWrite("https://b.example.com", func(rw *monitoringv1.RemoteWriteSpec) { rw.Name = ptr("q") }),
		), ReasonInvalidRemoteWrite, []string{`spec.remoteWrite[1].name: "q" is already the name of spec.remoteWrite[0]`}},
		{"two remote writes Prometheus cannot tell apart", rwIn(
			w(func(rw *monitoringv1.RemoteWriteSpec) {
				rw.Authorization = &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{Credentials: secretPtr("remote", "token")}}
			}),
			w(func(rw *monitoringv1.RemoteWriteSpec) {
				rw.Authorization = &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{Credentials: secretPtr("remote", "password")}}
			}),
		), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[1]: Prometheus cannot tell it from spec.remoteWrite[0]", "give them different names"}},
		{"two identical remote reads", rrIn(remoteRead("https://r.example.com"), remoteRead("https://r.example.com")),
			ReasonInvalidRemoteRead, []string{"spec.remoteRead[1]: Prometheus cannot tell it from spec.remoteRead[0]"}},
		{"two remote reads with one name", rrIn(
			remoteRead("https://a.example.com", func(rr *monitoringv1.RemoteReadSpec) { rr.Name = "r" }),
			remoteRead("https://b.example.com", func(rr *monitoringv1.RemoteReadSpec) { rr.Name = "r" }),
		), ReasonInvalidRemoteRead, []string{`spec.remoteRead[1].name: "r" is already the name of spec.remoteRead[0]`}},

		// Fields newer than spec.version: refused with the minimum version, never written for a
		// Prometheus that would refuse its whole config.
		{"roundRobinDNS before v3.1", rwOn("v3.0.1", func(rw *monitoringv1.RemoteWriteSpec) { rw.RoundRobinDNS = ptr(true) }),
			ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].roundRobinDNS: requires Prometheus v3.1.0 or later, spec.version is v3.0.1"}},
		{"Remote Write 2.0 before v2.54", rwOn("v2.53.0", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.MessageVersion = ptr(monitoringv1.RemoteWriteMessageVersion2_0)
		}), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].messageVersion: requires Prometheus v2.54.0 or later, spec.version is v2.53.0"}},
		{"sampleAgeLimit before v2.50", rwOn("2.49", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.QueueConfig = &monitoringv1.QueueConfig{SampleAgeLimit: duration("1h")}
		}), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].queueConfig.sampleAgeLimit: requires Prometheus v2.50.0 or later, spec.version is v2.49.0"}},
		{"sigv4 externalId before v3.11", rwOn("v3.10.0", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Sigv4 = &monitoringv1.Sigv4{RoleArn: "arn:aws:iam::1:role/p", ExternalID: "x"}
		}), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].sigv4.externalId: requires Prometheus v3.11.0"}},
		{"Azure workload identity before v3.7", rwOn("v3.6.0", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.AzureAD = &monitoringv1.AzureAD{WorkloadIdentity: &monitoringv1.AzureWorkloadIdentity{ClientID: clientUUID, TenantID: tenantUUID}}
		}), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].azureAd.workloadIdentity: requires Prometheus v3.7.0"}},
		{"a system-assigned managed identity before v3.5", rwOn("v3.4.2", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.AzureAD = &monitoringv1.AzureAD{ManagedIdentity: &monitoringv1.ManagedIdentity{}}
		}), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].azureAd.managedIdentity.clientId: requires Prometheus v3.5.0"}},
		{"noProxy before v2.43", rwOn("v2.42.0", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.ProxyURL = ptr("http://proxy:3128")
			rw.NoProxy = ptr("localhost")
		}), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].noProxy: requires Prometheus v2.43.0"}},
		{"a keepequal write relabeling before v2.41", rwOn("v2.40.7", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.WriteRelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("KeepEqual", []string{"a"}, "b", "")}
		}), ReasonInvalidRemoteWrite, []string{"spec.remoteWrite[0].writeRelabelConfigs[0].action: requires Prometheus v2.41.0"}},
		{"filterExternalLabels before v2.34", newInput(newPrometheus(withVersion("v2.33.5"), withRemoteRead(remoteRead("https://r.example.com", func(rr *monitoringv1.RemoteReadSpec) {
			rr.FilterExternalLabels = ptr(true)
		}))), nil), ReasonInvalidRemoteRead, []string{"spec.remoteRead[0].filterExternalLabels: requires Prometheus v2.34.0"}},
		{"remote read oauth2 before v2.27", newInput(newPrometheus(withVersion("v2.26.1"), withRemoteRead(remoteRead("https://r.example.com", func(rr *monitoringv1.RemoteReadSpec) {
			rr.OAuth2 = oauth2From(monitoringv1.SecretOrConfigMap{Secret: secretPtr("oauth", "id")})
		}))), nil), ReasonInvalidRemoteRead, []string{"spec.remoteRead[0].oauth2: requires Prometheus v2.27.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(tc.in)
			var re *RemoteError
			if !errors.As(err, &re) {
				t.Fatalf("Generate = %v, want a *RemoteError", err)
			}
			if re.Reason != tc.reason {
				t.Errorf("reason %s, want %s (%s)", re.Reason, tc.reason, re.Message)
			}
			for _, m := range tc.message {
				if !strings.Contains(re.Message, m) {
					t.Errorf("message %q lacks %q", re.Message, m)
				}
			}
		})
	}
}

// Every field of the remote write and read API types is either rendered or refused: a field
// added by an API upgrade must be looked at, not silently dropped. The types they share with
// other objects (TLS, OAuth2, basic auth, proxy) are rendered by the shared helpers.
func TestRemoteFieldsAreAllHandled(t *testing.T) {
	handled := map[reflect.Type][]string{
		reflect.TypeFor[monitoringv1.RemoteWriteSpec](): {
			"URL", "Name", "MessageVersion", "SendExemplars", "SendNativeHistograms", "RemoteTimeout", "Headers", "WriteRelabelConfigs",
			"OAuth2", "BasicAuth", "BearerTokenFile", "Authorization", "Sigv4", "AzureAD", "BearerToken", "TLSConfig", "ProxyConfig",
			"FollowRedirects", "QueueConfig", "MetadataConfig", "EnableHttp2", "RoundRobinDNS",
		},
		reflect.TypeFor[monitoringv1.RemoteReadSpec](): {
			"URL", "Name", "RequiredMatchers", "RemoteTimeout", "Headers", "ReadRecent", "OAuth2", "BasicAuth", "BearerTokenFile",
			"Authorization", "BearerToken", "TLSConfig", "ProxyConfig", "FollowRedirects", "FilterExternalLabels",
		},
		reflect.TypeFor[monitoringv1.QueueConfig](): {
			"Capacity", "MinShards", "MaxShards", "MaxSamplesPerSend", "BatchSendDeadline", "MaxRetries", "MinBackoff", "MaxBackoff",
			"RetryOnRateLimit", "SampleAgeLimit",
		},
		reflect.TypeFor[monitoringv1.MetadataConfig]():        {"Send", "SendInterval", "MaxSamplesPerSend"},
		reflect.TypeFor[monitoringv1.Sigv4]():                 {"Region", "AccessKey", "SecretKey", "Profile", "RoleArn", "ExternalID", "UseFIPSSTSEndpoint"},
		reflect.TypeFor[monitoringv1.AzureAD]():               {"Cloud", "ManagedIdentity", "OAuth", "SDK", "WorkloadIdentity", "Scope"},
		reflect.TypeFor[monitoringv1.ManagedIdentity]():       {"ClientID"},
		reflect.TypeFor[monitoringv1.AzureOAuth]():            {"ClientID", "ClientSecret", "TenantID"},
		reflect.TypeFor[monitoringv1.AzureSDK]():              {"TenantID"},
		reflect.TypeFor[monitoringv1.AzureWorkloadIdentity](): {"ClientID", "TenantID"},
		reflect.TypeFor[monitoringv1.Authorization]():         {"SafeAuthorization", "CredentialsFile"},
	}
	for typ, names := range handled {
		for i := range typ.NumField() {
			if f := typ.Field(i).Name; !slices.Contains(names, f) {
				t.Errorf("%s.%s is neither rendered nor refused", typ.Name(), f)
			}
		}
	}
}

// Every Secret and ConfigMap remote write and read read is listed for the gatherer (and so
// watched): with only the listed objects given, the config renders.
func TestRemoteReferenceKeysCoverWhatGenerateReads(t *testing.T) {
	sec := func(name string) *corev1.SecretKeySelector { return secretPtr(name, "v") }
	tls := func(prefix string) *monitoringv1.TLSConfig {
		return &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{
			CA:        monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef(prefix+"-ca", "ca.crt")},
			Cert:      monitoringv1.SecretOrConfigMap{Secret: secretPtr(prefix+"-cert", "tls.crt")},
			KeySecret: secretPtr(prefix+"-key", "tls.key"),
		}}
	}
	oauth := func(prefix string) *monitoringv1.OAuth2 {
		return &monitoringv1.OAuth2{
			ClientID: monitoringv1.SecretOrConfigMap{ConfigMap: configMapRef(prefix+"-oauth-id", "v")}, ClientSecret: secretRef(prefix+"-oauth-secret", "v"),
			TokenURL: "https://auth.example.com/token", TLSConfig: &tls(prefix + "-oauth").SafeTLSConfig, ProxyConfig: proxyWithHeader(prefix + "-oauth-proxy"),
		}
	}
	p := newPrometheus(withRemoteWrite(
		remoteWrite("https://a.example.com", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("rw0-user", "v"), Password: secretRef("rw0-password", "v")}
			rw.TLSConfig = tls("rw0")
			rw.ProxyConfig = proxyWithHeader("rw0-proxy")
		}),
		remoteWrite("https://b.example.com", func(rw *monitoringv1.RemoteWriteSpec) { rw.OAuth2 = oauth("rw1") }),
		remoteWrite("https://c.example.com", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Authorization = &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{Credentials: sec("rw2-authz")}}
		}),
		remoteWrite("https://d.example.com", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.Sigv4 = &monitoringv1.Sigv4{AccessKey: sec("rw3-access"), SecretKey: sec("rw3-secret")}
		}),
		remoteWrite("https://e.example.com", func(rw *monitoringv1.RemoteWriteSpec) {
			rw.AzureAD = &monitoringv1.AzureAD{OAuth: &monitoringv1.AzureOAuth{ClientID: clientUUID, ClientSecret: secretRef("rw4-azure", "v"), TenantID: tenantUUID}}
		}),
	), withRemoteRead(
		remoteRead("https://a.example.com", func(rr *monitoringv1.RemoteReadSpec) {
			rr.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("rr0-user", "v")}
			rr.TLSConfig = tls("rr0")
			rr.ProxyConfig = proxyWithHeader("rr0-proxy")
		}),
		remoteRead("https://b.example.com", func(rr *monitoringv1.RemoteReadSpec) { rr.OAuth2 = oauth("rr1") }),
		remoteRead("https://c.example.com", func(rr *monitoringv1.RemoteReadSpec) {
			rr.Authorization = &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{Credentials: sec("rr2-authz")}}
		}),
	))
	in := newInput(p, nil)
	secretKeys, configMapKeys := References(in)
	for _, want := range []string{"monitoring/rw0-password", "monitoring/rw0-proxy", "monitoring/rw1-oauth-proxy", "monitoring/rw3-secret", "monitoring/rw4-azure",
		"monitoring/rr0-key", "monitoring/rr2-authz", "monitoring/rr1-oauth-secret"} {
		if !slices.Contains(secretKeys, want) {
			t.Errorf("References lacks Secret %s: %v", want, secretKeys)
		}
	}
	for _, want := range []string{"monitoring/rw0-ca", "monitoring/rw1-oauth-id", "monitoring/rr1-oauth-ca"} {
		if !slices.Contains(configMapKeys, want) {
			t.Errorf("References lacks ConfigMap %s: %v", want, configMapKeys)
		}
	}
	for _, key := range secretKeys {
		ns, name, _ := strings.Cut(key, "/")
		in.Secrets[key] = newSecret(ns, name, map[string]string{"v": "x", "tls.crt": testPEM("client.crt"), "tls.key": testPEM("client.key")})
	}
	for _, key := range configMapKeys {
		ns, name, _ := strings.Cut(key, "/")
		in = withConfigMaps(in, newConfigMap(ns, name, map[string]string{"v": "x", "ca.crt": testPEM("ca.crt")}))
	}
	res, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate with only the listed objects: %v", err)
	}
	if c := mustLoad(t, res.Config()); len(c.RemoteWriteConfigs) != 5 || len(c.RemoteReadConfigs) != 3 {
		t.Errorf("%d remote writes, %d remote reads", len(c.RemoteWriteConfigs), len(c.RemoteReadConfigs))
	}
}

// The sections are rendered on every Generate: a changed Secret changes the config even with a
// warm Cache, and a Secret that disappears is refused even after the content was accepted.
func TestRemoteFollowsItsSecretsWithACache(t *testing.T) {
	p := newPrometheus(withRemoteWrite(remoteWrite("https://w.example.com/push", func(rw *monitoringv1.RemoteWriteSpec) {
		rw.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("remote", "user"), Password: secretRef("remote", "password")}
	})))
	cache := NewCache()
	in := newInput(p, monitors(newServiceMonitor("default", "app")), remoteCreds())
	in.Cache = cache
	for _, password := range []string{"first", "second"} {
		in.Secrets["monitoring/remote"] = newSecret("monitoring", "remote", map[string]string{"user": "alice", "password": password})
		res, err := Generate(in)
		if err != nil {
			t.Fatal(err)
		}
		if c := mustLoad(t, res.Config()); string(c.RemoteWriteConfigs[0].HTTPClientConfig.BasicAuth.Password) != password {
			t.Errorf("password %q, want %q", c.RemoteWriteConfigs[0].HTTPClientConfig.BasicAuth.Password, password)
		}
	}
	delete(in.Secrets, "monitoring/remote")
	_, err := Generate(in)
	var re *RemoteError
	if !errors.As(err, &re) || re.Reason != ReasonInvalidRemoteWrite || !strings.Contains(re.Message, "spec.remoteWrite[0].basicAuth.username: Secret monitoring/remote not found") {
		t.Errorf("Generate without the Secret = %v", err)
	}
}

// FuzzRemoteWrite feeds random remote write and read fields: Generate either ships a config
// Prometheus loads, with every entry in it, or refuses with a *RemoteError naming the field;
// it never fails otherwise or panics.
func FuzzRemoteWrite(f *testing.F) {
	f.Add("https://w.example.com/api/v1/write", "central", "30s", "X-Scope-OrgID", "team", "keep", "up|node_.*", "V2.0", "", 10, 1)
	f.Add("http://127.0.0.1:9091/api/v1/write", "", "", "", "", "", "", "V1.0", "v2.45.0", 0, 0)
	f.Add("ftp://x", "a", "30 s", "Authorization", "Bearer x", "explode", "(", "V3", "v2.53.0", -1, 5)
	f.Add("https://w.example.com", "", "1h", "Content-Type", "text/plain", "lowercase", "", "", "v2.35.0", 5, 10)
	f.Add("", "q", "0", "bad header\n", "v", "KeepEqual", "x", "V2.0", "not a version", 1, 0)
	f.Fuzz(func(t *testing.T, url, name, timeout, header, headerValue, action, regex, messageVersion, version string, maxShards, minShards int) {
		rw := remoteWrite(url, func(rw *monitoringv1.RemoteWriteSpec) {
			if name != "" {
				rw.Name = &name
			}
			if timeout != "" {
				rw.RemoteTimeout = duration(timeout)
			}
			if header != "" {
				rw.Headers = map[string]string{header: headerValue}
			}
			if action != "" {
				rw.WriteRelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg(action, []string{"__name__"}, "x", regex)}
			}
			if messageVersion != "" {
				rw.MessageVersion = ptr(monitoringv1.RemoteWriteMessageVersion(messageVersion))
			}
			rw.QueueConfig = &monitoringv1.QueueConfig{MaxShards: maxShards, MinShards: minShards}
		})
		rr := remoteRead(url, func(rr *monitoringv1.RemoteReadSpec) {
			rr.Name = name
			rr.RequiredMatchers = map[string]string{header: headerValue}
		})
		in := newInput(newPrometheus(withVersion(version), withRemoteWrite(rw), withRemoteRead(rr)), monitors(newServiceMonitor("fuzz", "good")))
		res, err := Generate(in)
		if err != nil {
			var re *RemoteError
			if !errors.As(err, &re) {
				t.Fatalf("Generate failed with %T: %v", err, err)
			}
			if re.Reason == "" || !strings.HasPrefix(re.Message, "spec.") {
				t.Fatalf("refusal without a reason or a field: %+v", re)
			}
			return
		}
		cfg := mustLoad(t, res.Config())
		if len(cfg.RemoteWriteConfigs) != 1 || len(cfg.RemoteReadConfigs) != 1 || len(cfg.ScrapeConfigs) == 0 {
			t.Fatalf("entries missing from the config:\n%s", res.Config())
		}
	})
}
