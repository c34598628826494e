package scrape

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	commoncfg "github.com/prometheus/common/config"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/keyref"
)

// secretValue reads one key of a Secret in namespace ns. Credentials are inlined into the
// config, which is itself stored in a Secret.
func (g *generator) secretValue(ns, field string, sel *corev1.SecretKeySelector) (string, *rejection) {
	if sel.Name == "" {
		return "", reject(ReasonInvalidConfig, "%s: the Secret name is empty", field)
	}
	if sel.Key == "" {
		return "", reject(ReasonInvalidConfig, "%s: the Secret key is empty", field)
	}
	g.track('S', ns+"/"+sel.Name)
	v, missing := keyref.Secret(g.secrets, ns, sel)
	switch missing {
	case keyref.NoObject:
		return "", reject(ReasonSecretNotFound, "%s: Secret %s/%s not found", field, ns, sel.Name)
	case keyref.NoKey:
		return "", reject(ReasonSecretKeyNotFound, "%s: key %q not found in Secret %s/%s", field, sel.Key, ns, sel.Name)
	}
	return v, nil
}

// configMapValue reads one key of a ConfigMap in namespace ns. CA certificates and OAuth2 client
// IDs are not secret, so they may live in ConfigMaps; they are inlined like Secrets.
func (g *generator) configMapValue(ns, field string, sel *corev1.ConfigMapKeySelector) (string, *rejection) {
	if sel.Name == "" {
		return "", reject(ReasonInvalidConfig, "%s: the ConfigMap name is empty", field)
	}
	if sel.Key == "" {
		return "", reject(ReasonInvalidConfig, "%s: the ConfigMap key is empty", field)
	}
	g.track('C', ns+"/"+sel.Name)
	v, missing := keyref.ConfigMap(g.configMaps, ns, sel)
	switch missing {
	case keyref.NoObject:
		return "", reject(ReasonConfigMapNotFound, "%s: ConfigMap %s/%s not found", field, ns, sel.Name)
	case keyref.NoKey:
		return "", reject(ReasonConfigMapKeyNotFound, "%s: key %q not found in ConfigMap %s/%s", field, sel.Key, ns, sel.Name)
	}
	return v, nil
}

// secretOrConfigMapValue reads what v points at: a Secret key or a ConfigMap key. It is empty
// when v points nowhere.
func (g *generator) secretOrConfigMapValue(ns, field string, v *monitoringv1.SecretOrConfigMap) (string, *rejection) {
	switch {
	case v.Secret != nil && v.ConfigMap != nil:
		return "", reject(ReasonInvalidConfig, "%s: secret and configMap cannot both be set", field)
	case v.Secret != nil:
		return g.secretValue(ns, field+".secret", v.Secret)
	case v.ConfigMap != nil:
		return g.configMapValue(ns, field+".configMap", v.ConfigMap)
	}
	return "", nil
}

func isZeroSelector(sel corev1.SecretKeySelector) bool {
	return sel.Name == "" && sel.Key == ""
}

