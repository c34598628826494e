package amconfig

import (
	"net"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// This file converts the global section of an Alertmanager
// (spec.alertmanagerConfiguration.global).

// globalConfig is the `global:` section.
type globalConfig struct {
	SMTPFrom             string      `yaml:"smtp_from,omitempty"`
	SMTPSmarthost        string      `yaml:"smtp_smarthost,omitempty"`
	SMTPHello            string      `yaml:"smtp_hello,omitempty"`
	SMTPAuthUsername     string      `yaml:"smtp_auth_username,omitempty"`
	SMTPAuthPassword     string      `yaml:"smtp_auth_password,omitempty"`
	SMTPAuthIdentity     string      `yaml:"smtp_auth_identity,omitempty"`
	SMTPAuthSecret       string      `yaml:"smtp_auth_secret,omitempty"`
	SMTPRequireTLS       *bool       `yaml:"smtp_require_tls,omitempty"`
	SMTPTLSConfig        *tlsConfig  `yaml:"smtp_tls_config,omitempty"`
	SMTPForceImplicitTLS *bool       `yaml:"smtp_force_implicit_tls,omitempty"`
	JiraAPIURL           string      `yaml:"jira_api_url,omitempty"`
	SlackAPIURL          string      `yaml:"slack_api_url,omitempty"`
	VictorOpsAPIKey      string      `yaml:"victorops_api_key,omitempty"`
	VictorOpsAPIURL      string      `yaml:"victorops_api_url,omitempty"`
	PagerdutyURL         string      `yaml:"pagerduty_url,omitempty"`
	OpsGenieAPIKey       string      `yaml:"opsgenie_api_key,omitempty"`
	OpsGenieAPIURL       string      `yaml:"opsgenie_api_url,omitempty"`
	RocketChatAPIURL     string      `yaml:"rocketchat_api_url,omitempty"`
	RocketChatToken      string      `yaml:"rocketchat_token,omitempty"`
	RocketChatTokenID    string      `yaml:"rocketchat_token_id,omitempty"`
	WeChatAPIURL         string      `yaml:"wechat_api_url,omitempty"`
	WeChatAPISecret      string      `yaml:"wechat_api_secret,omitempty"`
	WeChatAPICorpID      string      `yaml:"wechat_api_corp_id,omitempty"`
	TelegramAPIURL       string      `yaml:"telegram_api_url,omitempty"`
	WebexAPIURL          string      `yaml:"webex_api_url,omitempty"`
	MattermostWebhookURL string      `yaml:"mattermost_webhook_url,omitempty"`
	HTTPConfig           *httpConfig `yaml:"http_config,omitempty"`
	ResolveTimeout       string      `yaml:"resolve_timeout,omitempty"`
}

// convertGlobal converts spec.alertmanagerConfiguration.global; field is its path.
func convertGlobal(r *refs, field string, g *monitoringv1.AlertmanagerGlobalConfig) (*globalConfig, error) {
	if g == nil {
		return nil, nil
	}
	c := &conv{r: r}
	out := &globalConfig{
		SlackAPIURL:    c.secretURL(field+".slackApiUrl", g.SlackAPIURL),
		OpsGenieAPIURL: c.secretURL(field+".opsGenieApiUrl", g.OpsGenieAPIURL),
		OpsGenieAPIKey: c.secret(field+".opsGenieApiKey", g.OpsGenieAPIKey),
		PagerdutyURL:   c.url(field+".pagerdutyUrl", v1URLString(g.PagerdutyURL)),
	}
	if s := g.SMTPConfig; s != nil {
		f := field + ".smtp"
		out.SMTPFrom = deref(s.From)
		if hp := s.SmartHost; hp != nil {
			if hp.Host == "" || hp.Port == "" {
				c.invalid("%s.smartHost: host and port must both be set", f)
			}
			out.SMTPSmarthost = net.JoinHostPort(hp.Host, hp.Port)
		}
		out.SMTPHello = deref(s.Hello)
		out.SMTPAuthUsername = deref(s.AuthUsername)
		out.SMTPAuthPassword = c.secret(f+".authPassword", s.AuthPassword)
		out.SMTPAuthIdentity = deref(s.AuthIdentity)
		out.SMTPAuthSecret = c.secret(f+".authSecret", s.AuthSecret)
		out.SMTPRequireTLS = s.RequireTLS
		out.SMTPTLSConfig = c.tlsConfig(f+".tlsConfig", s.TLSConfig)
		out.SMTPForceImplicitTLS = s.ForceImplicitTLS
		c.since(0, 28, s.TLSConfig != nil, f+".tlsConfig")
		c.since(0, 31, s.ForceImplicitTLS != nil, f+".forceImplicitTLS")
	}
	if d := string(g.ResolveTimeout); d != "" {
		if _, err := workload.ParseDuration(d); err != nil {
			c.invalid("%s.resolveTimeout: %v", field, err)
		}
		out.ResolveTimeout = d
	}
	if hc := g.HTTPConfigWithProxy; hc != nil {
		f := field + ".httpConfig"
		out.HTTPConfig = c.httpParts(f, httpParts{
			authorization:   hc.Authorization,
			basicAuth:       hc.BasicAuth,
			oauth2:          hc.OAuth2,
			bearerToken:     hc.BearerTokenSecret,
			tls:             hc.TLSConfig,
			proxy:           hc.ProxyConfig,
			followRedirects: hc.FollowRedirects,
			enableHTTP2:     hc.EnableHTTP2,
		})
		if err := hc.Validate(); err != nil {
			c.invalid("%s: %v", f, err)
		}
	}
	if t := g.TelegramConfig; t != nil {
		out.TelegramAPIURL = c.url(field+".telegram.apiURL", v1URLString(t.APIURL))
		c.since(0, 24, t.APIURL != nil, field+".telegram.apiURL")
	}
	if j := g.JiraConfig; j != nil {
		out.JiraAPIURL = c.url(field+".jira.apiURL", v1URLString(j.APIURL))
		c.since(0, 28, j.APIURL != nil, field+".jira.apiURL")
	}
	if v := g.VictorOpsConfig; v != nil {
		out.VictorOpsAPIURL = c.url(field+".victorops.apiURL", v1URLString(v.APIURL))
		out.VictorOpsAPIKey = c.secret(field+".victorops.apiKey", v.APIKey)
	}
	if rc := g.RocketChatConfig; rc != nil {
		f := field + ".rocketChat"
		out.RocketChatAPIURL = c.url(f+".apiURL", v1URLString(rc.APIURL))
		out.RocketChatToken = c.secret(f+".token", rc.Token)
		out.RocketChatTokenID = c.secret(f+".tokenID", rc.TokenID)
		c.since(0, 28, rc.APIURL != nil, f+".apiURL")
		c.since(0, 28, rc.Token != nil, f+".token")
		c.since(0, 28, rc.TokenID != nil, f+".tokenID")
	}
	if w := g.WebexConfig; w != nil {
		out.WebexAPIURL = c.url(field+".webex.apiURL", v1URLString(w.APIURL))
		c.since(0, 25, w.APIURL != nil, field+".webex.apiURL")
	}
	if w := g.WeChatConfig; w != nil {
		out.WeChatAPIURL = c.url(field+".wechat.apiURL", v1URLString(w.APIURL))
		out.WeChatAPISecret = c.secret(field+".wechat.apiSecret", w.APISecret)
		out.WeChatAPICorpID = deref(w.APICorpID)
	}
	if m := g.MattermostConfig; m != nil {
		out.MattermostWebhookURL = c.secretURL(field+".mattermost.webhookURL", m.WebhookURL)
		c.since(0, 32, m.WebhookURL != nil, field+".mattermost.webhookURL")
	}
	if c.err != nil {
		return nil, c.err
	}
	return out, nil
}
