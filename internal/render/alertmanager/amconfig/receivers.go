package amconfig

import (
	"fmt"
	"maps"
	"net"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// This file converts the receivers of an AlertmanagerConfig and the global section of an
// Alertmanager (spec.alertmanagerConfiguration.global) into Alertmanager's YAML.
//
// Alertmanager's own config structs print secrets as "<secret>", so the output has its
// own structs, keys as in Alertmanager's config package, fields in the order of
// Alertmanager's configuration docs. Secret values are written inline: the generated
// config is itself stored in a Secret.
//
// Every field of the API types is either converted or refused by name. Fields that
// Alertmanager added after some release are refused (ReasonUnsupportedVersion) when the
// Alertmanager runs an older one; the minimum versions come from Alertmanager's changelog
// and from the prometheus/common version each release uses.

// receiver is one entry of `receivers:`. Name is set by the caller.
type receiver struct {
	Name              string              `yaml:"name"`
	DiscordConfigs    []*discordConfig    `yaml:"discord_configs,omitempty"`
	EmailConfigs      []*emailConfig      `yaml:"email_configs,omitempty"`
	MSTeamsConfigs    []*msteamsConfig    `yaml:"msteams_configs,omitempty"`
	MSTeamsV2Configs  []*msteamsV2Config  `yaml:"msteamsv2_configs,omitempty"`
	OpsGenieConfigs   []*opsGenieConfig   `yaml:"opsgenie_configs,omitempty"`
	PagerDutyConfigs  []*pagerDutyConfig  `yaml:"pagerduty_configs,omitempty"`
	PushoverConfigs   []*pushoverConfig   `yaml:"pushover_configs,omitempty"`
	RocketChatConfigs []*rocketChatConfig `yaml:"rocketchat_configs,omitempty"`
	SlackConfigs      []*slackConfig      `yaml:"slack_configs,omitempty"`
	SNSConfigs        []*snsConfig        `yaml:"sns_configs,omitempty"`
	TelegramConfigs   []*telegramConfig   `yaml:"telegram_configs,omitempty"`
	VictorOpsConfigs  []*victorOpsConfig  `yaml:"victorops_configs,omitempty"`
	WebexConfigs      []*webexConfig      `yaml:"webex_configs,omitempty"`
	WebhookConfigs    []*webhookConfig    `yaml:"webhook_configs,omitempty"`
	WeChatConfigs     []*weChatConfig     `yaml:"wechat_configs,omitempty"`
}

type discordConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	WebhookURL   string      `yaml:"webhook_url,omitempty"`
	Title        *string     `yaml:"title,omitempty"`
	Message      *string     `yaml:"message,omitempty"`
	Content      string      `yaml:"content,omitempty"`
	Username     string      `yaml:"username,omitempty"`
	AvatarURL    string      `yaml:"avatar_url,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
}

type emailConfig struct {
	SendResolved     *bool             `yaml:"send_resolved,omitempty"`
	To               string            `yaml:"to,omitempty"`
	From             string            `yaml:"from,omitempty"`
	Smarthost        string            `yaml:"smarthost,omitempty"`
	Hello            string            `yaml:"hello,omitempty"`
	AuthUsername     string            `yaml:"auth_username,omitempty"`
	AuthPassword     string            `yaml:"auth_password,omitempty"`
	AuthSecret       string            `yaml:"auth_secret,omitempty"`
	AuthIdentity     string            `yaml:"auth_identity,omitempty"`
	RequireTLS       *bool             `yaml:"require_tls,omitempty"`
	ForceImplicitTLS *bool             `yaml:"force_implicit_tls,omitempty"`
	TLSConfig        *tlsConfig        `yaml:"tls_config,omitempty"`
	HTML             *string           `yaml:"html,omitempty"`
	Text             string            `yaml:"text,omitempty"`
	Headers          map[string]string `yaml:"headers,omitempty"`
	Threading        *emailThreading   `yaml:"threading,omitempty"`
}

type emailThreading struct {
	Enabled      bool   `yaml:"enabled"`
	ThreadByDate string `yaml:"thread_by_date,omitempty"`
}

type msteamsConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	WebhookURL   string      `yaml:"webhook_url,omitempty"`
	Title        *string     `yaml:"title,omitempty"`
	Summary      *string     `yaml:"summary,omitempty"`
	Text         *string     `yaml:"text,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
}

type msteamsV2Config struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	WebhookURL   string      `yaml:"webhook_url,omitempty"`
	Title        string      `yaml:"title,omitempty"`
	Text         string      `yaml:"text,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
}

type opsGenieConfig struct {
	SendResolved *bool               `yaml:"send_resolved,omitempty"`
	APIKey       string              `yaml:"api_key,omitempty"`
	APIURL       string              `yaml:"api_url,omitempty"`
	Message      string              `yaml:"message,omitempty"`
	Description  string              `yaml:"description,omitempty"`
	Source       string              `yaml:"source,omitempty"`
	Details      map[string]string   `yaml:"details,omitempty"`
	Responders   []opsGenieResponder `yaml:"responders,omitempty"`
	Tags         string              `yaml:"tags,omitempty"`
	Note         string              `yaml:"note,omitempty"`
	Priority     string              `yaml:"priority,omitempty"`
	UpdateAlerts *bool               `yaml:"update_alerts,omitempty"`
	Entity       string              `yaml:"entity,omitempty"`
	Actions      string              `yaml:"actions,omitempty"`
	HTTPConfig   *httpConfig         `yaml:"http_config,omitempty"`
}

type opsGenieResponder struct {
	ID       string `yaml:"id,omitempty"`
	Name     string `yaml:"name,omitempty"`
	Username string `yaml:"username,omitempty"`
	Type     string `yaml:"type,omitempty"`
}

type pagerDutyConfig struct {
	SendResolved *bool             `yaml:"send_resolved,omitempty"`
	RoutingKey   string            `yaml:"routing_key,omitempty"`
	ServiceKey   string            `yaml:"service_key,omitempty"`
	URL          string            `yaml:"url,omitempty"`
	Client       string            `yaml:"client,omitempty"`
	ClientURL    *string           `yaml:"client_url,omitempty"`
	Description  string            `yaml:"description,omitempty"`
	Severity     string            `yaml:"severity,omitempty"`
	Source       string            `yaml:"source,omitempty"`
	Details      map[string]string `yaml:"details,omitempty"`
	Images       []pagerDutyImage  `yaml:"images,omitempty"`
	Links        []pagerDutyLink   `yaml:"links,omitempty"`
	Component    string            `yaml:"component,omitempty"`
	Group        string            `yaml:"group,omitempty"`
	Class        string            `yaml:"class,omitempty"`
	HTTPConfig   *httpConfig       `yaml:"http_config,omitempty"`
	Timeout      string            `yaml:"timeout,omitempty"`
}

type pagerDutyImage struct {
	Href string `yaml:"href,omitempty"`
	Src  string `yaml:"src,omitempty"`
	Alt  string `yaml:"alt,omitempty"`
}

type pagerDutyLink struct {
	Href string `yaml:"href,omitempty"`
	Text string `yaml:"text,omitempty"`
}

type pushoverConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	UserKey      string      `yaml:"user_key,omitempty"`
	UserKeyFile  string      `yaml:"user_key_file,omitempty"`
	Token        string      `yaml:"token,omitempty"`
	TokenFile    string      `yaml:"token_file,omitempty"`
	Title        string      `yaml:"title,omitempty"`
	Message      string      `yaml:"message,omitempty"`
	URL          string      `yaml:"url,omitempty"`
	URLTitle     string      `yaml:"url_title,omitempty"`
	Device       string      `yaml:"device,omitempty"`
	Sound        string      `yaml:"sound,omitempty"`
	Priority     string      `yaml:"priority,omitempty"`
	Retry        string      `yaml:"retry,omitempty"`
	Expire       string      `yaml:"expire,omitempty"`
	TTL          string      `yaml:"ttl,omitempty"`
	HTML         *bool       `yaml:"html,omitempty"`
	Monospace    *bool       `yaml:"monospace,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
}

