package scrape

import (
	"go.yaml.in/yaml/v2"

	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// apiServerSD renders spec.apiserverConfig as the start of every kubernetes_sd_configs entry
// the generator writes for monitors and alertmanagers: the API server to discover in and the
// credentials to use there. Unset, the entries have neither and Prometheus uses the in-cluster
// API server with its service account. ScrapeConfigs name their own API server and are left
// as they are.
func (g *generator) apiServerSD() (kubernetesSDConfig, *workload.SpecError) {
	a := g.prom.Spec.APIServerConfig
	if a == nil {
		return kubernetesSDConfig{}, nil
	}
	const field = "spec.apiserverConfig"
	if a.Host == "" {
		return kubernetesSDConfig{}, workload.Invalid(field+".host", "is required")
	}
	if rej := exclusive(field, []namedSet{{"basicAuth", a.BasicAuth != nil}, {"authorization", a.Authorization != nil},
		{"bearerToken", a.BearerToken != ""}, {"bearerTokenFile", a.BearerTokenFile != ""}}); rej != nil {
		return kubernetesSDConfig{}, &workload.SpecError{Field: field, Reason: workload.ReasonInvalidSpec, Message: rej.message}
	}
	v, err := promrender.ParsedVersion(g.prom)
	if err != nil {
		return kubernetesSDConfig{}, workload.Invalid("spec.version", "%v", err)
	}
	hc, rej := g.remoteClient(field, v, remoteClientSpec{basicAuth: a.BasicAuth, authorization: a.Authorization,
		tls: a.TLSConfig, proxy: &a.ProxyConfig})
	if rej != nil {
		return kubernetesSDConfig{}, rejectionSpecError(field, rej)
	}
	out := kubernetesSDConfig{APIServer: a.Host, HTTPClient: hc.HTTP}
	// The deprecated token fields are what authorization with type Bearer is; a discovery
	// config writes them that way.
	switch {
	case a.BearerToken != "":
		out.HTTPClient.Authorization = &authorization{Type: "Bearer", Credentials: a.BearerToken}
	case a.BearerTokenFile != "":
		out.HTTPClient.Authorization = &authorization{Type: "Bearer", CredentialsFile: a.BearerTokenFile}
	}
	return out, nil
}

// apiServerFrom sets g.apiServer and g.apiServerYAML from the spec.
func (g *generator) apiServerFrom() *workload.SpecError {
	sd, se := g.apiServerSD()
	if se != nil {
		return se
	}
	g.apiServer = sd
	if g.prom.Spec.APIServerConfig != nil {
		// Credentials read from Secrets are not in the spec: the cache key must see them.
		b, err := yaml.Marshal(&sd)
		if err != nil {
			return workload.Invalid("spec.apiserverConfig", "cannot be encoded: %v", err)
		}
		g.apiServerYAML = b
	}
	return nil
}

// kubernetesSD is a kubernetes_sd_configs entry for a role and namespaces, on the API server
// of spec.apiserverConfig when it is set.
func (g *generator) kubernetesSD(role string, ns *sdNamespaces) kubernetesSDConfig {
	sd := g.apiServer
	sd.Role, sd.Namespaces = role, ns
	return sd
}
