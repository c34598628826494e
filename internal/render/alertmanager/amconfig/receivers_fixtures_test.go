package amconfig

import (
	"flag"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	amcfg "github.com/prometheus/alertmanager/config"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// The fixtures of the receiver tests: Secrets, ConfigMaps and one case per receiver
// type, each setting every field of its type.

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
