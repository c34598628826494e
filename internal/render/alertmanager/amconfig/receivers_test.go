package amconfig

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	amcfg "github.com/prometheus/alertmanager/config"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

var updateReceivers = flag.Bool("update-receivers", false, "rewrite the golden files in testdata/receivers")

// The versions the tests convert for.
var (
	amLatest  = workload.Version{Major: 0, Minor: 34}
	amDefault = workload.Version{Major: 0, Minor: 31, Patch: 1}
)

// The Secrets and ConfigMaps of the fixtures, in namespace "ns": name → key → value.
var (
	testSecrets = map[string]map[string]string{
		"slack":      {"url": "https://hooks.slack.com/services/T0/B0/XYZ\n", "bot-url": "https://slack.com/api/chat.postMessage"},
		"pagerduty":  {"routing": "pd-routing-key", "service": "pd-service-key"},
		"discord":    {"url": "https://discord.com/api/webhooks/1/abc"},
		"webhook":    {"url": "https://hooks.example.com/alert\n"},
		"opsgenie":   {"key": "og-key"},
		"wechat":     {"secret": "wc-secret"},
		"email":      {"password": "mail-pass", "secret": "cram-secret"},
		"victorops":  {"key": "vo-key"},
		"pushover":   {"user": "po-user", "token": "po-token"},
		"sns":        {"access": "AKIAEXAMPLE", "secret": "aws-secret"},
		"telegram":   {"token": "tg-token"},
		"webex":      {"token": "webex-token"},
		"msteams":    {"url": "https://example.webhook.office.com/webhookb2/1"},
		"msteamsv2":  {"url": "https://prod.westeurope.logic.azure.com/workflows/1"},
		"rocketchat": {"token": "rc-token", "id": "rc-id"},
		"http": {"user": "http-user", "password": "http-pass", "bearer": "http-bearer", "credentials": "http-credentials",
			"client-secret": "oauth-secret", "proxy-auth": "Basic cHJveHk6cGFzcw=="},
		"tls":        {"ca": "CA PEM", "key": "KEY PEM"},
		"global":     {"slack": "https://hooks.slack.com/services/G/G/G", "opsgenie": "https://api.eu.opsgenie.com/", "opsgenie-key": "og-global-key", "smtp-password": "smtp-pass", "smtp-secret": "smtp-cram", "victorops": "vo-global-key", "rocketchat-token": "rc-global-token", "rocketchat-id": "rc-global-id", "wechat": "wc-global-secret", "mattermost": "https://mattermost.example.com/hooks/1"},
		"global-tls": {"ca": "GLOBAL CA", "key": "GLOBAL KEY"},
	}
	testConfigMaps = map[string]map[string]string{
		"tls":   {"cert": "CERT PEM"},
		"oauth": {"client-id": "oauth-client"},
	}
)

func testRefs(v workload.Version) *refs {
	r := &refs{ns: "ns", version: v, secrets: map[string]*corev1.Secret{}, configMaps: map[string]*corev1.ConfigMap{}}
	for name, data := range testSecrets {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		r.secrets["ns/"+name] = s
	}
	for name, data := range testConfigMaps {
		r.configMaps["ns/"+name] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: data}
	}
	return r
}

func sel(name, key string) corev1.SecretKeySelector {
	return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func selp(name, key string) *corev1.SecretKeySelector {
	s := sel(name, key)
	return &s
}

func cmSel(name, key string) *corev1.ConfigMapKeySelector {
	return &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func ptrTo[T any](v T) *T { return &v }

func amURL(s string) *monitoringv1alpha1.URL { return ptrTo(monitoringv1alpha1.URL(s)) }

func dur(s string) *monitoringv1.Duration { return ptrTo(monitoringv1.Duration(s)) }

// tlsFull sets every field of SafeTLSConfig.
func tlsFull() *monitoringv1.SafeTLSConfig {
	return &monitoringv1.SafeTLSConfig{
		CA:                 monitoringv1.SecretOrConfigMap{Secret: selp("tls", "ca")},
		Cert:               monitoringv1.SecretOrConfigMap{ConfigMap: cmSel("tls", "cert")},
		KeySecret:          selp("tls", "key"),
		ServerName:         ptrTo("alerts.example.com"),
		InsecureSkipVerify: ptrTo(false),
		MinVersion:         ptrTo(monitoringv1.TLSVersion12),
		MaxVersion:         ptrTo(monitoringv1.TLSVersion13),
	}
}

// The HTTP configs of the fixtures; together they set every field of HTTPConfig.
func httpAuthorization() *monitoringv1alpha1.HTTPConfig {
	return &monitoringv1alpha1.HTTPConfig{
		Authorization:   &monitoringv1.SafeAuthorization{Type: "Bearer", Credentials: selp("http", "credentials")},
		TLSConfig:       tlsFull(),
		FollowRedirects: ptrTo(false),
		EnableHTTP2:     ptrTo(false),
	}
}

func httpBasicAuth() *monitoringv1alpha1.HTTPConfig {
	return &monitoringv1alpha1.HTTPConfig{
		BasicAuth:        &monitoringv1.BasicAuth{Username: sel("http", "user"), Password: sel("http", "password")},
		ProxyURLOriginal: ptrTo("http://proxy.example.com:3128"),
		ProxyConfig: monitoringv1.ProxyConfig{
			NoProxy:            ptrTo("10.0.0.0/8,.cluster.local"),
			ProxyConnectHeader: map[string][]corev1.SecretKeySelector{"Proxy-Authorization": {sel("http", "proxy-auth")}},
		},
	}
}

func httpOAuth2() *monitoringv1alpha1.HTTPConfig {
	return &monitoringv1alpha1.HTTPConfig{
		OAuth2: &monitoringv1.OAuth2{
			ClientID:       monitoringv1.SecretOrConfigMap{ConfigMap: cmSel("oauth", "client-id")},
			ClientSecret:   sel("http", "client-secret"),
			TokenURL:       "https://auth.example.com/token",
			Scopes:         []string{"alerts", "write"},
			EndpointParams: map[string]string{"audience": "alerts"},
			TLSConfig:      &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: selp("tls", "ca")}},
			ProxyConfig:    monitoringv1.ProxyConfig{ProxyURL: ptrTo("http://oauth-proxy.example.com:3128")},
		},
		ProxyConfig: monitoringv1.ProxyConfig{ProxyFromEnvironment: ptrTo(true)},
	}
}