// endpointHTTP fills the HTTP client part of a job: scheme, redirects, proxy, TLS and
// credentials. hc is in the shape of a ServiceMonitor endpoint's, the widest of the kinds;
// PodMonitors and Probes convert theirs. field is the path of the object holding hc, empty at
// the top of a spec; Secrets are read in namespace ns.
func (g *generator) endpointHTTP(job *scrapeJob, ns, field string, scheme *monitoringv1.Scheme, hc *monitoringv1.HTTPConfigWithProxyAndTLSFiles, bearerTokenFile string, class *monitoringv1.ScrapeClass) *rejection {
	// The API types know which combinations make no sense (two kinds of auth, a client cert
	// without a key, noProxy without proxyUrl...).
	if err := hc.Validate(); err != nil {
		return reject(ReasonInvalidConfig, "%s", atField(field, err.Error()))
	}
	if bearerTokenFile != "" && (hc.Authorization != nil || hc.BasicAuth != nil || hc.OAuth2 != nil || hc.BearerTokenSecret != nil) {
		return reject(ReasonInvalidConfig, "%s: cannot be set together with authorization, basicAuth, oauth2 or bearerTokenSecret", fieldPath(field, "bearerTokenFile"))
	}
	if g.prom.Spec.ArbitraryFSAccessThroughSMs.Deny {
		if bearerTokenFile != "" {
			return reject(ReasonFileAccessDenied, "%s: reading files from the Prometheus container is denied by the Prometheus's arbitraryFSAccessThroughSMs.deny", fieldPath(field, "bearerTokenFile"))
		}
		if t := hc.TLSConfig; t != nil && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "") {
			return reject(ReasonFileAccessDenied, "%s: caFile, certFile and keyFile are denied by the Prometheus's arbitraryFSAccessThroughSMs.deny", fieldPath(field, "tlsConfig"))
		}
	}

	var rej *rejection
	if job.Scheme, rej = schemeOf(fieldPath(field, "scheme"), scheme); rej != nil {
		return rej
	}
	job.FollowRedirects = hc.FollowRedirects
	job.EnableHTTP2 = hc.EnableHTTP2

	if job.Proxy, rej = g.proxy(ns, field, &hc.ProxyConfig); rej != nil {
		return rej
	}
	if hc.OAuth2 != nil {
		if job.OAuth2, rej = g.oauth2(ns, fieldPath(field, "oauth2"), hc.OAuth2); rej != nil {
			return rej
		}
	}
	if job.TLSConfig, rej = g.endpointTLS(ns, fieldPath(field, "tlsConfig"), hc.TLSConfig, class); rej != nil {
		return rej
	}

	if hc.BearerTokenSecret != nil {
		if job.BearerToken, rej = g.secretValue(ns, fieldPath(field, "bearerTokenSecret"), hc.BearerTokenSecret); rej != nil {
			return rej
		}
	}
	job.BearerTokenFile = bearerTokenFile

	if hc.BasicAuth != nil {
		if job.BasicAuth, rej = g.basicAuth(ns, fieldPath(field, "basicAuth"), hc.BasicAuth); rej != nil {
			return rej
		}
	}

	switch {
	case hc.Authorization != nil:
		if job.Authorization, rej = g.authorization(ns, fieldPath(field, "authorization"), hc.Authorization); rej != nil {
			return rej
		}
	case class != nil && class.Authorization != nil && hc.BasicAuth == nil && hc.OAuth2 == nil &&
		hc.BearerTokenSecret == nil && bearerTokenFile == "":
		// The scrape class's credentials apply only when the endpoint brings none of its own;
		// they live in the Prometheus's namespace.
		if job.Authorization, rej = g.authorizationWithFile(g.prom.Namespace, fmt.Sprintf("scrapeClass %q authorization", class.Name), class.Authorization); rej != nil {
			return rej
		}
	}
	return nil
}

// schemeOf is the scheme written for a scrape, lowercase; empty leaves Prometheus's default.
func schemeOf(field string, s *monitoringv1.Scheme) (string, *rejection) {
	if s == nil || *s == "" {
		return "", nil
	}
	scheme := strings.ToLower(string(*s))
	if scheme != "http" && scheme != "https" {
		return "", reject(ReasonInvalidConfig, "%s: %q is neither HTTP nor HTTPS", field, string(*s))
	}
	return scheme, nil
}

func authType(t string) string {
	if t = strings.TrimSpace(t); t == "" {
		return "Bearer"
	}
	return t
}

func (g *generator) basicAuth(ns, field string, ba *monitoringv1.BasicAuth) (*basicAuth, *rejection) {
	out := &basicAuth{}
	var rej *rejection
	if !isZeroSelector(ba.Username) {
		if out.Username, rej = g.secretValue(ns, field+".username", &ba.Username); rej != nil {
			return nil, rej
		}
	}
	if !isZeroSelector(ba.Password) {
		if out.Password, rej = g.secretValue(ns, field+".password", &ba.Password); rej != nil {
			return nil, rej
		}
	}
	return out, nil
}

