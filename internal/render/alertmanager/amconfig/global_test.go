package amconfig

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	amcfg "github.com/prometheus/alertmanager/config"
	"go.yaml.in/yaml/v2"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

func globalFixture() *monitoringv1.AlertmanagerGlobalConfig {
	return &monitoringv1.AlertmanagerGlobalConfig{
		SMTPConfig: &monitoringv1.GlobalSMTPConfig{
			From:         ptrTo("alertmanager@example.com"),
			SmartHost:    &monitoringv1.HostPort{Host: "smtp.example.com", Port: "587"},
			Hello:        ptrTo("alertmanager.example.com"),
			AuthUsername: ptrTo("alertmanager"),
			AuthPassword: selp("global", "smtp-password"),
			AuthIdentity: ptrTo("alertmanager"),
			AuthSecret:   selp("global", "smtp-secret"),
			RequireTLS:   ptrTo(false),
			TLSConfig: &monitoringv1.SafeTLSConfig{
				CA:         monitoringv1.SecretOrConfigMap{Secret: selp("global-tls", "ca")},
				ServerName: ptrTo("smtp.example.com"),
			},
			ForceImplicitTLS: ptrTo(true),
		},
		ResolveTimeout: "1d",
		HTTPConfigWithProxy: &monitoringv1.HTTPConfigWithProxy{
			HTTPConfig: monitoringv1.HTTPConfig{
				HTTPConfigWithoutTLS: monitoringv1.HTTPConfigWithoutTLS{
					OAuth2: &monitoringv1.OAuth2{
						ClientID:     monitoringv1.SecretOrConfigMap{ConfigMap: cmSel("oauth", "client-id")},
						ClientSecret: sel("http", "client-secret"),
						TokenURL:     "https://auth.example.com/token",
					},
					FollowRedirects: ptrTo(true),
					EnableHTTP2:     ptrTo(true),
				},
				TLSConfig: &monitoringv1.SafeTLSConfig{InsecureSkipVerify: ptrTo(true)},
			},
			ProxyConfig: monitoringv1.ProxyConfig{ProxyURL: ptrTo("http://proxy.example.com:3128")},
		},
		SlackAPIURL:      selp("global", "slack"),
		OpsGenieAPIURL:   selp("global", "opsgenie"),
		OpsGenieAPIKey:   selp("global", "opsgenie-key"),
		PagerdutyURL:     ptrTo(monitoringv1.URL("https://events.eu.pagerduty.com/v2/enqueue")),
		TelegramConfig:   &monitoringv1.GlobalTelegramConfig{APIURL: ptrTo(monitoringv1.URL("https://telegram.example.com"))},
		JiraConfig:       &monitoringv1.GlobalJiraConfig{APIURL: ptrTo(monitoringv1.URL("https://example.atlassian.net/rest/api/2/"))},
		VictorOpsConfig:  &monitoringv1.GlobalVictorOpsConfig{APIURL: ptrTo(monitoringv1.URL("https://victorops.example.com/")), APIKey: selp("global", "victorops")},
		RocketChatConfig: &monitoringv1.GlobalRocketChatConfig{APIURL: ptrTo(monitoringv1.URL("https://chat.example.com/")), Token: selp("global", "rocketchat-token"), TokenID: selp("global", "rocketchat-id")},
		WebexConfig:      &monitoringv1.GlobalWebexConfig{APIURL: ptrTo(monitoringv1.URL("https://webex.example.com/v1/messages"))},
		WeChatConfig:     &monitoringv1.GlobalWeChatConfig{APIURL: ptrTo(monitoringv1.URL("https://wechat.example.com/cgi-bin/")), APISecret: selp("global", "wechat"), APICorpID: ptrTo("corp")},
		MattermostConfig: &monitoringv1.GlobalMattermostConfig{WebhookURL: selp("global", "mattermost")},
	}
}