func httpBearer() *monitoringv1alpha1.HTTPConfig {
	return &monitoringv1alpha1.HTTPConfig{
		BearerTokenSecret: selp("http", "bearer"),
		ProxyConfig:       monitoringv1.ProxyConfig{ProxyURL: ptrTo("https://proxy2.example.com:3128")},
	}
}

// receiverCase is one receiver type with all its fields set, and what to check in
// Alertmanager's loaded config.
type receiverCase struct {
	name  string
	rc    monitoringv1alpha1.Receiver
	check func(t *testing.T, r *amcfg.Receiver)
}

func receiverCases() []receiverCase {
	return []receiverCase{
		{name: "discord", rc: monitoringv1alpha1.Receiver{DiscordConfigs: []monitoringv1alpha1.DiscordConfig{{
			SendResolved: ptrTo(false),
			APIURL:       sel("discord", "url"),
			Title:        ptrTo(""),
			Message:      ptrTo("{{ .CommonAnnotations.summary }}"),
			Content:      ptrTo("@here"),
			Username:     ptrTo("alertmanager"),
			AvatarURL:    amURL("https://example.com/avatar.png"),
			HTTPConfig:   httpBearer(),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			d := r.DiscordConfigs[0]
			equal(t, "webhook_url", d.WebhookURL.String(), "https://discord.com/api/webhooks/1/abc")
			equal(t, "title", d.Title, "")
			equal(t, "bearer token", string(d.HTTPConfig.Authorization.Credentials), "http-bearer")
		}},
		{name: "email", rc: monitoringv1alpha1.Receiver{EmailConfigs: []monitoringv1alpha1.EmailConfig{{
			SendResolved:     ptrTo(true),
			To:               ptrTo("oncall@example.com"),
			From:             ptrTo("alertmanager@example.com"),
			Hello:            ptrTo("alertmanager.example.com"),
			Smarthost:        ptrTo("smtp.example.com:587"),
			AuthUsername:     ptrTo("alertmanager"),
			AuthPassword:     selp("email", "password"),
			AuthSecret:       selp("email", "secret"),
			AuthIdentity:     ptrTo("alertmanager"),
			Headers:          []monitoringv1alpha1.KeyValue{{Key: "Subject", Value: "[{{ .Status }}] alert"}, {Key: "x-team", Value: "sre"}},
			HTML:             ptrTo(""),
			Text:             ptrTo("{{ template \"email.default.text\" . }}"),
			RequireTLS:       ptrTo(true),
			TLSConfig:        tlsFull(),
			ForceImplicitTLS: ptrTo(false),
			Threading:        &monitoringv1alpha1.EmailThreadingConfig{ThreadByDate: monitoringv1alpha1.ThreadByDateTypeDaily},
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			e := r.EmailConfigs[0]
			equal(t, "auth_password", string(e.AuthPassword), "mail-pass")
			equal(t, "auth_secret", string(e.AuthSecret), "cram-secret")
			equal(t, "smarthost", e.Smarthost.String(), "smtp.example.com:587")
			equal(t, "tls key", string(e.TLSConfig.Key), "KEY PEM")
			equal(t, "threading", e.Threading.ThreadByDate, "daily")
			equal(t, "html", e.HTML, "")
		}},
		{name: "msteams", rc: monitoringv1alpha1.Receiver{MSTeamsConfigs: []monitoringv1alpha1.MSTeamsConfig{{
			SendResolved: ptrTo(true),
			WebhookURL:   sel("msteams", "url"),
			Title:        ptrTo("{{ .CommonLabels.alertname }}"),
			Summary:      ptrTo("summary"),
			Text:         ptrTo(""),
			HTTPConfig:   httpBasicAuth(),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			m := r.MSTeamsConfigs[0]
			equal(t, "webhook_url", m.WebhookURL.String(), "https://example.webhook.office.com/webhookb2/1")
			equal(t, "proxy", m.HTTPConfig.ProxyURL.String(), "http://proxy.example.com:3128")
			equal(t, "proxy header", string(m.HTTPConfig.ProxyConnectHeader["Proxy-Authorization"][0]), "Basic cHJveHk6cGFzcw==")
		}},
		{name: "msteamsv2", rc: monitoringv1alpha1.Receiver{MSTeamsV2Configs: []monitoringv1alpha1.MSTeamsV2Config{{
			SendResolved: ptrTo(false),
			WebhookURL:   selp("msteamsv2", "url"),
			Title:        ptrTo("title"),
			Text:         ptrTo("text"),
			HTTPConfig:   httpOAuth2(),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			m := r.MSTeamsV2Configs[0]
			equal(t, "webhook_url", m.WebhookURL.String(), "https://prod.westeurope.logic.azure.com/workflows/1")
			equal(t, "oauth2 client_id", m.HTTPConfig.OAuth2.ClientID, "oauth-client")
			equal(t, "oauth2 client_secret", string(m.HTTPConfig.OAuth2.ClientSecret), "oauth-secret")
		}},
		{name: "opsgenie", rc: monitoringv1alpha1.Receiver{OpsGenieConfigs: []monitoringv1alpha1.OpsGenieConfig{{
			SendResolved: ptrTo(true),
			APIKey:       selp("opsgenie", "key"),
			APIURL:       amURL("https://api.eu.opsgenie.com/"),
			Message:      ptrTo("{{ .CommonLabels.alertname }}"),
			Description:  ptrTo("description"),
			Source:       ptrTo("lookout"),
			Tags:         ptrTo("a,b"),
			Note:         ptrTo("note"),
			Priority:     ptrTo("P2"),
			UpdateAlerts: ptrTo(true),
			Details:      []monitoringv1alpha1.KeyValue{{Key: "cluster", Value: "prod"}},
			Responders: []monitoringv1alpha1.OpsGenieConfigResponder{
				{ID: ptrTo("4513b7ea"), Type: "team"},
				{Name: ptrTo("sre"), Type: "Schedule"},
				{Username: ptrTo("jane@example.com"), Type: "user"},
			},
			HTTPConfig: httpOAuth2(),
			Entity:     ptrTo("{{ .CommonLabels.service }}"),
			Actions:    ptrTo("restart,page"),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			o := r.OpsGenieConfigs[0]
			equal(t, "api_key", string(o.APIKey), "og-key")
			equal(t, "responder name", o.Responders[1].Name, "sre")
		}},
		{name: "pagerduty", rc: monitoringv1alpha1.Receiver{PagerDutyConfigs: []monitoringv1alpha1.PagerDutyConfig{{
			SendResolved: ptrTo(true),
			RoutingKey:   selp("pagerduty", "routing"),
			ServiceKey:   selp("pagerduty", "service"),
			URL:          amURL("https://events.eu.pagerduty.com/v2/enqueue"),
			Client:       ptrTo("lookout"),
			ClientURL:    ptrTo("https://alertmanager.example.com"),
			Description:  ptrTo("{{ .CommonAnnotations.summary }}"),
			Severity:     ptrTo("critical"),
			Class:        ptrTo("cpu"),
			Group:        ptrTo("app"),
			Component:    ptrTo("web"),
			Details:      []monitoringv1alpha1.KeyValue{{Key: "firing", Value: "{{ .Alerts.Firing | len }}"}, {Key: "cluster", Value: "prod"}},
			PagerDutyImageConfigs: []monitoringv1alpha1.PagerDutyImageConfig{
				{Src: ptrTo("https://example.com/graph.png"), Href: ptrTo("https://example.com/graph"), Alt: ptrTo("graph")},
			},
			PagerDutyLinkConfigs: []monitoringv1alpha1.PagerDutyLinkConfig{
				{Href: ptrTo("https://example.com/runbook"), Text: ptrTo("runbook")},
			},
			HTTPConfig: httpBearer(),
			Source:     ptrTo("prometheus"),
			Timeout:    dur("1d"),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			p := r.PagerdutyConfigs[0]
			equal(t, "routing_key", string(p.RoutingKey), "pd-routing-key")
			equal(t, "service_key", string(p.ServiceKey), "pd-service-key")
			equal(t, "timeout", p.Timeout.String(), "24h0m0s")
			equal(t, "link text", p.Links[0].Text, "runbook")
			equal(t, "detail", p.Details["cluster"], any("prod"))
		}},
		{name: "pushover", rc: monitoringv1alpha1.Receiver{PushoverConfigs: []monitoringv1alpha1.PushoverConfig{{
			SendResolved: ptrTo(true),
			UserKey:      selp("pushover", "user"),
			Token:        selp("pushover", "token"),
			Title:        ptrTo("title"),
			Message:      ptrTo("message"),
			URL:          "https://example.com",
			URLTitle:     ptrTo("dashboard"),
			TTL:          dur("1d"),
			Device:       ptrTo("phone"),
			Sound:        ptrTo("siren"),
			Priority:     ptrTo("1"),
			Retry:        ptrTo("30s"),
			Expire:       ptrTo("2h"),
			HTML:         ptrTo(true),
			HTTPConfig:   httpAuthorization(),
		}, {
			UserKeyFile: ptrTo("/etc/alertmanager/secrets/pushover/user"),
			TokenFile:   ptrTo("/etc/alertmanager/secrets/pushover/token"),
			Monospace:   ptrTo(true),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			p := r.PushoverConfigs[0]
			equal(t, "user_key", string(p.UserKey), "po-user")
			equal(t, "token", string(p.Token), "po-token")
			equal(t, "user_key_file", r.PushoverConfigs[1].UserKeyFile, "/etc/alertmanager/secrets/pushover/user")
		}},
		{name: "rocketchat", rc: monitoringv1alpha1.Receiver{RocketChatConfigs: []monitoringv1alpha1.RocketChatConfig{{
			SendResolved: ptrTo(true),
			APIURL:       amURL("https://chat.example.com/"),
			Channel:      ptrTo("#alerts"),
			Token:        sel("rocketchat", "token"),
			TokenID:      sel("rocketchat", "id"),
			Color:        ptrTo("red"),
			Emoji:        ptrTo(":fire:"),
			IconURL:      ptrTo(""),
			Text:         ptrTo("text"),
			Title:        ptrTo("title"),
			TitleLink:    ptrTo("https://example.com"),
			Fields:       []monitoringv1alpha1.RocketChatFieldConfig{{Title: ptrTo("severity"), Value: ptrTo("{{ .CommonLabels.severity }}"), Short: ptrTo(true)}},
			ShortFields:  ptrTo(true),
			ImageURL:     ptrTo("https://example.com/image.png"),
			ThumbURL:     ptrTo("https://example.com/thumb.png"),
			LinkNames:    ptrTo(true),
			Actions:      []monitoringv1alpha1.RocketChatActionConfig{{Text: ptrTo("Silence"), URL: ptrTo("https://alertmanager.example.com/#/silences/new"), Msg: ptrTo("silenced")}},
			HTTPConfig:   httpBasicAuth(),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			c := r.RocketchatConfigs[0]
			equal(t, "token", string(*c.Token), "rc-token")
			equal(t, "token_id", string(*c.TokenID), "rc-id")
			equal(t, "action msg", c.Actions[0].Msg, "silenced")
			equal(t, "field short", *c.Fields[0].Short, true)
		}},
		{name: "slack", rc: monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{
			SendResolved: ptrTo(true),
			APIURL:       selp("slack", "url"),
			Channel:      ptrTo("#alerts"),
			Username:     ptrTo("alertmanager"),
			Color:        ptrTo("danger"),
			Title:        ptrTo("{{ .CommonLabels.alertname }}"),
			TitleLink:    "https://alertmanager.example.com",
			Pretext:      ptrTo("pretext"),
			Text:         ptrTo("text"),
			Fields:       []monitoringv1alpha1.SlackField{{Title: "severity", Value: "{{ .CommonLabels.severity }}", Short: ptrTo(true)}},
			ShortFields:  ptrTo(true),
			Footer:       ptrTo("footer"),
			Fallback:     ptrTo("fallback"),
			CallbackID:   ptrTo("callback"),
			IconEmoji:    ptrTo(":fire:"),
			IconURL:      "https://example.com/icon.png",
			ImageURL:     "https://example.com/image.png",
			ThumbURL:     "https://example.com/thumb.png",
			LinkNames:    ptrTo(true),
			MrkdwnIn:     []string{"fallback", "text"},
			Actions: []monitoringv1alpha1.SlackAction{{
				// A link button: Alertmanager drops name, value and confirm when url is set.
				Type:  "button",
				Text:  "Runbook",
				URL:   "https://example.com/runbook",
				Style: ptrTo("primary"),
			}, {
				Type:  "button",
				Text:  "Acknowledge",
				Name:  ptrTo("ack"),
				Value: ptrTo("yes"),
				ConfirmField: &monitoringv1alpha1.SlackConfirmationField{
					Text: "Sure?", Title: ptrTo("Confirm"), OkText: ptrTo("Yes"), DismissText: ptrTo("No"),
				},
			}},
			HTTPConfig:  httpAuthorization(),
			Timeout:     dur("30s"),
			MessageText: ptrTo("{{ .CommonAnnotations.summary }}"),
		}, {
			APIURL:        selp("slack", "bot-url"),
			Channel:       ptrTo("#bot"),
			UpdateMessage: ptrTo(true),
			HTTPConfig:    &monitoringv1alpha1.HTTPConfig{Authorization: &monitoringv1.SafeAuthorization{Credentials: selp("http", "credentials")}},
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			s := r.SlackConfigs[0]
			equal(t, "api_url", s.APIURL.String(), "https://hooks.slack.com/services/T0/B0/XYZ")
			equal(t, "confirm", s.Actions[1].ConfirmField.DismissText, "No")
			equal(t, "authorization", string(s.HTTPConfig.Authorization.Credentials), "http-credentials")
			equal(t, "tls ca", s.HTTPConfig.TLSConfig.CA, "CA PEM")
			equal(t, "tls cert", s.HTTPConfig.TLSConfig.Cert, "CERT PEM")
			equal(t, "update_message", r.SlackConfigs[1].UpdateMessage, true)
		}},
		{name: "sns", rc: monitoringv1alpha1.Receiver{SNSConfigs: []monitoringv1alpha1.SNSConfig{{
			SendResolved: ptrTo(true),
			ApiURL:       ptrTo("https://sns.us-east-2.amazonaws.com"),
			Sigv4: &monitoringv1.Sigv4{
				Region:             "us-east-2",
				AccessKey:          selp("sns", "access"),
				SecretKey:          selp("sns", "secret"),
				Profile:            "alerts",
				RoleArn:            "arn:aws:iam::123456789012:role/alerts",
				ExternalID:         "lookout",
				UseFIPSSTSEndpoint: ptrTo(true),
			},
			TopicARN:         ptrTo("arn:aws:sns:us-east-2:123456789012:alerts"),
			Subject:          ptrTo("subject"),
			Message:          ptrTo("message"),
			Attributes:       map[string]string{"team": "sre", "env": "prod"},
			HTTPConfig:       httpBearer(),
			UseAWSHTTPClient: ptrTo(true),
		}, {
			PhoneNumber: ptrTo("+15555550100"),
		}, {
			TargetARN: ptrTo("arn:aws:sns:us-east-2:123456789012:endpoint/APNS/app/1"),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			s := r.SNSConfigs[0]
			equal(t, "access_key", s.Sigv4.AccessKey, "AKIAEXAMPLE")
			equal(t, "secret_key", string(s.Sigv4.SecretKey), "aws-secret")
			equal(t, "external_id", s.Sigv4.ExternalID, "lookout")
			equal(t, "phone", r.SNSConfigs[1].PhoneNumber, "+15555550100")
		}},
		{name: "telegram", rc: monitoringv1alpha1.Receiver{TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{
			SendResolved:         ptrTo(true),
			APIURL:               amURL("https://telegram.example.com"),
			BotToken:             selp("telegram", "token"),
			ChatID:               -1001234567890,
			MessageThreadID:      ptrTo(int64(42)),
			Message:              "{{ .CommonAnnotations.summary }}",
			DisableNotifications: ptrTo(true),
			ParseMode:            "MarkdownV2",
			HTTPConfig:           httpOAuth2(),
		}, {
			BotTokenFile: ptrTo("/etc/alertmanager/secrets/telegram/token"),
			ChatID:       12345,
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			c := r.TelegramConfigs[0]
			equal(t, "bot_token", string(c.BotToken), "tg-token")
			equal(t, "chat_id", c.ChatID, int64(-1001234567890))
			equal(t, "message_thread_id", c.MessageThreadID, 42)
			equal(t, "bot_token_file", r.TelegramConfigs[1].BotTokenFile, "/etc/alertmanager/secrets/telegram/token")
		}},
		{name: "victorops", rc: monitoringv1alpha1.Receiver{VictorOpsConfigs: []monitoringv1alpha1.VictorOpsConfig{{
			SendResolved:      ptrTo(false),
			APIKey:            selp("victorops", "key"),
			APIURL:            amURL("https://alert.victorops.example.com/integrations/generic/20131114/alert/"),
			RoutingKey:        "sre",
			MessageType:       ptrTo("CRITICAL"),
			EntityDisplayName: ptrTo("{{ .CommonLabels.alertname }}"),
			StateMessage:      ptrTo("state"),
			MonitoringTool:    ptrTo("prometheus"),
			CustomFields:      []monitoringv1alpha1.KeyValue{{Key: "cluster", Value: "prod"}},
			HTTPConfig:        httpBasicAuth(),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			v := r.VictorOpsConfigs[0]
			equal(t, "api_key", string(v.APIKey), "vo-key")
			equal(t, "routing_key", v.RoutingKey, "sre")
			equal(t, "basic auth password", string(v.HTTPConfig.BasicAuth.Password), "http-pass")
		}},
		{name: "webex", rc: monitoringv1alpha1.Receiver{WebexConfigs: []monitoringv1alpha1.WebexConfig{{
			SendResolved: ptrTo(true),
			APIURL:       amURL("https://webexapis.com/v1/messages"),
			HTTPConfig:   &monitoringv1alpha1.HTTPConfig{Authorization: &monitoringv1.SafeAuthorization{Credentials: selp("webex", "token")}},
			Message:      ptrTo("{{ .CommonAnnotations.summary }}"),
			RoomID:       "room-1",
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			w := r.WebexConfigs[0]
			equal(t, "room_id", w.RoomID, "room-1")
			equal(t, "credentials", string(w.HTTPConfig.Authorization.Credentials), "webex-token")
		}},
		{name: "webhook", rc: monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			SendResolved: ptrTo(false),
			URL:          ptrTo("https://ignored.example.com/"),
			URLSecret:    selp("webhook", "url"),
			HTTPConfig:   httpBasicAuth(),
			MaxAlerts:    10,
			Timeout:      dur("10s"),
			Payload:      ptrTo(`{"text": "{{ .CommonLabels.alertname }}"}`),
		}, {
			URL: ptrTo("https://hooks.example.com/{{ .GroupLabels.team }}"),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			w := r.WebhookConfigs[0]
			equal(t, "url", string(w.URL), "https://hooks.example.com/alert")
			equal(t, "max_alerts", w.MaxAlerts, uint64(10))
			equal(t, "payload", w.Payload, any(`{"text": "{{ .CommonLabels.alertname }}"}`))
			equal(t, "templated url", string(r.WebhookConfigs[1].URL), "https://hooks.example.com/{{ .GroupLabels.team }}")
		}},
		{name: "wechat", rc: monitoringv1alpha1.Receiver{WeChatConfigs: []monitoringv1alpha1.WeChatConfig{{
			SendResolved: ptrTo(true),
			APISecret:    selp("wechat", "secret"),
			APIURL:       amURL("https://qyapi.weixin.qq.com/cgi-bin/"),
			CorpID:       ptrTo("corp"),
			AgentID:      ptrTo("1000002"),
			ToUser:       ptrTo("@all"),
			ToParty:      ptrTo("1"),
			ToTag:        ptrTo("2"),
			Message:      ptrTo("{{ .CommonAnnotations.summary }}"),
			MessageType:  ptrTo("markdown"),
			HTTPConfig:   httpBearer(),
		}}}, check: func(t *testing.T, r *amcfg.Receiver) {
			w := r.WechatConfigs[0]
			equal(t, "api_secret", string(w.APISecret), "wc-secret")
			equal(t, "corp_id", w.CorpID, "corp")
		}},
	}
}

func equal[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// document is a minimal config around one receiver named x.
func document(g *globalConfig, rcv *receiver) yaml.MapSlice {
	var doc yaml.MapSlice
	if g != nil {
		doc = append(doc, yaml.MapItem{Key: "global", Value: g})
	}
	doc = append(doc,
		yaml.MapItem{Key: "route", Value: yaml.MapSlice{{Key: "receiver", Value: "x"}}},
		yaml.MapItem{Key: "receivers", Value: []*receiver{rcv}})
	return doc
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "receivers", name+".golden.yaml")
	if *updateReceivers {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-receivers to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run with -update-receivers to accept):\n%s", path, got)
	}
}

func TestReceiverGolden(t *testing.T) {
	for _, tc := range receiverCases() {
		t.Run(tc.name, func(t *testing.T) {
			out, err := convertReceiver(testRefs(amLatest), "spec.receivers[0]", &tc.rc)
			if err != nil {
				t.Fatal(err)
			}
			out.Name = "x"
			b, err := yaml.Marshal(document(nil, out))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, b)
			cfg, err := amcfg.Load(string(b))
			if err != nil {
				t.Fatalf("Alertmanager refuses the config: %v\n%s", err, b)
			}
			tc.check(t, &cfg.Receivers[0])
		})
	}
}

// fieldsSetIn fails for each field of T that is the zero value in every item: the
// fixtures must set every field of the API types, so that a field added to them is
// either converted or refused.
func fieldsSetIn[T any](t *testing.T, items ...T) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		if !slices.ContainsFunc(items, func(it T) bool { return !reflect.ValueOf(it).Field(i).IsZero() }) {
			t.Errorf("%s.%s is set in no fixture: convert it and set it in the fixtures, or refuse it", typ.Name(), typ.Field(i).Name)
		}
	}
}

// allReceiver has every config of every fixture.
func allReceiver() monitoringv1alpha1.Receiver {
	var all monitoringv1alpha1.Receiver
	dst := reflect.ValueOf(&all).Elem()
	for _, tc := range receiverCases() {
		src := reflect.ValueOf(tc.rc)
		for i := range src.NumField() {
			if src.Field(i).Kind() == reflect.Slice {
				dst.Field(i).Set(reflect.AppendSlice(dst.Field(i), src.Field(i)))
			}
		}
	}
	return all
}

func TestReceiverFixturesSetEveryField(t *testing.T) {
	all := allReceiver()
	v := reflect.ValueOf(all)
	for i := range v.NumField() {
		if v.Type().Field(i).Name != "Name" && v.Field(i).Len() == 0 {
			t.Errorf("Receiver.%s has no fixture", v.Type().Field(i).Name)
		}
	}
	fieldsSetIn(t, all.DiscordConfigs...)
	fieldsSetIn(t, all.EmailConfigs...)
	fieldsSetIn(t, all.MSTeamsConfigs...)
	fieldsSetIn(t, all.MSTeamsV2Configs...)
	fieldsSetIn(t, all.OpsGenieConfigs...)
	fieldsSetIn(t, all.PagerDutyConfigs...)
	fieldsSetIn(t, all.PushoverConfigs...)
	fieldsSetIn(t, all.RocketChatConfigs...)
	fieldsSetIn(t, all.SlackConfigs...)
	fieldsSetIn(t, all.SNSConfigs...)
	fieldsSetIn(t, all.TelegramConfigs...)
	fieldsSetIn(t, all.VictorOpsConfigs...)
	fieldsSetIn(t, all.WebexConfigs...)
	fieldsSetIn(t, all.WebhookConfigs...)
	fieldsSetIn(t, all.WeChatConfigs...)

	fieldsSetIn(t, all.SlackConfigs[0].Actions...)
	fieldsSetIn(t, *all.SlackConfigs[0].Actions[1].ConfirmField)
	fieldsSetIn(t, all.SlackConfigs[0].Fields...)
	fieldsSetIn(t, all.PagerDutyConfigs[0].PagerDutyImageConfigs...)
	fieldsSetIn(t, all.PagerDutyConfigs[0].PagerDutyLinkConfigs...)
	fieldsSetIn(t, all.OpsGenieConfigs[0].Responders...)
	fieldsSetIn(t, all.RocketChatConfigs[0].Fields...)
	fieldsSetIn(t, all.RocketChatConfigs[0].Actions...)
	fieldsSetIn(t, *all.SNSConfigs[0].Sigv4)
	fieldsSetIn(t, *all.EmailConfigs[0].Threading)
	fieldsSetIn(t, *tlsFull())

	https := []monitoringv1alpha1.HTTPConfig{*httpAuthorization(), *httpBasicAuth(), *httpOAuth2(), *httpBearer()}
	fieldsSetIn(t, https...)
	var proxies []monitoringv1.ProxyConfig
	for _, h := range https {
		proxies = append(proxies, h.ProxyConfig)
		if h.OAuth2 != nil {
			fieldsSetIn(t, *h.OAuth2)
			proxies = append(proxies, h.OAuth2.ProxyConfig)
		}
	}
	fieldsSetIn(t, proxies...)
}

// referenced lists the "ns/name" of every Secret and ConfigMap selector in v.
func referenced(v any) (secrets, configMaps []string) {
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k))
			}
		case reflect.Struct:
			switch s := v.Interface().(type) {
			case corev1.SecretKeySelector:
				if s.Name != "" {
					secrets = append(secrets, "ns/"+s.Name)
				}
				return
			case corev1.ConfigMapKeySelector:
				configMaps = append(configMaps, "ns/"+s.Name)
				return
			}
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(v))
	slices.Sort(secrets)
	slices.Sort(configMaps)
	return slices.Compact(secrets), slices.Compact(configMaps)
}

func collectRefs() *refs {
	return &refs{ns: "ns", collect: true, secretKeys: map[string]struct{}{}, configMapKeys: map[string]struct{}{},
		version: workload.Version{Major: 1 << 20}}
}

func sortedKeys(m map[string]struct{}) []string {
	var l []string
	for k := range m {
		l = append(l, k)
	}
	slices.Sort(l)
	return l
}

func TestCollectVisitsEveryReference(t *testing.T) {
	all := allReceiver()
	// A broken config first: the references after it must still be visited.
	all.DiscordConfigs = append([]monitoringv1alpha1.DiscordConfig{{APIURL: sel("discord", "url"), AvatarURL: amURL("not a url")}}, all.DiscordConfigs...)
	r := collectRefs()
	if _, err := convertReceiver(r, "spec.receivers[0]", &all); err == nil {
		t.Fatal("the broken Discord config converted")
	}
	wantS, wantC := referenced(all)
	if got := sortedKeys(r.secretKeys); !slices.Equal(got, wantS) {
		t.Errorf("Secrets recorded:\n got %v\nwant %v", got, wantS)
	}
	if got := sortedKeys(r.configMapKeys); !slices.Equal(got, wantC) {
		t.Errorf("ConfigMaps recorded:\n got %v\nwant %v", got, wantC)
	}
	if len(wantS) < 15 {
		t.Errorf("the fixtures reference only %d Secrets", len(wantS))
	}

	g := globalFixture()
	r = collectRefs()
	if _, err := convertGlobal(r, "", g); err != nil {
		t.Fatal(err)
	}
	wantS, wantC = referenced(g)
	if got := sortedKeys(r.secretKeys); !slices.Equal(got, wantS) {
		t.Errorf("global: Secrets recorded:\n got %v\nwant %v", got, wantS)
	}
	if got := sortedKeys(r.configMapKeys); !slices.Equal(got, wantC) {
		t.Errorf("global: ConfigMaps recorded:\n got %v\nwant %v", got, wantC)
	}
}

func wantRejection(t *testing.T, err error, reason, field string) {
	t.Helper()
	var rj *rejection
	if !errors.As(err, &rj) {
		t.Fatalf("got %v, want a rejection %s naming %s", err, reason, field)
	}
	if rj.Reason != reason || !strings.Contains(rj.Message, field) {
		t.Errorf("got %s: %q, want %s naming %s", rj.Reason, rj.Message, reason, field)
	}
}

func TestReceiverReferenceErrors(t *testing.T) {
	optional := func(s corev1.SecretKeySelector) *corev1.SecretKeySelector {
		s.Optional = ptrTo(true)
		return &s
	}
	for _, tc := range []struct {
		name   string
		rc     monitoringv1alpha1.Receiver
		reason string // "" for no error
		field  string
	}{
		{"missing Secret", monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{APIURL: selp("nope", "url")}}},
			ReasonSecretNotFound, "spec.receivers[3].slackConfigs[0].apiURL: Secret ns/nope not found"},
		{"missing key", monitoringv1alpha1.Receiver{PagerDutyConfigs: []monitoringv1alpha1.PagerDutyConfig{{RoutingKey: selp("pagerduty", "nope")}}},
			ReasonSecretKeyNotFound, "spec.receivers[3].pagerdutyConfigs[0].routingKey"},
		{"missing key deep in httpConfig", monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL:        ptrTo("https://example.com"),
			HTTPConfig: &monitoringv1alpha1.HTTPConfig{BasicAuth: &monitoringv1.BasicAuth{Username: sel("http", "user"), Password: sel("http", "nope")}},
		}}}, ReasonSecretKeyNotFound, "spec.receivers[3].webhookConfigs[0].httpConfig.basicAuth.password"},
		{"missing ConfigMap", monitoringv1alpha1.Receiver{OpsGenieConfigs: []monitoringv1alpha1.OpsGenieConfig{{
			HTTPConfig: &monitoringv1alpha1.HTTPConfig{OAuth2: &monitoringv1.OAuth2{
				ClientID: monitoringv1.SecretOrConfigMap{ConfigMap: cmSel("nope", "id")}, ClientSecret: sel("http", "client-secret"), TokenURL: "https://auth.example.com/"}},
		}}}, ReasonConfigMapNotFound, "spec.receivers[3].opsgenieConfigs[0].httpConfig.oauth2.clientId.configMap"},
		{"optional missing Secret", monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), URLSecret: optional(sel("nope", "url")),
		}}}, "", ""},
		{"optional missing key", monitoringv1alpha1.Receiver{OpsGenieConfigs: []monitoringv1alpha1.OpsGenieConfig{{APIKey: optional(sel("opsgenie", "nope"))}}},
			"", ""},
		{"optional missing value still needed", monitoringv1alpha1.Receiver{DiscordConfigs: []monitoringv1alpha1.DiscordConfig{{APIURL: *optional(sel("nope", "url"))}}},
			ReasonInvalidReceiver, "spec.receivers[3].discordConfigs[0].apiURL"},
		{"selector without key", monitoringv1alpha1.Receiver{TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{ChatID: 1, BotToken: selp("telegram", "")}}},
			ReasonInvalidReceiver, "spec.receivers[3].telegramConfigs[0].botToken"},
		{"a Secret's bad URL is not shown", monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{APIURL: selp("pagerduty", "routing")}}},
			ReasonInvalidReceiver, `spec.receivers[3].slackConfigs[0].apiURL: the value of key "routing" of Secret ns/pagerduty is not an http(s) URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convertReceiver(testRefs(amLatest), "spec.receivers[3]", &tc.rc)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantRejection(t, err, tc.reason, tc.field)
		})
	}
}

func TestOptionalWebhookSecretFallsBackToURL(t *testing.T) {
	rc := monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
		URL: ptrTo("https://example.com/hook"), URLSecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "url", Optional: ptrTo(true)},
	}}}
	out, err := convertReceiver(testRefs(amLatest), "spec.receivers[0]", &rc)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "url", out.WebhookConfigs[0].URL, "https://example.com/hook")
}

func TestReceiverValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version workload.Version
		rc      monitoringv1alpha1.Receiver
		reason  string
		field   string
	}{
		// Fields newer than the default Alertmanager, v0.31.1.
		{"slack updateMessage", amDefault, monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{
			APIURL: selp("slack", "bot-url"), UpdateMessage: ptrTo(true)}}},
			ReasonUnsupportedVersion, "spec.receivers[0].slackConfigs[0].updateMessage: requires Alertmanager v0.32.0 or later, the Alertmanager runs v0.31.1"},
		{"webhook payload", amDefault, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), Payload: ptrTo("{}")}}},
			ReasonUnsupportedVersion, "webhookConfigs[0].payload: requires Alertmanager v0.32.0"},
		{"sns useAWSHTTPClient", amDefault, monitoringv1alpha1.Receiver{SNSConfigs: []monitoringv1alpha1.SNSConfig{{
			TopicARN: ptrTo("arn"), UseAWSHTTPClient: ptrTo(false)}}},
			ReasonUnsupportedVersion, "snsConfigs[0].useAWSHTTPClient: requires Alertmanager v0.33.0"},
		{"sigv4 externalId", amDefault, monitoringv1alpha1.Receiver{SNSConfigs: []monitoringv1alpha1.SNSConfig{{
			TopicARN: ptrTo("arn"), Sigv4: &monitoringv1.Sigv4{RoleArn: "arn:role", ExternalID: "x"}}}},
			ReasonUnsupportedVersion, "snsConfigs[0].sigv4.externalId: requires Alertmanager v0.34.0"},
		// Older Alertmanagers.
		{"msteamsv2", workload.Version{Minor: 27}, monitoringv1alpha1.Receiver{MSTeamsV2Configs: []monitoringv1alpha1.MSTeamsV2Config{{
			WebhookURL: selp("msteamsv2", "url")}}},
			ReasonUnsupportedVersion, "msteamsv2Configs[0]: requires Alertmanager v0.28.0"},
		{"rocketchat", workload.Version{Minor: 27}, monitoringv1alpha1.Receiver{RocketChatConfigs: []monitoringv1alpha1.RocketChatConfig{{}}},
			ReasonUnsupportedVersion, "rocketchatConfigs[0]: requires Alertmanager v0.28.0"},
		{"telegram messageThreadID", workload.Version{Minor: 27}, monitoringv1alpha1.Receiver{TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{
			ChatID: 1, BotToken: selp("telegram", "token"), MessageThreadID: ptrTo(int64(2))}}},
			ReasonUnsupportedVersion, "telegramConfigs[0].messageThreadID: requires Alertmanager v0.28.0"},
		{"discord content", workload.Version{Minor: 27}, monitoringv1alpha1.Receiver{DiscordConfigs: []monitoringv1alpha1.DiscordConfig{{
			APIURL: sel("discord", "url"), Content: ptrTo("x")}}},
			ReasonUnsupportedVersion, "discordConfigs[0].content: requires Alertmanager v0.28.0"},
		{"pagerduty timeout", workload.Version{Minor: 29}, monitoringv1alpha1.Receiver{PagerDutyConfigs: []monitoringv1alpha1.PagerDutyConfig{{
			RoutingKey: selp("pagerduty", "routing"), Timeout: dur("10s")}}},
			ReasonUnsupportedVersion, "pagerdutyConfigs[0].timeout: requires Alertmanager v0.30.0"},
		{"templated webhook URL", workload.Version{Minor: 30}, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com/{{ .Receiver }}")}}},
			ReasonUnsupportedVersion, "webhookConfigs[0].url (a templated URL): requires Alertmanager v0.31.0"},
		{"inline TLS CA", workload.Version{Minor: 25}, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), HTTPConfig: &monitoringv1alpha1.HTTPConfig{TLSConfig: &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: selp("tls", "ca")}}}}}},
			ReasonUnsupportedVersion, "webhookConfigs[0].httpConfig.tlsConfig.ca: requires Alertmanager v0.26.0"},
		{"noProxy", workload.Version{Minor: 25}, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), HTTPConfig: &monitoringv1alpha1.HTTPConfig{ProxyConfig: monitoringv1.ProxyConfig{ProxyURL: ptrTo("http://p:1"), NoProxy: ptrTo("x")}}}}},
			ReasonUnsupportedVersion, "webhookConfigs[0].httpConfig.noProxy: requires Alertmanager v0.26.0"},

		// Invalid values.
		{"slack action without name or url", amLatest, monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{
			Actions: []monitoringv1alpha1.SlackAction{{Type: "button", Text: "x"}}}}},
			ReasonInvalidReceiver, "slackConfigs[0].actions[0]: missing 'name' or 'url'"},
		{"slack updateMessage with a webhook URL", amLatest, monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{
			APIURL: selp("slack", "url"), UpdateMessage: ptrTo(true)}}},
			ReasonInvalidReceiver, "slackConfigs[0].updateMessage"},
		{"opsgenie responder type", amLatest, monitoringv1alpha1.Receiver{OpsGenieConfigs: []monitoringv1alpha1.OpsGenieConfig{{
			Responders: []monitoringv1alpha1.OpsGenieConfigResponder{{Name: ptrTo("x"), Type: "robot"}}}}},
			ReasonInvalidReceiver, "opsgenieConfigs[0].responders[0]"},
		{"two authentications", amLatest, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), HTTPConfig: &monitoringv1alpha1.HTTPConfig{
				BasicAuth: &monitoringv1.BasicAuth{Username: sel("http", "user")}, BearerTokenSecret: selp("http", "bearer")}}}},
			ReasonInvalidReceiver, "webhookConfigs[0].httpConfig: at most one of"},
		{"pushover userKey and userKeyFile", amLatest, monitoringv1alpha1.Receiver{PushoverConfigs: []monitoringv1alpha1.PushoverConfig{{
			UserKey: selp("pushover", "user"), UserKeyFile: ptrTo("/f"), Token: selp("pushover", "token")}}},
			ReasonInvalidReceiver, "pushoverConfigs[0]: userKey and userKeyFile are mutually exclusive"},
		{"pushover without token", amLatest, monitoringv1alpha1.Receiver{PushoverConfigs: []monitoringv1alpha1.PushoverConfig{{
			UserKey: selp("pushover", "user")}}},
			ReasonInvalidReceiver, "pushoverConfigs[0]: one of token and tokenFile must be set"},
		{"telegram without chatID", amLatest, monitoringv1alpha1.Receiver{TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{
			BotToken: selp("telegram", "token")}}},
			ReasonInvalidReceiver, "telegramConfigs[0].chatID: must be set"},
		{"webhook without URL", amLatest, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{}}},
			ReasonInvalidReceiver, "webhookConfigs[0]: one of url and urlSecret must be set"},
		{"bad duration", amLatest, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), Timeout: dur("5 minutes")}}},
			ReasonInvalidReceiver, "webhookConfigs[0].timeout"},
		{"duplicate detail", amLatest, monitoringv1alpha1.Receiver{PagerDutyConfigs: []monitoringv1alpha1.PagerDutyConfig{{
			RoutingKey: selp("pagerduty", "routing"), Details: []monitoringv1alpha1.KeyValue{{Key: "a", Value: "1"}, {Key: "a", Value: "2"}}}}},
			ReasonInvalidReceiver, "pagerdutyConfigs[0].details[1].key"},
		{"duplicate email header", amLatest, monitoringv1alpha1.Receiver{EmailConfigs: []monitoringv1alpha1.EmailConfig{{
			To: ptrTo("a@example.com"), Headers: []monitoringv1alpha1.KeyValue{{Key: "subject", Value: "1"}, {Key: "Subject", Value: "2"}}}}},
			ReasonInvalidReceiver, "emailConfigs[0].headers[1].key"},
		{"email threading and References", amLatest, monitoringv1alpha1.Receiver{EmailConfigs: []monitoringv1alpha1.EmailConfig{{
			To: ptrTo("a@example.com"), Headers: []monitoringv1alpha1.KeyValue{{Key: "references", Value: "x"}},
			Threading: &monitoringv1alpha1.EmailThreadingConfig{ThreadByDate: "None"}}}},
			ReasonInvalidReceiver, "emailConfigs[0].headers[0].key: threading sets the References header"},
		{"email without to", amLatest, monitoringv1alpha1.Receiver{EmailConfigs: []monitoringv1alpha1.EmailConfig{{}}},
			ReasonInvalidReceiver, "emailConfigs[0].to: must be set"},
		{"victorops reserved field", amLatest, monitoringv1alpha1.Receiver{VictorOpsConfigs: []monitoringv1alpha1.VictorOpsConfig{{
			RoutingKey: "x", CustomFields: []monitoringv1alpha1.KeyValue{{Key: "entity_state", Value: "x"}}}}},
			ReasonInvalidReceiver, "victoropsConfigs[0].customFields[0].key"},
		{"webex without authorization", amLatest, monitoringv1alpha1.Receiver{WebexConfigs: []monitoringv1alpha1.WebexConfig{{RoomID: "r"}}},
			ReasonInvalidReceiver, "webexConfigs[0].httpConfig.authorization: must be set"},
		{"sns without target", amLatest, monitoringv1alpha1.Receiver{SNSConfigs: []monitoringv1alpha1.SNSConfig{{}}},
			ReasonInvalidReceiver, "snsConfigs[0]: one of topicARN, phoneNumber and targetARN must be set"},
		{"tls cert without key", amLatest, monitoringv1alpha1.Receiver{EmailConfigs: []monitoringv1alpha1.EmailConfig{{
			To: ptrTo("a@example.com"), TLSConfig: &monitoringv1.SafeTLSConfig{Cert: monitoringv1.SecretOrConfigMap{ConfigMap: cmSel("tls", "cert")}}}}},
			ReasonInvalidReceiver, "emailConfigs[0].tlsConfig: client cert specified without client key"},
		{"the first problem wins", amLatest, monitoringv1alpha1.Receiver{
			EmailConfigs:   []monitoringv1alpha1.EmailConfig{{}},
			WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{}}},
			ReasonInvalidReceiver, "emailConfigs[0].to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convertReceiver(testRefs(tc.version), "spec.receivers[0]", &tc.rc)
			wantRejection(t, err, tc.reason, tc.field)
		})
	}
}

func TestConvertHTTPConfig(t *testing.T) {
	out, err := convertHTTPConfig(testRefs(amLatest), "spec.receivers[0].webhookConfigs[0].httpConfig", httpBasicAuth())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "proxy_url (proxyURL wins)", out.ProxyURL, "http://proxy.example.com:3128")
	equal(t, "username", out.BasicAuth.Username, "http-user")

	if out, err := convertHTTPConfig(testRefs(amLatest), "f", nil); out != nil || err != nil {
		t.Errorf("nil httpConfig: got %v, %v", out, err)
	}

	both := httpBearer()
	both.ProxyURLOriginal = ptrTo("http://original.example.com:3128")
	out, err = convertHTTPConfig(testRefs(amLatest), "f", both)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "proxy_url", out.ProxyURL, "http://original.example.com:3128")

	_, err = convertHTTPConfig(testRefs(amLatest), "f.httpConfig", &monitoringv1alpha1.HTTPConfig{
		Authorization: &monitoringv1.SafeAuthorization{Type: "Basic", Credentials: selp("http", "credentials")}})
	wantRejection(t, err, ReasonInvalidReceiver, "f.httpConfig: 'authorization' type cannot be set to \"basic\"")
}

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