type rocketChatConfig struct {
	SendResolved *bool              `yaml:"send_resolved,omitempty"`
	APIURL       string             `yaml:"api_url,omitempty"`
	Channel      string             `yaml:"channel,omitempty"`
	Token        string             `yaml:"token,omitempty"`
	TokenID      string             `yaml:"token_id,omitempty"`
	Color        string             `yaml:"color,omitempty"`
	Emoji        string             `yaml:"emoji,omitempty"`
	IconURL      *string            `yaml:"icon_url,omitempty"`
	Text         string             `yaml:"text,omitempty"`
	Title        string             `yaml:"title,omitempty"`
	TitleLink    string             `yaml:"title_link,omitempty"`
	Fields       []rocketChatField  `yaml:"fields,omitempty"`
	ImageURL     string             `yaml:"image_url,omitempty"`
	ThumbURL     string             `yaml:"thumb_url,omitempty"`
	LinkNames    *bool              `yaml:"link_names,omitempty"`
	ShortFields  *bool              `yaml:"short_fields,omitempty"`
	Actions      []rocketChatAction `yaml:"actions,omitempty"`
	HTTPConfig   *httpConfig        `yaml:"http_config,omitempty"`
}

// Alertmanager's Rocket.Chat field and action structs have no yaml tags: their keys are
// the lower-cased Go field names.
type rocketChatField struct {
	Title string `yaml:"title,omitempty"`
	Value string `yaml:"value,omitempty"`
	Short *bool  `yaml:"short,omitempty"`
}

type rocketChatAction struct {
	Text string `yaml:"text,omitempty"`
	URL  string `yaml:"url,omitempty"`
	Msg  string `yaml:"msg,omitempty"`
}

type slackConfig struct {
	SendResolved  *bool         `yaml:"send_resolved,omitempty"`
	APIURL        string        `yaml:"api_url,omitempty"`
	Channel       string        `yaml:"channel,omitempty"`
	IconEmoji     string        `yaml:"icon_emoji,omitempty"`
	IconURL       string        `yaml:"icon_url,omitempty"`
	LinkNames     *bool         `yaml:"link_names,omitempty"`
	MessageText   string        `yaml:"message_text,omitempty"`
	Username      string        `yaml:"username,omitempty"`
	Actions       []slackAction `yaml:"actions,omitempty"`
	CallbackID    string        `yaml:"callback_id,omitempty"`
	Color         string        `yaml:"color,omitempty"`
	Fallback      string        `yaml:"fallback,omitempty"`
	Fields        []slackField  `yaml:"fields,omitempty"`
	Footer        string        `yaml:"footer,omitempty"`
	MrkdwnIn      []string      `yaml:"mrkdwn_in,omitempty"`
	Pretext       string        `yaml:"pretext,omitempty"`
	ShortFields   *bool         `yaml:"short_fields,omitempty"`
	Text          string        `yaml:"text,omitempty"`
	Title         string        `yaml:"title,omitempty"`
	TitleLink     string        `yaml:"title_link,omitempty"`
	ImageURL      string        `yaml:"image_url,omitempty"`
	ThumbURL      string        `yaml:"thumb_url,omitempty"`
	HTTPConfig    *httpConfig   `yaml:"http_config,omitempty"`
	Timeout       string        `yaml:"timeout,omitempty"`
	UpdateMessage *bool         `yaml:"update_message,omitempty"`
}

type slackAction struct {
	Text    string             `yaml:"text,omitempty"`
	Type    string             `yaml:"type,omitempty"`
	URL     string             `yaml:"url,omitempty"`
	Name    string             `yaml:"name,omitempty"`
	Value   string             `yaml:"value,omitempty"`
	Confirm *slackConfirmation `yaml:"confirm,omitempty"`
	Style   string             `yaml:"style,omitempty"`
}

type slackConfirmation struct {
	Text        string `yaml:"text,omitempty"`
	DismissText string `yaml:"dismiss_text,omitempty"`
	OkText      string `yaml:"ok_text,omitempty"`
	Title       string `yaml:"title,omitempty"`
}

type slackField struct {
	Title string `yaml:"title,omitempty"`
	Value string `yaml:"value,omitempty"`
	Short *bool  `yaml:"short,omitempty"`
}

type snsConfig struct {
	SendResolved     *bool             `yaml:"send_resolved,omitempty"`
	APIURL           string            `yaml:"api_url,omitempty"`
	Sigv4            *sigv4Config      `yaml:"sigv4,omitempty"`
	TopicARN         string            `yaml:"topic_arn,omitempty"`
	Subject          string            `yaml:"subject,omitempty"`
	PhoneNumber      string            `yaml:"phone_number,omitempty"`
	TargetARN        string            `yaml:"target_arn,omitempty"`
	Message          string            `yaml:"message,omitempty"`
	Attributes       map[string]string `yaml:"attributes,omitempty"`
	HTTPConfig       *httpConfig       `yaml:"http_config,omitempty"`
	UseAWSHTTPClient *bool             `yaml:"use_aws_http_client,omitempty"`
}

type sigv4Config struct {
	Region             string `yaml:"region,omitempty"`
	AccessKey          string `yaml:"access_key,omitempty"`
	SecretKey          string `yaml:"secret_key,omitempty"`
	Profile            string `yaml:"profile,omitempty"`
	RoleARN            string `yaml:"role_arn,omitempty"`
	ExternalID         string `yaml:"external_id,omitempty"`
	UseFIPSSTSEndpoint *bool  `yaml:"use_fips_sts_endpoint,omitempty"`
}

