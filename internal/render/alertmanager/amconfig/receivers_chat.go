package amconfig

import (
	"slices"
	"strings"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// This file converts the chat receivers: Discord, Microsoft Teams (both APIs),
// Rocket.Chat, Slack, Telegram, Webex and WeChat.

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

type webexConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	APIURL       string      `yaml:"api_url,omitempty"`
	RoomID       string      `yaml:"room_id,omitempty"`
	Message      *string     `yaml:"message,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
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
