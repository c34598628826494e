package scrape

import (
	"reflect"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// References returns the "namespace/name" of every Secret and every ConfigMap Generate may read
// for in, each sorted and unique, from one walk over the monitors. The Secrets are those
// referenced by the monitors of every kind, ScrapeConfigs and the discovery configs of
// every mechanism included (credentials, OAuth2, TLS, proxy headers), looked up in each
// monitor's namespace, and those of the Prometheus's scrape class authorizations, alertmanager
// endpoints and remote write and read endpoints, looked up in the Prometheus's. The ConfigMaps
// are TLS CAs and client certificates and OAuth2 client IDs, looked up in each monitor's
// namespace. The caller fetches them into Input.Secrets and Input.ConfigMaps.
func References(in Input) (secrets, configMaps []string) {
	sk, ck := map[string]struct{}{}, map[string]struct{}{}
	walkReferences(in, referenceVisitor{
		secret: func(ns string, sel *corev1.SecretKeySelector) {
			if sel != nil && sel.Name != "" {
				sk[ns+"/"+sel.Name] = struct{}{}
			}
		},
		configMap: func(ns string, sel *corev1.ConfigMapKeySelector) {
			if sel != nil && sel.Name != "" {
				ck[ns+"/"+sel.Name] = struct{}{}
			}
		},
	})
	return sortedKeys(sk), sortedKeys(ck)
}

// referenceVisitor is called for every Secret and ConfigMap key reference of the input, with the
// namespace it is looked up in; either function may be nil.
type referenceVisitor struct {
	secret    func(ns string, sel *corev1.SecretKeySelector)
	configMap func(ns string, sel *corev1.ConfigMapKeySelector)
}

// refs walks the API types shared by every kind, for one namespace.
type refs struct {
	v  referenceVisitor
	ns string
}

func (r refs) secret(sel *corev1.SecretKeySelector) {
	if r.v.secret != nil && sel != nil {
		r.v.secret(r.ns, sel)
	}
}

func (r refs) secretOrConfigMap(s *monitoringv1.SecretOrConfigMap) {
	r.secret(s.Secret)
	if r.v.configMap != nil && s.ConfigMap != nil {
		r.v.configMap(r.ns, s.ConfigMap)
	}
}

func (r refs) proxy(pc *monitoringv1.ProxyConfig) {
	for _, sels := range pc.ProxyConnectHeader {
		for i := range sels {
			r.secret(&sels[i])
		}
	}
}

func (r refs) tls(t *monitoringv1.SafeTLSConfig) {
	if t == nil {
		return
	}
	r.secretOrConfigMap(&t.CA)
	r.secretOrConfigMap(&t.Cert)
	r.secret(t.KeySecret)
}

func (r refs) basicAuth(ba *monitoringv1.BasicAuth) {
	if ba != nil {
		r.secret(&ba.Username)
		r.secret(&ba.Password)
	}
}

func (r refs) authorization(a *monitoringv1.SafeAuthorization) {
	if a != nil {
		r.secret(a.Credentials)
	}
}

func (r refs) oauth2(o *monitoringv1.OAuth2) {
	if o == nil {
		return
	}
	r.secretOrConfigMap(&o.ClientID)
	r.secret(&o.ClientSecret)
	r.tls(o.TLSConfig)
	r.proxy(&o.ProxyConfig)
}

func (r refs) http(hc *monitoringv1.HTTPConfigWithoutTLS) {
	r.basicAuth(hc.BasicAuth)
	r.authorization(hc.Authorization)
	r.secret(hc.BearerTokenSecret)
	r.oauth2(hc.OAuth2)
}

func (r refs) sdHTTP(ba *monitoringv1.BasicAuth, a *monitoringv1.SafeAuthorization, o *monitoringv1.OAuth2, t *monitoringv1.SafeTLSConfig, pc *monitoringv1.ProxyConfig) {
	r.basicAuth(ba)
	r.authorization(a)
	r.oauth2(o)
	r.tls(t)
	r.proxy(pc)
}

// walkReferences calls v for every reference Generate may follow. Generate and the key lists
// must agree, so both are driven by the same fields; a test checks it.
func walkReferences(in Input, v referenceVisitor) {
	for _, sm := range in.ServiceMonitors {
		if sm == nil {
			continue
		}
		r := refs{v: v, ns: sm.Namespace}
		for i := range sm.Spec.Endpoints {
			ep := &sm.Spec.Endpoints[i]
			r.http(&ep.HTTPConfigWithoutTLS)
			if ep.TLSConfig != nil {
				r.tls(&ep.TLSConfig.SafeTLSConfig)
			}
			r.proxy(&ep.ProxyConfig)
		}
	}
	for _, pm := range in.PodMonitors {
		if pm == nil {
			continue
		}
		r := refs{v: v, ns: pm.Namespace}
		for i := range pm.Spec.PodMetricsEndpoints {
			ep := &pm.Spec.PodMetricsEndpoints[i]
			r.http(&ep.HTTPConfigWithoutTLS)
			r.tls(ep.TLSConfig)
			r.proxy(&ep.ProxyConfig)
		}
	}
	for _, p := range in.Probes {
		if p == nil {
			continue
		}
		r := refs{v: v, ns: p.Namespace}
		spec := &p.Spec
		r.http(&spec.HTTPConfigWithoutTLS)
		r.authorization(spec.Authorization)
		r.tls(spec.TLSConfig)
		r.proxy(&spec.ProberSpec.ProxyConfig)
	}
	for _, sc := range in.ScrapeConfigs {
		if sc == nil {
			continue
		}
		r := refs{v: v, ns: sc.Namespace}
		spec := &sc.Spec
		r.basicAuth(spec.BasicAuth)
		r.authorization(spec.Authorization)
		r.oauth2(spec.OAuth2)
		r.tls(spec.TLSConfig)
		r.proxy(&spec.ProxyConfig)
		r.discovery(spec)
	}
	if p := in.Prometheus; p != nil {
		r := refs{v: v, ns: p.Namespace}
		for i := range p.Spec.ScrapeClasses {
			if a := p.Spec.ScrapeClasses[i].Authorization; a != nil {
				r.authorization(&a.SafeAuthorization)
			}
			if t := p.Spec.ScrapeClasses[i].TLSConfig; t != nil {
				r.tls(&t.SafeTLSConfig)
			}
		}
		if a := p.Spec.Alerting; a != nil {
			for i := range a.Alertmanagers {
				am := &a.Alertmanagers[i]
				if am.TLSConfig != nil {
					r.tls(&am.TLSConfig.SafeTLSConfig)
				}
				r.basicAuth(am.BasicAuth)
				r.authorization(am.Authorization)
				r.proxy(&am.ProxyConfig)
				r.sigv4(am.Sigv4)
			}
		}
		for i := range p.Spec.RemoteWrite {
			rw := &p.Spec.RemoteWrite[i]
			r.remote(rw.BasicAuth, rw.Authorization, rw.OAuth2, rw.TLSConfig, &rw.ProxyConfig)
			r.sigv4(rw.Sigv4)
			if az := rw.AzureAD; az != nil && az.OAuth != nil {
				r.secret(&az.OAuth.ClientSecret)
			}
		}
		for i := range p.Spec.RemoteRead {
			rr := &p.Spec.RemoteRead[i]
			r.remote(rr.BasicAuth, rr.Authorization, rr.OAuth2, rr.TLSConfig, &rr.ProxyConfig)
		}
		if a := p.Spec.APIServerConfig; a != nil {
			r.remote(a.BasicAuth, a.Authorization, nil, a.TLSConfig, &a.ProxyConfig)
		}
		if tr := p.Spec.TracingConfig; tr != nil && tr.TLSConfig != nil {
			r.tls(&tr.TLSConfig.SafeTLSConfig)
		}
		if w := p.Spec.Web; w != nil && w.TLSConfig != nil {
			r.secretOrConfigMap(&w.TLSConfig.Cert)
			r.secret(&w.TLSConfig.KeySecret)
			r.secretOrConfigMap(&w.TLSConfig.ClientCA)
		}
	}
}

func (r refs) sigv4(s *monitoringv1.Sigv4) {
	if s != nil {
		r.secret(s.AccessKey)
		r.secret(s.SecretKey)
	}
}

// remote walks the HTTP client of a remote write or read endpoint.
func (r refs) remote(ba *monitoringv1.BasicAuth, a *monitoringv1.Authorization, o *monitoringv1.OAuth2, t *monitoringv1.TLSConfig, pc *monitoringv1.ProxyConfig) {
	var safe *monitoringv1.SafeAuthorization
	if a != nil {
		safe = &a.SafeAuthorization
	}
	var safeTLS *monitoringv1.SafeTLSConfig
	if t != nil {
		safeTLS = &t.SafeTLSConfig
	}
	r.sdHTTP(ba, safe, o, safeTLS, pc)
}

var (
	secretKeySelectorType    = reflect.TypeFor[corev1.SecretKeySelector]()
	configMapKeySelectorType = reflect.TypeFor[corev1.ConfigMapKeySelector]()
)

// discovery walks every Secret and ConfigMap key reference of a ScrapeConfig's discovery
// configs: the credentials, OAuth2, TLS and proxy headers of every mechanism. Walking the
// types rather than naming each mechanism's fields keeps the list whole for two dozen
// mechanisms and those a later API adds; a reference Generate ends up not reading (the one
// key of an incomplete AWS key pair) costs one read of a Secret.
func (r refs) discovery(spec *monitoringv1alpha1.ScrapeConfigSpec) {
	v := reflect.ValueOf(spec).Elem()
	t := v.Type()
	for i := range t.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Slice && f.Len() > 0 && strings.HasSuffix(t.Field(i).Name, "SDConfigs") {
			r.walk(f)
		}
	}
}

func (r refs) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			r.walk(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			r.walk(v.Index(i))
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			r.walk(it.Value())
		}
	case reflect.Struct:
		switch v.Type() {
		case secretKeySelectorType:
			sel := v.Interface().(corev1.SecretKeySelector)
			r.secret(&sel)
		case configMapKeySelectorType:
			if r.v.configMap != nil {
				sel := v.Interface().(corev1.ConfigMapKeySelector)
				r.v.configMap(r.ns, &sel)
			}
		default:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					r.walk(v.Field(i))
				}
			}
		}
	}
}
