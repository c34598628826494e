package amconfig

import (
	"fmt"
	"net"
	"net/textproto"
	"strings"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// This file converts the receivers that deliver to an address the user runs or owns:
// email (SMTP), webhook (HTTP) and SNS (an AWS topic or phone number).

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

type webhookConfig struct {
	SendResolved *bool       `yaml:"send_resolved,omitempty"`
	URL          string      `yaml:"url,omitempty"`
	HTTPConfig   *httpConfig `yaml:"http_config,omitempty"`
	MaxAlerts    int32       `yaml:"max_alerts,omitempty"`
	Timeout      string      `yaml:"timeout,omitempty"`
	Payload      string      `yaml:"payload,omitempty"`
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