func (g *generator) authorization(ns, field string, a *monitoringv1.SafeAuthorization) (*authorization, *rejection) {
	if err := a.Validate(); err != nil {
		return nil, reject(ReasonInvalidConfig, "%s: %v", field, err)
	}
	creds, rej := g.secretValue(ns, field+".credentials", a.Credentials)
	if rej != nil {
		return nil, rej
	}
	return &authorization{Type: authType(a.Type), Credentials: creds}, nil
}

// authorizationWithFile renders an Authorization whose credentials come from a Secret in
// namespace ns or from a file in the Prometheus container.
func (g *generator) authorizationWithFile(ns, field string, a *monitoringv1.Authorization) (*authorization, *rejection) {
	if err := a.Validate(); err != nil {
		return nil, reject(ReasonInvalidConfig, "%s: %v", field, err)
	}
	if a.CredentialsFile != "" {
		return &authorization{Type: authType(a.Type), CredentialsFile: a.CredentialsFile}, nil
	}
	return g.authorization(ns, field, &a.SafeAuthorization)
}

func (g *generator) proxy(ns, field string, pc *monitoringv1.ProxyConfig) (proxyConfig, *rejection) {
	var out proxyConfig
	if pc.ProxyURL != nil {
		out.ProxyURL = *pc.ProxyURL
	}
	if pc.NoProxy != nil {
		out.NoProxy = *pc.NoProxy
	}
	if pc.ProxyFromEnvironment != nil {
		out.ProxyFromEnvironment = *pc.ProxyFromEnvironment
	}
	if len(pc.ProxyConnectHeader) > 0 {
		out.ProxyConnectHeader = make(map[string][]string, len(pc.ProxyConnectHeader))
		headers := make([]string, 0, len(pc.ProxyConnectHeader))
		for h := range pc.ProxyConnectHeader {
			headers = append(headers, h)
		}
		sort.Strings(headers)
		for _, h := range headers {
			sels := pc.ProxyConnectHeader[h]
			values := make([]string, 0, len(sels))
			for i := range sels {
				v, rej := g.secretValue(ns, fmt.Sprintf("%s[%s][%d]", fieldPath(field, "proxyConnectHeader"), h, i), &sels[i])
				if rej != nil {
					return proxyConfig{}, rej
				}
				values = append(values, v)
			}
			out.ProxyConnectHeader[h] = values
		}
	}
	return out, nil
}

func (g *generator) oauth2(ns, field string, o *monitoringv1.OAuth2) (*oauth2Config, *rejection) {
	if err := o.Validate(); err != nil {
		return nil, reject(ReasonInvalidConfig, "%s: %v", field, err)
	}
	out := &oauth2Config{
		TokenURL:       string(o.TokenURL),
		Scopes:         o.Scopes,
		EndpointParams: o.EndpointParams,
	}
	var rej *rejection
	if out.ClientID, rej = g.secretOrConfigMapValue(ns, field+".clientId", &o.ClientID); rej != nil {
		return nil, rej
	}
	if out.ClientSecret, rej = g.secretValue(ns, field+".clientSecret", &o.ClientSecret); rej != nil {
		return nil, rej
	}
	if o.TLSConfig != nil {
		if out.TLSConfig, rej = g.safeTLS(ns, field+".tlsConfig", o.TLSConfig); rej != nil {
			return nil, rej
		}
	}
	if out.Proxy, rej = g.proxy(ns, field, &o.ProxyConfig); rej != nil {
		return nil, rej
	}
	return out, nil
}

// safeTLS renders a TLS config whose CA, client certificate and key come from Secrets or
// ConfigMaps in namespace ns. Prometheus takes them inline (ca, cert, key), so nothing has to be
// mounted into its pod; the config holding them is itself a Secret.
func (g *generator) safeTLS(ns, field string, t *monitoringv1.SafeTLSConfig) (*tlsConfig, *rejection) {
	if err := t.Validate(); err != nil {
		return nil, reject(ReasonInvalidConfig, "%s: %v", field, err)
	}
	out := &tlsConfig{InsecureSkipVerify: t.InsecureSkipVerify}
	var rej *rejection
	if out.CA, rej = g.secretOrConfigMapValue(ns, field+".ca", &t.CA); rej != nil {
		return nil, rej
	}
	if out.Cert, rej = g.secretOrConfigMapValue(ns, field+".cert", &t.Cert); rej != nil {
		return nil, rej
	}
	if t.KeySecret != nil {
		if out.Key, rej = g.secretValue(ns, field+".keySecret", t.KeySecret); rej != nil {
			return nil, rej
		}
	}
	if rej = usableTLSMaterial(field, out); rej != nil {
		return nil, rej
	}
	if t.ServerName != nil {
		out.ServerName = *t.ServerName
	}
	if t.MinVersion != nil {
		out.MinVersion = string(*t.MinVersion)
	}
	if t.MaxVersion != nil {
		out.MaxVersion = string(*t.MaxVersion)
	}
	return out, nil
}

