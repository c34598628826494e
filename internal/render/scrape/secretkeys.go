package scrape

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
)

// SecretKeys returns the "namespace/name" of every Secret Generate may read for in, sorted and
// unique: those referenced by the monitors of every kind (credentials, OAuth2, TLS, proxy
// headers), looked up in each monitor's namespace, and those of the Prometheus's scrape class
// authorizations, looked up in the Prometheus's. The caller fetches them into Input.Secrets.
func SecretKeys(in Input) []string {
	keys := map[string]struct{}{}
	add := func(ns string, sel *corev1.SecretKeySelector) {
		if sel != nil && sel.Name != "" {
			keys[ns+"/"+sel.Name] = struct{}{}
		}
	}
	addProxy := func(ns string, pc *monitoringv1.ProxyConfig) {
		for _, sels := range pc.ProxyConnectHeader {
			for i := range sels {
				add(ns, &sels[i])
			}
		}
	}
	addTLS := func(ns string, t *monitoringv1.SafeTLSConfig) {
		if t == nil {
			return
		}
		add(ns, t.CA.Secret)
		add(ns, t.Cert.Secret)
		add(ns, t.KeySecret)
	}
	addHTTP := func(ns string, hc *monitoringv1.HTTPConfigWithoutTLS) {
		if hc.BasicAuth != nil {
			add(ns, &hc.BasicAuth.Username)
			add(ns, &hc.BasicAuth.Password)
		}
		if hc.Authorization != nil {
			add(ns, hc.Authorization.Credentials)
		}
		add(ns, hc.BearerTokenSecret)
		if o := hc.OAuth2; o != nil {
			add(ns, o.ClientID.Secret)
			add(ns, &o.ClientSecret)
			addTLS(ns, o.TLSConfig)
			addProxy(ns, &o.ProxyConfig)
		}
	}

	for _, sm := range in.ServiceMonitors {
		if sm == nil {
			continue
		}
		for i := range sm.Spec.Endpoints {
			ep := &sm.Spec.Endpoints[i]
			addHTTP(sm.Namespace, &ep.HTTPConfigWithoutTLS)
			if ep.TLSConfig != nil {
				addTLS(sm.Namespace, &ep.TLSConfig.SafeTLSConfig)
			}
			addProxy(sm.Namespace, &ep.ProxyConfig)
		}
	}
	for _, pm := range in.PodMonitors {
		if pm == nil {
			continue
		}
		for i := range pm.Spec.PodMetricsEndpoints {
			ep := &pm.Spec.PodMetricsEndpoints[i]
			addHTTP(pm.Namespace, &ep.HTTPConfigWithoutTLS)
			addTLS(pm.Namespace, ep.TLSConfig)
			addProxy(pm.Namespace, &ep.ProxyConfig)
		}
	}
	for _, p := range in.Probes {
		if p == nil {
			continue
		}
		spec := &p.Spec
		addHTTP(p.Namespace, &spec.HTTPConfigWithoutTLS)
		if spec.Authorization != nil {
			add(p.Namespace, spec.Authorization.Credentials)
		}
		addTLS(p.Namespace, spec.TLSConfig)
		addProxy(p.Namespace, &spec.ProberSpec.ProxyConfig)
	}
	if p := in.Prometheus; p != nil {
		for i := range p.Spec.ScrapeClasses {
			if a := p.Spec.ScrapeClasses[i].Authorization; a != nil {
				add(p.Namespace, a.Credentials)
			}
		}
	}
	return sortedKeys(keys)
}