type telegramConfig struct {
	SendResolved         *bool       `yaml:"send_resolved,omitempty"`
	APIURL               string      `yaml:"api_url,omitempty"`
	BotToken             string      `yaml:"bot_token,omitempty"`
	BotTokenFile         string      `yaml:"bot_token_file,omitempty"`
	ChatID               int64       `yaml:"chat_id,omitempty"`
	MessageThreadID      *int64      `yaml:"message_thread_id,omitempty"`
	Message              string      `yaml:"message,omitempty"`
	DisableNotifications *bool       `yaml:"disable_notifications,omitempty"`
	ParseMode            string      `yaml:"parse_mode,omitempty"`
	HTTPConfig           *httpConfig `yaml:"http_config,omitempty"`
}

type victorOpsConfig struct {
	SendResolved      *bool             `yaml:"send_resolved,omitempty"`
	APIKey            string            `yaml:"api_key,omitempty"`
	APIURL            string            `yaml:"api_url,omitempty"`
	RoutingKey        string            `yaml:"routing_key,omitempty"`
	MessageType       string            `yaml:"message_type,omitempty"`
	EntityDisplayName string            `yaml:"entity_display_name,omitempty"`
	StateMessage      string            `yaml:"state_message,omitempty"`
	MonitoringTool    string            `yaml:"monitoring_tool,omitempty"`
	CustomFields      map[string]string `yaml:"custom_fields,omitempty"`
	HTTPConfig        *httpConfig       `yaml:"http_config,omitempty"`
}

type webexConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	APIURL       string      `yaml:"api_url,omitempty"`
	RoomID       string      `yaml:"room_id,omitempty"`
	Message      *string     `yaml:"message,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
}

type webhookConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	URL          string      `yaml:"url,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
	MaxAlerts    int32       `yaml:"max_alerts,omitempty"`
	Timeout      string      `yaml:"timeout,omitempty"`
	Payload      string      `yaml:"payload,omitempty"`
}

type weChatConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	APISecret    string      `yaml:"api_secret,omitempty"`
	APIURL       string      `yaml:"api_url,omitempty"`
	CorpID       string      `yaml:"corp_id,omitempty"`
	Message      string      `yaml:"message,omitempty"`
	MessageType  string      `yaml:"message_type,omitempty"`
	AgentID      string      `yaml:"agent_id,omitempty"`
	ToUser       string      `yaml:"to_user,omitempty"`
	ToParty      string      `yaml:"to_party,omitempty"`
	ToTag        string      `yaml:"to_tag,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
}

// httpConfig is prometheus/common's HTTPClientConfig.
type httpConfig struct {
	BasicAuth       *basicAuth     `yaml:"basic_auth,omitempty"`
	Authorization   *authorization `yaml:"authorization,omitempty"`
	OAuth2          *oauth2        `yaml:"oauth2,omitempty"`
	BearerToken     string         `yaml:"bearer_token,omitempty"`
	EnableHTTP2     *bool          `yaml:"enable_http2,omitempty"`
	proxyConfig     `yaml:",inline"`
	FollowRedirects *bool      `yaml:"follow_redirects,omitempty"`
	TLSConfig       *tlsConfig `yaml:"tls_config,omitempty"`
}

type basicAuth struct {
	Username string `yaml:"username,omitempty"`
	Password string `yaml:"password,omitempty"`
}

type authorization struct {
	Type        string `yaml:"type,omitempty"`
	Credentials string `yaml:"credentials,omitempty"`
}

type oauth2 struct {
	ClientID       string            `yaml:"client_id,omitempty"`
	ClientSecret   string            `yaml:"client_secret,omitempty"`
	Scopes         []string          `yaml:"scopes,omitempty"`
	TokenURL       string            `yaml:"token_url,omitempty"`
	EndpointParams map[string]string `yaml:"endpoint_params,omitempty"`
	TLSConfig      *tlsConfig        `yaml:"tls_config,omitempty"`
	proxyConfig    `yaml:",inline"`
}

type proxyConfig struct {
	ProxyURL             string              `yaml:"proxy_url,omitempty"`
	NoProxy              string              `yaml:"no_proxy,omitempty"`
	ProxyFromEnvironment *bool               `yaml:"proxy_from_environment,omitempty"`
	ProxyConnectHeader   map[string][]string `yaml:"proxy_connect_header,omitempty"`
}

type tlsConfig struct {
	CA                 string `yaml:"ca,omitempty"`
	Cert               string `yaml:"cert,omitempty"`
	Key                string `yaml:"key,omitempty"`
	ServerName         string `yaml:"server_name,omitempty"`
	InsecureSkipVerify *bool  `yaml:"insecure_skip_verify,omitempty"`
	MinVersion         string `yaml:"min_version,omitempty"`
	MaxVersion         string `yaml:"max_version,omitempty"`
}

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

// conv runs one conversion. It keeps the first problem and carries on, so that every
// reference is visited whatever the values (collect mode relies on it); the output is
// only used when err is nil.
type conv struct {
	r   *refs
	err error
}

func (c *conv) note(err error) {
	if err != nil && c.err == nil {
		c.err = err
	}
}

func (c *conv) fail(reason, format string, args ...any) {
	c.note(reject(reason, format, args...))
}

func (c *conv) invalid(format string, args ...any) {
	c.fail(ReasonInvalidReceiver, format, args...)
}

// since refuses field, when set, on Alertmanagers older than major.minor.
func (c *conv) since(major, minor int, set bool, field string) {
	if set && !c.r.version.AtLeast(major, minor) {
		c.fail(ReasonUnsupportedVersion, "%s: requires Alertmanager v%d.%d.0 or later, the Alertmanager runs %s",
			field, major, minor, c.r.version.Tag())
	}
}

func (c *conv) secret(field string, sel *corev1.SecretKeySelector) string {
	v, err := c.r.secret(field, sel)
	c.note(err)
	return v
}

// secretIfSet reads a selector the API does not make a pointer; the zero selector means
// unset.
func (c *conv) secretIfSet(field string, sel corev1.SecretKeySelector) string {
	if sel == (corev1.SecretKeySelector{}) {
		return ""
	}
	return c.secret(field, &sel)
}

func (c *conv) secretOrConfigMap(field string, v *monitoringv1.SecretOrConfigMap) string {
	s, err := c.r.secretOrConfigMap(field, v)
	c.note(err)
	return s
}

// secretURL reads a URL from a Secret; surrounding white space (a trailing newline) is
// dropped. The message names the Secret, never its value.
func (c *conv) secretURL(field string, sel *corev1.SecretKeySelector) string {
	v := strings.TrimSpace(c.secret(field, sel))
	if v != "" && checkURL(v) != nil {
		c.invalid("%s: the value of key %q of Secret %s/%s is not an http(s) URL", field, sel.Key, c.r.ns, sel.Name)
	}
	return v
}

// url checks a URL field; "" is unset.
func (c *conv) url(field, v string) string {
	if v != "" {
		if err := checkURL(v); err != nil {
			c.invalid("%s: %q is not a valid URL: %v", field, v, err)
		}
	}
	return v
}

// checkURL is Alertmanager's check of URL fields: http or https, with a host.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("the scheme must be http or https")
	}
	if u.Host == "" {
		return fmt.Errorf("the host is missing")
	}
	return nil
}

// goDuration converts a Prometheus duration for a field Alertmanager parses with Go's
// time.ParseDuration, which knows neither days, weeks nor years.
func (c *conv) goDuration(field, d string) string {
	if d == "" {
		return ""
	}
	ms, err := workload.ParseDuration(d)
	if err != nil {
		c.invalid("%s: %v", field, err)
		return ""
	}
	if _, err := time.ParseDuration(d); err == nil {
		return d
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// keyValues turns a list of pairs into a map, refusing a key given twice; canon, when
// set, says which keys are the same.
func (c *conv) keyValues(field string, kvs []monitoringv1alpha1.KeyValue, canon func(string) string) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	out := make(map[string]string, len(kvs))
	seen := map[string]int{}
	for i, kv := range kvs {
		k := kv.Key
		if k == "" {
			c.invalid("%s[%d].key: must be set", field, i)
			continue
		}
		id := k
		if canon != nil {
			id = canon(k)
		}
		if j, dup := seen[id]; dup {
			c.invalid("%s[%d].key: %q is already set by %s[%d]", field, i, k, field, j)
			continue
		}
		seen[id] = i
		out[k] = kv.Value
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func urlString(u *monitoringv1alpha1.URL) string {
	if u == nil {
		return ""
	}
	return string(*u)
}

func v1URLString(u *monitoringv1.URL) string {
	if u == nil {
		return ""
	}
	return string(*u)
}

// httpParts are the fields of the API's several HTTP config types.
type httpParts struct {
	authorization   *monitoringv1.SafeAuthorization
	basicAuth       *monitoringv1.BasicAuth
	oauth2          *monitoringv1.OAuth2
	bearerToken     *corev1.SecretKeySelector
	tls             *monitoringv1.SafeTLSConfig
	proxy           monitoringv1.ProxyConfig
	followRedirects *bool
	enableHTTP2     *bool
}

func (c *conv) httpParts(field string, p httpParts) *httpConfig {
	out := &httpConfig{
		BearerToken:     c.secret(field+".bearerTokenSecret", p.bearerToken),
		EnableHTTP2:     p.enableHTTP2,
		FollowRedirects: p.followRedirects,
		TLSConfig:       c.tlsConfig(field+".tlsConfig", p.tls),
		proxyConfig:     c.proxyConfig(field, p.proxy),
	}
	if a := p.authorization; a != nil {
		out.Authorization = &authorization{
			Type:        strings.TrimSpace(a.Type),
			Credentials: c.secret(field+".authorization.credentials", a.Credentials),
		}
	}
	if b := p.basicAuth; b != nil {
		out.BasicAuth = &basicAuth{
			Username: c.secretIfSet(field+".basicAuth.username", b.Username),
			Password: c.secretIfSet(field+".basicAuth.password", b.Password),
		}
	}
	// Alertmanager v0.25 added enable_http2.
	c.since(0, 25, p.enableHTTP2 != nil, field+".enableHttp2")
	if o := p.oauth2; o != nil {
		f := field + ".oauth2"
		out.OAuth2 = &oauth2{
			ClientID:       c.secretOrConfigMap(f+".clientId", &o.ClientID),
			ClientSecret:   c.secretIfSet(f+".clientSecret", o.ClientSecret),
			Scopes:         o.Scopes,
			TokenURL:       c.url(f+".tokenUrl", string(o.TokenURL)),
			EndpointParams: o.EndpointParams,
			TLSConfig:      c.tlsConfig(f+".tlsConfig", o.TLSConfig),
			proxyConfig:    c.proxyConfig(f, o.ProxyConfig),
		}
	}
	return out
}

// proxyConfig converts the proxy fields; field is the path of the struct holding them.
func (c *conv) proxyConfig(field string, p monitoringv1.ProxyConfig) proxyConfig {
	out := proxyConfig{
		ProxyURL:             deref(p.ProxyURL),
		NoProxy:              deref(p.NoProxy),
		ProxyFromEnvironment: p.ProxyFromEnvironment,
	}
	if out.ProxyURL != "" {
		if _, err := url.Parse(out.ProxyURL); err != nil {
			c.invalid("%s.proxyUrl: %q is not a valid URL: %v", field, out.ProxyURL, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.ProxyConnectHeader)) {
		sels := p.ProxyConnectHeader[k]
		if out.ProxyConnectHeader == nil {
			out.ProxyConnectHeader = map[string][]string{}
		}
		vals := make([]string, 0, len(sels))
		for i := range sels {
			vals = append(vals, c.secret(fmt.Sprintf("%s.proxyConnectHeader[%s][%d]", field, k, i), &sels[i]))
		}
		out.ProxyConnectHeader[k] = vals
	}
	// prometheus/common v0.44 (Alertmanager v0.26) added these.
	c.since(0, 26, p.NoProxy != nil, field+".noProxy")
	c.since(0, 26, p.ProxyFromEnvironment != nil, field+".proxyFromEnvironment")
	c.since(0, 26, len(p.ProxyConnectHeader) > 0, field+".proxyConnectHeader")
	return out
}

var tlsVersions = []monitoringv1.TLSVersion{
	monitoringv1.TLSVersion10, monitoringv1.TLSVersion11, monitoringv1.TLSVersion12, monitoringv1.TLSVersion13,
}

func (c *conv) tlsConfig(field string, t *monitoringv1.SafeTLSConfig) *tlsConfig {
	if t == nil {
		return nil
	}
	out := &tlsConfig{
		CA:                 c.secretOrConfigMap(field+".ca", &t.CA),
		Cert:               c.secretOrConfigMap(field+".cert", &t.Cert),
		Key:                c.secret(field+".keySecret", t.KeySecret),
		ServerName:         deref(t.ServerName),
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	for _, v := range []struct {
		name string
		p    *monitoringv1.TLSVersion
		dst  *string
	}{{"minVersion", t.MinVersion, &out.MinVersion}, {"maxVersion", t.MaxVersion, &out.MaxVersion}} {
		if v.p == nil {
			continue
		}
		if !slices.Contains(tlsVersions, *v.p) {
			c.invalid("%s.%s: %q is not one of TLS10, TLS11, TLS12, TLS13", field, v.name, *v.p)
		}
		*v.dst = string(*v.p)
	}
	if err := t.Validate(); err != nil {
		c.invalid("%s: %v", field, err)
	}
	// Alertmanager v0.25 added min_version and max_version.
	c.since(0, 25, t.MinVersion != nil, field+".minVersion")
	c.since(0, 25, t.MaxVersion != nil, field+".maxVersion")
	// Certificates and keys are written inline, which prometheus/common v0.44
	// (Alertmanager v0.26) added.
	c.since(0, 26, t.CA != (monitoringv1.SecretOrConfigMap{}), field+".ca")
	c.since(0, 26, t.Cert != (monitoringv1.SecretOrConfigMap{}), field+".cert")
	c.since(0, 26, t.KeySecret != nil, field+".keySecret")
	return out
}

// convertHTTPConfig converts the httpConfig of a receiver; field is its path.
func convertHTTPConfig(r *refs, field string, hc *monitoringv1alpha1.HTTPConfig) (*httpConfig, error) {
	c := &conv{r: r}
	out := c.httpConfig(field, hc)
	if c.err != nil {
		return nil, c.err
	}
	return out, nil
}

func (c *conv) httpConfig(field string, hc *monitoringv1alpha1.HTTPConfig) *httpConfig {
	if hc == nil {
		return nil
	}
	proxy := hc.ProxyConfig
	if u := deref(hc.ProxyURLOriginal); u != "" {
		// proxyURL takes precedence over proxyUrl.
		proxy.ProxyURL = &u
	}
	out := c.httpParts(field, httpParts{
		authorization:   hc.Authorization,
		basicAuth:       hc.BasicAuth,
		oauth2:          hc.OAuth2,
		bearerToken:     hc.BearerTokenSecret,
		tls:             hc.TLSConfig,
		proxy:           proxy,
		followRedirects: hc.FollowRedirects,
		enableHTTP2:     hc.EnableHTTP2,
	})
	effective := *hc
	effective.ProxyConfig = proxy
	if err := effective.Validate(); err != nil {
		c.invalid("%s: %v", field, err)
	}
	return out
}

// convertReceiver converts rc; field is its path, e.g. "spec.receivers[2]". Name is left
// for the caller to set.
func convertReceiver(r *refs, field string, rc *monitoringv1alpha1.Receiver) (*receiver, error) {
	c := &conv{r: r}
	out := &receiver{}
	for i := range rc.DiscordConfigs {
		out.DiscordConfigs = append(out.DiscordConfigs, c.discord(fmt.Sprintf("%s.discordConfigs[%d]", field, i), &rc.DiscordConfigs[i]))
	}
	for i := range rc.EmailConfigs {
		out.EmailConfigs = append(out.EmailConfigs, c.email(fmt.Sprintf("%s.emailConfigs[%d]", field, i), &rc.EmailConfigs[i]))
	}
	for i := range rc.MSTeamsConfigs {
		out.MSTeamsConfigs = append(out.MSTeamsConfigs, c.msteams(fmt.Sprintf("%s.msteamsConfigs[%d]", field, i), &rc.MSTeamsConfigs[i]))
	}
	for i := range rc.MSTeamsV2Configs {
		out.MSTeamsV2Configs = append(out.MSTeamsV2Configs, c.msteamsV2(fmt.Sprintf("%s.msteamsv2Configs[%d]", field, i), &rc.MSTeamsV2Configs[i]))
	}
	for i := range rc.OpsGenieConfigs {
		out.OpsGenieConfigs = append(out.OpsGenieConfigs, c.opsGenie(fmt.Sprintf("%s.opsgenieConfigs[%d]", field, i), &rc.OpsGenieConfigs[i]))
	}
	for i := range rc.PagerDutyConfigs {
		out.PagerDutyConfigs = append(out.PagerDutyConfigs, c.pagerDuty(fmt.Sprintf("%s.pagerdutyConfigs[%d]", field, i), &rc.PagerDutyConfigs[i]))
	}
	for i := range rc.PushoverConfigs {
		out.PushoverConfigs = append(out.PushoverConfigs, c.pushover(fmt.Sprintf("%s.pushoverConfigs[%d]", field, i), &rc.PushoverConfigs[i]))
	}
	for i := range rc.RocketChatConfigs {
		out.RocketChatConfigs = append(out.RocketChatConfigs, c.rocketChat(fmt.Sprintf("%s.rocketchatConfigs[%d]", field, i), &rc.RocketChatConfigs[i]))
	}
	for i := range rc.SlackConfigs {
		out.SlackConfigs = append(out.SlackConfigs, c.slack(fmt.Sprintf("%s.slackConfigs[%d]", field, i), &rc.SlackConfigs[i]))
	}
	for i := range rc.SNSConfigs {
		out.SNSConfigs = append(out.SNSConfigs, c.sns(fmt.Sprintf("%s.snsConfigs[%d]", field, i), &rc.SNSConfigs[i]))
	}
	for i := range rc.TelegramConfigs {
		out.TelegramConfigs = append(out.TelegramConfigs, c.telegram(fmt.Sprintf("%s.telegramConfigs[%d]", field, i), &rc.TelegramConfigs[i]))
	}
	for i := range rc.VictorOpsConfigs {
		out.VictorOpsConfigs = append(out.VictorOpsConfigs, c.victorOps(fmt.Sprintf("%s.victoropsConfigs[%d]", field, i), &rc.VictorOpsConfigs[i]))
	}
	for i := range rc.WebexConfigs {
		out.WebexConfigs = append(out.WebexConfigs, c.webex(fmt.Sprintf("%s.webexConfigs[%d]", field, i), &rc.WebexConfigs[i]))
	}
	for i := range rc.WebhookConfigs {
		out.WebhookConfigs = append(out.WebhookConfigs, c.webhook(fmt.Sprintf("%s.webhookConfigs[%d]", field, i), &rc.WebhookConfigs[i]))
	}
	for i := range rc.WeChatConfigs {
		out.WeChatConfigs = append(out.WeChatConfigs, c.weChat(fmt.Sprintf("%s.wechatConfigs[%d]", field, i), &rc.WeChatConfigs[i]))
	}
	if c.err != nil {
		return nil, c.err
	}
	return out, nil
}

func (c *conv) discord(f string, d *monitoringv1alpha1.DiscordConfig) *discordConfig {
	c.since(0, 25, true, f)
	out := &discordConfig{
		SendResolved: d.SendResolved,
		WebhookURL:   c.secretURL(f+".apiURL", &d.APIURL),
		Title:        d.Title,
		Message:      d.Message,
		Content:      deref(d.Content),
		Username:     deref(d.Username),
		AvatarURL:    c.url(f+".avatarURL", urlString(d.AvatarURL)),
		HTTPConfig:   c.httpConfig(f+".httpConfig", d.HTTPConfig),
	}
	if out.WebhookURL == "" {
		c.invalid("%s.apiURL: the referenced value is empty (the Secret is optional and missing?)", f)
	}
	c.since(0, 28, d.Content != nil, f+".content")
	c.since(0, 28, d.Username != nil, f+".username")
	c.since(0, 28, d.AvatarURL != nil, f+".avatarURL")
	return out
}

func (c *conv) email(f string, e *monitoringv1alpha1.EmailConfig) *emailConfig {
	out := &emailConfig{
		SendResolved:     e.SendResolved,
		To:               deref(e.To),
		From:             deref(e.From),
		Smarthost:        deref(e.Smarthost),
		Hello:            deref(e.Hello),
		AuthUsername:     deref(e.AuthUsername),
		AuthPassword:     c.secret(f+".authPassword", e.AuthPassword),
		AuthSecret:       c.secret(f+".authSecret", e.AuthSecret),
		AuthIdentity:     deref(e.AuthIdentity),
		RequireTLS:       e.RequireTLS,
		ForceImplicitTLS: e.ForceImplicitTLS,
		TLSConfig:        c.tlsConfig(f+".tlsConfig", e.TLSConfig),
		HTML:             e.HTML,
		Text:             deref(e.Text),
		Headers:          c.keyValues(f+".headers", e.Headers, textproto.CanonicalMIMEHeaderKey),
	}
	if out.To == "" {
		c.invalid("%s.to: must be set", f)
	}
	if out.Smarthost != "" {
		if _, port, err := net.SplitHostPort(out.Smarthost); err != nil || port == "" {
			c.invalid("%s.smarthost: %q is not a host:port address", f, out.Smarthost)
		}
	}
	if t := e.Threading; t != nil {
		switch t.ThreadByDate {
		case monitoringv1alpha1.ThreadByDateTypeDaily, monitoringv1alpha1.ThreadByDateTypeNone:
		default:
			c.invalid("%s.threading.threadByDate: %q is not one of %s, %s", f, t.ThreadByDate,
				monitoringv1alpha1.ThreadByDateTypeDaily, monitoringv1alpha1.ThreadByDateTypeNone)
		}
		out.Threading = &emailThreading{Enabled: true, ThreadByDate: strings.ToLower(string(t.ThreadByDate))}
		for i, kv := range e.Headers {
			if h := textproto.CanonicalMIMEHeaderKey(kv.Key); h == "References" || h == "In-Reply-To" {
				c.invalid("%s.headers[%d].key: threading sets the %s header itself", f, i, h)
			}
		}
	}
	c.since(0, 30, e.Threading != nil, f+".threading")
	c.since(0, 31, e.ForceImplicitTLS != nil, f+".forceImplicitTLS")
	return out
}

func (c *conv) msteams(f string, m *monitoringv1alpha1.MSTeamsConfig) *msteamsConfig {
	c.since(0, 26, true, f)
	out := &msteamsConfig{
		SendResolved: m.SendResolved,
		WebhookURL:   c.secretURL(f+".webhookUrl", &m.WebhookURL),
		Title:        m.Title,
		Summary:      m.Summary,
		Text:         m.Text,
		HTTPConfig:   c.httpConfig(f+".httpConfig", m.HTTPConfig),
	}
	if out.WebhookURL == "" {
		c.invalid("%s.webhookUrl: the referenced value is empty (the Secret is optional and missing?)", f)
	}
	c.since(0, 27, m.Summary != nil, f+".summary")
	return out
}

func (c *conv) msteamsV2(f string, m *monitoringv1alpha1.MSTeamsV2Config) *msteamsV2Config {
	c.since(0, 28, true, f)
	out := &msteamsV2Config{
		SendResolved: m.SendResolved,
		WebhookURL:   c.secretURL(f+".webhookURL", m.WebhookURL),
		Title:        deref(m.Title),
		Text:         deref(m.Text),
		HTTPConfig:   c.httpConfig(f+".httpConfig", m.HTTPConfig),
	}
	if m.WebhookURL == nil {
		c.invalid("%s.webhookURL: must be set", f)
	} else if out.WebhookURL == "" {
		c.invalid("%s.webhookURL: the referenced value is empty (the Secret is optional and missing?)", f)
	}
	return out
}

func (c *conv) opsGenie(f string, o *monitoringv1alpha1.OpsGenieConfig) *opsGenieConfig {
	out := &opsGenieConfig{
		SendResolved: o.SendResolved,
		APIKey:       c.secret(f+".apiKey", o.APIKey),
		APIURL:       c.url(f+".apiURL", urlString(o.APIURL)),
		Message:      deref(o.Message),
		Description:  deref(o.Description),
		Source:       deref(o.Source),
		Details:      c.keyValues(f+".details", o.Details, nil),
		Tags:         deref(o.Tags),
		Note:         deref(o.Note),
		Priority:     deref(o.Priority),
		UpdateAlerts: o.UpdateAlerts,
		Entity:       deref(o.Entity),
		Actions:      deref(o.Actions),
		HTTPConfig:   c.httpConfig(f+".httpConfig", o.HTTPConfig),
	}
	for i := range o.Responders {
		rs := &o.Responders[i]
		if err := rs.Validate(); err != nil {
			c.invalid("%s.responders[%d]: %v", f, i, err)
		}
		out.Responders = append(out.Responders, opsGenieResponder{
			ID: deref(rs.ID), Name: deref(rs.Name), Username: deref(rs.Username), Type: rs.Type,
		})
	}
	return out
}

func (c *conv) pagerDuty(f string, p *monitoringv1alpha1.PagerDutyConfig) *pagerDutyConfig {
	out := &pagerDutyConfig{
		SendResolved: p.SendResolved,
		RoutingKey:   c.secret(f+".routingKey", p.RoutingKey),
		ServiceKey:   c.secret(f+".serviceKey", p.ServiceKey),
		URL:          c.url(f+".url", urlString(p.URL)),
		Client:       deref(p.Client),
		ClientURL:    p.ClientURL,
		Description:  deref(p.Description),
		Severity:     deref(p.Severity),
		Source:       deref(p.Source),
		Details:      c.keyValues(f+".details", p.Details, nil),
		Component:    deref(p.Component),
		Group:        deref(p.Group),
		Class:        deref(p.Class),
		HTTPConfig:   c.httpConfig(f+".httpConfig", p.HTTPConfig),
		Timeout:      c.goDuration(f+".timeout", string(deref(p.Timeout))),
	}
	for _, im := range p.PagerDutyImageConfigs {
		out.Images = append(out.Images, pagerDutyImage{Href: deref(im.Href), Src: deref(im.Src), Alt: deref(im.Alt)})
	}
	for _, l := range p.PagerDutyLinkConfigs {
		out.Links = append(out.Links, pagerDutyLink{Href: deref(l.Href), Text: deref(l.Text)})
	}
	if out.RoutingKey == "" && out.ServiceKey == "" {
		c.invalid("%s: one of routingKey and serviceKey must be set (to a non-empty value)", f)
	}
	c.since(0, 30, p.Timeout != nil, f+".timeout")
	return out
}

func (c *conv) pushover(f string, p *monitoringv1alpha1.PushoverConfig) *pushoverConfig {
	out := &pushoverConfig{
		SendResolved: p.SendResolved,
		UserKey:      c.secret(f+".userKey", p.UserKey),
		UserKeyFile:  deref(p.UserKeyFile),
		Token:        c.secret(f+".token", p.Token),
		TokenFile:    deref(p.TokenFile),
		Title:        deref(p.Title),
		Message:      deref(p.Message),
		URL:          p.URL,
		URLTitle:     deref(p.URLTitle),
		Device:       deref(p.Device),
		Sound:        deref(p.Sound),
		Priority:     deref(p.Priority),
		Retry:        c.goDuration(f+".retry", deref(p.Retry)),
		Expire:       c.goDuration(f+".expire", deref(p.Expire)),
		TTL:          c.goDuration(f+".ttl", string(deref(p.TTL))),
		HTML:         p.HTML,
		Monospace:    p.Monospace,
		HTTPConfig:   c.httpConfig(f+".httpConfig", p.HTTPConfig),
	}
	for _, pair := range []struct {
		name, fileName string
		set, fileSet   bool
		value          string
	}{
		{"userKey", "userKeyFile", p.UserKey != nil, p.UserKeyFile != nil, out.UserKey},
		{"token", "tokenFile", p.Token != nil, p.TokenFile != nil, out.Token},
	} {
		switch {
		case pair.set && pair.fileSet:
			c.invalid("%s: %s and %s are mutually exclusive", f, pair.name, pair.fileName)
		case !pair.fileSet && pair.value == "":
			c.invalid("%s: one of %s and %s must be set (to a non-empty value)", f, pair.name, pair.fileName)
		}
	}
	if deref(p.HTML) && deref(p.Monospace) {
		c.invalid("%s: html and monospace are mutually exclusive", f)
	}
	c.since(0, 26, p.UserKeyFile != nil, f+".userKeyFile")
	c.since(0, 26, p.TokenFile != nil, f+".tokenFile")
	c.since(0, 26, p.Device != nil, f+".device")
	c.since(0, 29, p.Monospace != nil, f+".monospace")
	return out
}

func (c *conv) rocketChat(f string, rc *monitoringv1alpha1.RocketChatConfig) *rocketChatConfig {
	c.since(0, 28, true, f)
	out := &rocketChatConfig{
		SendResolved: rc.SendResolved,
		APIURL:       c.url(f+".apiURL", urlString(rc.APIURL)),
		Channel:      deref(rc.Channel),
		Token:        c.secretIfSet(f+".token", rc.Token),
		TokenID:      c.secretIfSet(f+".tokenID", rc.TokenID),
		Color:        deref(rc.Color),
		Emoji:        deref(rc.Emoji),
		IconURL:      rc.IconURL,
		Text:         deref(rc.Text),
		Title:        deref(rc.Title),
		TitleLink:    deref(rc.TitleLink),
		ImageURL:     deref(rc.ImageURL),
		ThumbURL:     deref(rc.ThumbURL),
		LinkNames:    rc.LinkNames,
		ShortFields:  rc.ShortFields,
		HTTPConfig:   c.httpConfig(f+".httpConfig", rc.HTTPConfig),
	}
	for _, fl := range rc.Fields {
		out.Fields = append(out.Fields, rocketChatField{Title: deref(fl.Title), Value: deref(fl.Value), Short: fl.Short})
	}
	for _, a := range rc.Actions {
		out.Actions = append(out.Actions, rocketChatAction{Text: deref(a.Text), URL: deref(a.URL), Msg: deref(a.Msg)})
	}
	return out
}

// slackPostMessageURL is the only api_url Alertmanager accepts with update_message.
const slackPostMessageURL = "https://slack.com/api/chat.postMessage"

func (c *conv) slack(f string, s *monitoringv1alpha1.SlackConfig) *slackConfig {
	out := &slackConfig{
		SendResolved:  s.SendResolved,
		APIURL:        c.secretURL(f+".apiURL", s.APIURL),
		Channel:       deref(s.Channel),
		IconEmoji:     deref(s.IconEmoji),
		IconURL:       s.IconURL,
		LinkNames:     s.LinkNames,
		MessageText:   deref(s.MessageText),
		Username:      deref(s.Username),
		CallbackID:    deref(s.CallbackID),
		Color:         deref(s.Color),
		Fallback:      deref(s.Fallback),
		Footer:        deref(s.Footer),
		MrkdwnIn:      s.MrkdwnIn,
		Pretext:       deref(s.Pretext),
		ShortFields:   s.ShortFields,
		Text:          deref(s.Text),
		Title:         deref(s.Title),
		TitleLink:     s.TitleLink,
		ImageURL:      s.ImageURL,
		ThumbURL:      s.ThumbURL,
		HTTPConfig:    c.httpConfig(f+".httpConfig", s.HTTPConfig),
		Timeout:       c.goDuration(f+".timeout", string(deref(s.Timeout))),
		UpdateMessage: s.UpdateMessage,
	}
	for i := range s.Actions {
		a := &s.Actions[i]
		if err := a.Validate(); err != nil {
			c.invalid("%s.actions[%d]: %v", f, i, err)
		}
		oa := slackAction{Text: a.Text, Type: a.Type, URL: a.URL, Name: deref(a.Name), Value: deref(a.Value), Style: deref(a.Style)}
		if cf := a.ConfirmField; cf != nil {
			oa.Confirm = &slackConfirmation{Text: cf.Text, DismissText: deref(cf.DismissText), OkText: deref(cf.OkText), Title: deref(cf.Title)}
		}
		out.Actions = append(out.Actions, oa)
	}
	for i := range s.Fields {
		fl := &s.Fields[i]
		if err := fl.Validate(); err != nil {
			c.invalid("%s.fields[%d]: %v", f, i, err)
		}
		out.Fields = append(out.Fields, slackField{Title: fl.Title, Value: fl.Value, Short: fl.Short})
	}
	if deref(s.UpdateMessage) && out.APIURL != slackPostMessageURL {
		c.invalid("%s.updateMessage: needs a bot token (httpConfig.authorization) and apiURL set to %s", f, slackPostMessageURL)
	}
	c.since(0, 30, s.Timeout != nil, f+".timeout")
	c.since(0, 31, s.MessageText != nil, f+".messageText")
	c.since(0, 32, s.UpdateMessage != nil, f+".updateMessage")
	return out
}

func (c *conv) sns(f string, s *monitoringv1alpha1.SNSConfig) *snsConfig {
	out := &snsConfig{
		SendResolved:     s.SendResolved,
		APIURL:           deref(s.ApiURL),
		TopicARN:         deref(s.TopicARN),
		Subject:          deref(s.Subject),
		PhoneNumber:      deref(s.PhoneNumber),
		TargetARN:        deref(s.TargetARN),
		Message:          deref(s.Message),
		Attributes:       s.Attributes,
		HTTPConfig:       c.httpConfig(f+".httpConfig", s.HTTPConfig),
		UseAWSHTTPClient: s.UseAWSHTTPClient,
	}
	if v := s.Sigv4; v != nil {
		out.Sigv4 = &sigv4Config{
			Region:             v.Region,
			AccessKey:          c.secret(f+".sigv4.accessKey", v.AccessKey),
			SecretKey:          c.secret(f+".sigv4.secretKey", v.SecretKey),
			Profile:            v.Profile,
			RoleARN:            v.RoleArn,
			ExternalID:         v.ExternalID,
			UseFIPSSTSEndpoint: v.UseFIPSSTSEndpoint,
		}
		if (v.AccessKey == nil) != (v.SecretKey == nil) {
			c.invalid("%s.sigv4: accessKey and secretKey must be set together", f)
		}
		if v.ExternalID != "" && v.RoleArn == "" {
			c.invalid("%s.sigv4.externalId: can only be used with roleArn", f)
		}
		c.since(0, 34, v.ExternalID != "", f+".sigv4.externalId")
	}
	if out.TopicARN == "" && out.PhoneNumber == "" && out.TargetARN == "" {
		c.invalid("%s: one of topicARN, phoneNumber and targetARN must be set", f)
	}
	c.since(0, 33, s.UseAWSHTTPClient != nil, f+".useAWSHTTPClient")
	return out
}

var telegramParseModes = []string{"MarkdownV2", "Markdown", "HTML"}

func (c *conv) telegram(f string, t *monitoringv1alpha1.TelegramConfig) *telegramConfig {
	c.since(0, 24, true, f)
	out := &telegramConfig{
		SendResolved:         t.SendResolved,
		APIURL:               c.url(f+".apiURL", urlString(t.APIURL)),
		BotToken:             c.secret(f+".botToken", t.BotToken),
		BotTokenFile:         deref(t.BotTokenFile),
		ChatID:               t.ChatID,
		MessageThreadID:      t.MessageThreadID,
		Message:              t.Message,
		DisableNotifications: t.DisableNotifications,
		ParseMode:            t.ParseMode,
		HTTPConfig:           c.httpConfig(f+".httpConfig", t.HTTPConfig),
	}
	if t.BotToken != nil && t.BotTokenFile != nil {
		c.invalid("%s: botToken and botTokenFile are mutually exclusive", f)
	}
	if t.ChatID == 0 {
		c.invalid("%s.chatID: must be set", f)
	}
	if t.ParseMode != "" && !slices.Contains(telegramParseModes, t.ParseMode) {
		c.invalid("%s.parseMode: %q is not one of %s", f, t.ParseMode, strings.Join(telegramParseModes, ", "))
	}
	c.since(0, 26, t.BotTokenFile != nil, f+".botTokenFile")
	c.since(0, 28, t.MessageThreadID != nil, f+".messageThreadID")
	return out
}

// victorOpsReservedFields are the custom fields Alertmanager refuses: it sets them.
var victorOpsReservedFields = []string{"routing_key", "message_type", "state_message", "entity_display_name", "monitoring_tool", "entity_id", "entity_state"}

func (c *conv) victorOps(f string, v *monitoringv1alpha1.VictorOpsConfig) *victorOpsConfig {
	out := &victorOpsConfig{
		SendResolved:      v.SendResolved,
		APIKey:            c.secret(f+".apiKey", v.APIKey),
		APIURL:            c.url(f+".apiUrl", urlString(v.APIURL)),
		RoutingKey:        v.RoutingKey,
		MessageType:       deref(v.MessageType),
		EntityDisplayName: deref(v.EntityDisplayName),
		StateMessage:      deref(v.StateMessage),
		MonitoringTool:    deref(v.MonitoringTool),
		CustomFields:      c.keyValues(f+".customFields", v.CustomFields, nil),
		HTTPConfig:        c.httpConfig(f+".httpConfig", v.HTTPConfig),
	}
	if v.RoutingKey == "" {
		c.invalid("%s.routingKey: must be set", f)
	}
	for i, kv := range v.CustomFields {
		if slices.Contains(victorOpsReservedFields, kv.Key) {
			c.invalid("%s.customFields[%d].key: %q is set by Alertmanager and cannot be a custom field", f, i, kv.Key)
		}
	}
	return out
}

func (c *conv) webex(f string, w *monitoringv1alpha1.WebexConfig) *webexConfig {
	c.since(0, 25, true, f)
	out := &webexConfig{
		SendResolved: w.SendResolved,
		APIURL:       c.url(f+".apiURL", urlString(w.APIURL)),
		RoomID:       w.RoomID,
		Message:      w.Message,
		HTTPConfig:   c.httpConfig(f+".httpConfig", w.HTTPConfig),
	}
	if w.RoomID == "" {
		c.invalid("%s.roomID: must be set", f)
	}
	if w.HTTPConfig == nil || w.HTTPConfig.Authorization == nil {
		c.invalid("%s.httpConfig.authorization: must be set (Webex takes the bot token from it)", f)
	}
	return out
}

func (c *conv) webhook(f string, w *monitoringv1alpha1.WebhookConfig) *webhookConfig {
	out := &webhookConfig{
		SendResolved: w.SendResolved,
		HTTPConfig:   c.httpConfig(f+".httpConfig", w.HTTPConfig),
		MaxAlerts:    w.MaxAlerts,
		Timeout:      c.goDuration(f+".timeout", string(deref(w.Timeout))),
		Payload:      deref(w.Payload),
	}
	// urlSecret takes precedence over url.
	fromSecret := strings.TrimSpace(c.secret(f+".urlSecret", w.URLSecret))
	switch {
	case fromSecret != "":
		out.URL = fromSecret
		c.webhookURL(f+".urlSecret", fromSecret, fmt.Sprintf("the value of key %q of Secret %s/%s", w.URLSecret.Key, c.r.ns, w.URLSecret.Name))
	case deref(w.URL) != "":
		out.URL = *w.URL
		c.webhookURL(f+".url", out.URL, fmt.Sprintf("%q", out.URL))
	default:
		c.invalid("%s: one of url and urlSecret must be set (to a non-empty value)", f)
	}
	if w.MaxAlerts < 0 {
		c.invalid("%s.maxAlerts: must not be negative, got %d", f, w.MaxAlerts)
	}
	c.since(0, 28, w.Timeout != nil, f+".timeout")
	c.since(0, 32, w.Payload != nil, f+".payload")
	return out
}

// webhookURL checks a webhook URL; what describes it in messages (a Secret's value is
// never shown). Alertmanager v0.31 added templates there.
func (c *conv) webhookURL(field, u, what string) {
	if strings.Contains(u, "{{") {
		c.since(0, 31, true, field+" (a templated URL)")
		return
	}
	if checkURL(u) != nil {
		c.invalid("%s: %s is not an http(s) URL", field, what)
	}
}

func (c *conv) weChat(f string, w *monitoringv1alpha1.WeChatConfig) *weChatConfig {
	return &weChatConfig{
		SendResolved: w.SendResolved,
		APISecret:    c.secret(f+".apiSecret", w.APISecret),
		APIURL:       c.url(f+".apiURL", urlString(w.APIURL)),
		CorpID:       deref(w.CorpID),
		Message:      deref(w.Message),
		MessageType:  deref(w.MessageType),
		AgentID:      deref(w.AgentID),
		ToUser:       deref(w.ToUser),
		ToParty:      deref(w.ToParty),
		ToTag:        deref(w.ToTag),
		HTTPConfig:   c.httpConfig(f+".httpConfig", w.HTTPConfig),
	}
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