// usableTLSMaterial checks inlined PEM the way Prometheus reads it when it builds the scrape
// client. Its config loader does not parse certificates, and a job whose client cannot be built
// fails the whole reload, so a bad certificate must reject its monitor here.
func usableTLSMaterial(field string, t *tlsConfig) *rejection {
	if t.CA != "" {
		if _, err := commoncfg.NewTLSConfig(&commoncfg.TLSConfig{CA: t.CA}); err != nil {
			return reject(ReasonInvalidConfig, "%s.ca: %v", field, err)
		}
	}
	if t.Cert != "" && t.Key != "" {
		if _, err := commoncfg.NewTLSConfig(&commoncfg.TLSConfig{Cert: t.Cert, Key: commoncfg.Secret(t.Key)}); err != nil {
			return reject(ReasonInvalidConfig, "%s: the client certificate and key cannot be used together: %v", field, err)
		}
	}
	return nil
}

// endpointTLS is the TLS config of an endpoint with scrape class class, as the existing
// operator merges them: an endpoint without a TLS config of its own takes the class's whole
// TLS config (its CA, certificate and key read from the Prometheus's namespace, like the
// class's authorization); one with its own takes from the class only the file paths it
// leaves unset, each of CA, certificate and key on its own.
func (g *generator) endpointTLS(ns, field string, ep *monitoringv1.TLSConfig, class *monitoringv1.ScrapeClass) (*tlsConfig, *rejection) {
	var classTLS *monitoringv1.TLSConfig
	if class != nil {
		classTLS = class.TLSConfig
	}
	if ep == nil {
		if classTLS == nil {
			return nil, nil
		}
		return g.tlsWithFiles(g.prom.Namespace, fmt.Sprintf("scrapeClass %q tlsConfig", class.Name), classTLS)
	}
	out, rej := g.tlsWithFiles(ns, field, ep)
	if rej != nil {
		return nil, rej
	}
	if classTLS != nil {
		if out.CAFile == "" && out.CA == "" {
			out.CAFile = classTLS.CAFile
		}
		if out.CertFile == "" && out.Cert == "" {
			out.CertFile = classTLS.CertFile
		}
		if out.KeyFile == "" && out.Key == "" {
			out.KeyFile = classTLS.KeyFile
		}
	}
	if *out == (tlsConfig{}) {
		return nil, nil
	}
	return out, nil
}

// withoutFiles is the TLS config of a kind whose API has no file fields. An empty one counts
// as none, as with the existing operator: the scrape class's whole TLS config applies.
func withoutFiles(t *monitoringv1.SafeTLSConfig) *monitoringv1.TLSConfig {
	if t == nil || reflect.ValueOf(*t).IsZero() {
		return nil
	}
	return &monitoringv1.TLSConfig{SafeTLSConfig: *t}
}

// tlsWithFiles is a TLS config whose CA, certificate and key come from Secrets or ConfigMaps in
// namespace ns or from files in the Prometheus container.
func (g *generator) tlsWithFiles(ns, field string, t *monitoringv1.TLSConfig) (*tlsConfig, *rejection) {
	out, rej := g.safeTLS(ns, field, &t.SafeTLSConfig)
	if rej != nil {
		return nil, rej
	}
	out.CAFile, out.CertFile, out.KeyFile = t.CAFile, t.CertFile, t.KeyFile
	return out, nil
}
