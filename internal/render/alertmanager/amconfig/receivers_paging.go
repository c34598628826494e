package amconfig

import (
	"slices"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// This file converts the on-call and paging receivers: OpsGenie, PagerDuty, Pushover
// and VictorOps.

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