func TestGlobalGolden(t *testing.T) {
	g := globalFixture()
	fieldsSetIn(t, *g)
	fieldsSetIn(t, *g.SMTPConfig)
	fieldsSetIn(t, *g.RocketChatConfig)
	fieldsSetIn(t, *g.WeChatConfig)
	fieldsSetIn(t, *g.VictorOpsConfig)

	out, err := convertGlobal(testRefs(amLatest), "spec.alertmanagerConfiguration.global", g)
	if err != nil {
		t.Fatal(err)
	}
	// Receivers that take their defaults from global.
	rcv := &receiver{Name: "x",
		EmailConfigs:      []*emailConfig{{To: "oncall@example.com"}},
		SlackConfigs:      []*slackConfig{{Channel: "#alerts"}},
		OpsGenieConfigs:   []*opsGenieConfig{{}},
		RocketChatConfigs: []*rocketChatConfig{{}},
		VictorOpsConfigs:  []*victorOpsConfig{{RoutingKey: "sre"}},
		WeChatConfigs:     []*weChatConfig{{}},
	}
	b, err := yaml.Marshal(document(out, rcv))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "global", b)
	cfg, err := amcfg.Load(string(b))
	if err != nil {
		t.Fatalf("Alertmanager refuses the config: %v\n%s", err, b)
	}
	gl := cfg.Global
	equal(t, "slack_api_url", gl.SlackAPIURL.String(), "https://hooks.slack.com/services/G/G/G")
	equal(t, "smtp_smarthost", gl.SMTPSmarthost.String(), "smtp.example.com:587")
	equal(t, "smtp_auth_password", string(gl.SMTPAuthPassword), "smtp-pass")
	equal(t, "smtp_require_tls", gl.SMTPRequireTLS, false)
	equal(t, "smtp tls ca", gl.SMTPTLSConfig.CA, "GLOBAL CA")
	equal(t, "resolve_timeout", gl.ResolveTimeout.String(), "1d")
	equal(t, "opsgenie_api_key", string(gl.OpsGenieAPIKey), "og-global-key")
	equal(t, "rocketchat_token", string(*gl.RocketchatToken), "rc-global-token")
	equal(t, "mattermost_webhook_url", gl.MattermostWebhookURL.String(), "https://mattermost.example.com/hooks/1")
	equal(t, "oauth2 client_id", gl.HTTPConfig.OAuth2.ClientID, "oauth-client")
	equal(t, "proxy_url", gl.HTTPConfig.ProxyURL.String(), "http://proxy.example.com:3128")
	r := cfg.Receivers[0]
	equal(t, "slack receiver api_url", r.SlackConfigs[0].APIURL.String(), "https://hooks.slack.com/services/G/G/G")
	equal(t, "email receiver password", string(r.EmailConfigs[0].AuthPassword), "smtp-pass")
	equal(t, "victorops receiver key", string(r.VictorOpsConfigs[0].APIKey), "vo-global-key")
	equal(t, "wechat receiver secret", string(r.WechatConfigs[0].APISecret), "wc-global-secret")

	if out, err := convertGlobal(testRefs(amLatest), "g", nil); out != nil || err != nil {
		t.Errorf("nil global: got %v, %v", out, err)
	}
}

func TestGlobalErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version workload.Version
		g       monitoringv1.AlertmanagerGlobalConfig
		reason  string
		field   string
	}{
		{"missing Secret", amLatest, monitoringv1.AlertmanagerGlobalConfig{SlackAPIURL: selp("nope", "url")},
			ReasonSecretNotFound, "g.slackApiUrl: Secret ns/nope not found"},
		{"missing key", amLatest, monitoringv1.AlertmanagerGlobalConfig{SMTPConfig: &monitoringv1.GlobalSMTPConfig{AuthPassword: selp("global", "nope")}},
			ReasonSecretKeyNotFound, "g.smtp.authPassword"},
		{"mattermost", amDefault, monitoringv1.AlertmanagerGlobalConfig{MattermostConfig: &monitoringv1.GlobalMattermostConfig{WebhookURL: selp("global", "mattermost")}},
			ReasonUnsupportedVersion, "g.mattermost.webhookURL: requires Alertmanager v0.32.0 or later"},
		{"smtp forceImplicitTLS", workload.Version{Minor: 30}, monitoringv1.AlertmanagerGlobalConfig{SMTPConfig: &monitoringv1.GlobalSMTPConfig{ForceImplicitTLS: ptrTo(true)}},
			ReasonUnsupportedVersion, "g.smtp.forceImplicitTLS: requires Alertmanager v0.31.0"},
		{"jira", workload.Version{Minor: 27}, monitoringv1.AlertmanagerGlobalConfig{JiraConfig: &monitoringv1.GlobalJiraConfig{APIURL: ptrTo(monitoringv1.URL("https://x.example.com"))}},
			ReasonUnsupportedVersion, "g.jira.apiURL: requires Alertmanager v0.28.0"},
		{"bad resolveTimeout", amLatest, monitoringv1.AlertmanagerGlobalConfig{ResolveTimeout: "5 minutes"},
			ReasonInvalidReceiver, "g.resolveTimeout"},
		{"smarthost without port", amLatest, monitoringv1.AlertmanagerGlobalConfig{SMTPConfig: &monitoringv1.GlobalSMTPConfig{SmartHost: &monitoringv1.HostPort{Host: "smtp"}}},
			ReasonInvalidReceiver, "g.smtp.smartHost"},
		{"bad pagerdutyUrl", amLatest, monitoringv1.AlertmanagerGlobalConfig{PagerdutyURL: ptrTo(monitoringv1.URL("ftp://x"))},
			ReasonInvalidReceiver, "g.pagerdutyUrl"},
		{"two authentications", amLatest, monitoringv1.AlertmanagerGlobalConfig{HTTPConfigWithProxy: &monitoringv1.HTTPConfigWithProxy{
			HTTPConfig: monitoringv1.HTTPConfig{HTTPConfigWithoutTLS: monitoringv1.HTTPConfigWithoutTLS{
				BasicAuth: &monitoringv1.BasicAuth{Username: sel("http", "user")}, BearerTokenSecret: selp("http", "bearer")}}}},
			ReasonInvalidReceiver, "g.httpConfig: basicAuth and bearerTokenSecret cannot be configured at the same time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convertGlobal(testRefs(tc.version), "g", &tc.g)
			wantRejection(t, err, tc.reason, tc.field)
		})
	}
}
