package amconfig

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// This file holds what every receiver conversion shares: the receiver entry, the
// conversion state (conv) and its field helpers. Each receiver family has its own file
// (receivers_chat.go, receivers_paging.go, receivers_endpoint.go); the HTTP client
// settings are in httpconfig.go and the global section in global.go.
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
