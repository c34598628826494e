package amconfig

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// This file converts the HTTP client settings receivers and the global section share:
// authentication, OAuth2, proxy and TLS.

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
