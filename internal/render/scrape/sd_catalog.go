package scrape

import (
	"net/url"
	"strings"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// Discovery through a service catalog or registry the ScrapeConfig names: Consul, Nomad,
// Eureka, Kuma's control plane and PuppetDB.

// consulSDConfig is one consul_sd_configs entry.
type consulSDConfig struct {
	Server       string            `yaml:"server"`
	PathPrefix   string            `yaml:"path_prefix,omitempty"`
	Token        string            `yaml:"token,omitempty"`
	Datacenter   string            `yaml:"datacenter,omitempty"`
	Namespace    string            `yaml:"namespace,omitempty"`
	Partition    string            `yaml:"partition,omitempty"`
	Scheme       string            `yaml:"scheme,omitempty"`
	Services     []string          `yaml:"services,omitempty"`
	Tags         []string          `yaml:"tags,omitempty"`
	TagSeparator *string           `yaml:"tag_separator,omitempty"`
	NodeMeta     map[string]string `yaml:"node_meta,omitempty"`
	Filter       string            `yaml:"filter,omitempty"`
	HealthFilter string            `yaml:"health_filter,omitempty"`
	AllowStale   *bool             `yaml:"allow_stale,omitempty"`
	Shared       sdShared          `yaml:",inline"`
}

// consul renders one Consul discovery config. A field the version does not know refuses the
// ScrapeConfig, as with the existing operator: left out, a filter would discover more than
// asked. healthFilter came with Prometheus v3.11.2.
func (s *sdContext) consul(field string, c *monitoringv1alpha1.ConsulSDConfig) (consulSDConfig, *rejection) {
	if c.Server == "" {
		return consulSDConfig{}, reject(ReasonInvalidConfig, "%s.server: the server is required", field)
	}
	for _, n := range []struct {
		name string
		v    sdVersion
		set  bool
	}{
		{"pathPrefix", sdVersion{2, 45, 0}, c.PathPrefix != nil},
		{"namespace", sdVersion{2, 28, 0}, c.Namespace != nil},
		{"filter", sdVersion{3, 0, 0}, c.Filter != nil},
		{"healthFilter", sdVersion{3, 11, 2}, c.HealthFilter != nil},
	} {
		if rej := s.need(field+"."+n.name, n.v, n.set); rej != nil {
			return consulSDConfig{}, rej
		}
	}
	out := consulSDConfig{
		Server:       c.Server,
		PathPrefix:   deref(c.PathPrefix),
		Datacenter:   deref(c.Datacenter),
		Namespace:    deref(c.Namespace),
		Partition:    deref(c.Partition),
		Services:     c.Services,
		Tags:         c.Tags,
		TagSeparator: c.TagSeparator,
		NodeMeta:     c.NodeMeta,
		Filter:       deref(c.Filter),
		HealthFilter: deref(c.HealthFilter),
		AllowStale:   c.AllowStale,
	}
	var rej *rejection
	if out.Scheme, rej = schemeOf(field+".scheme", c.Scheme); rej != nil {
		return consulSDConfig{}, rej
	}
	if out.Token, rej = s.secret(field+".tokenRef", c.TokenRef); rej != nil {
		return consulSDConfig{}, rej
	}
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// nomadSDConfig is one nomad_sd_configs entry.
type nomadSDConfig struct {
	Server       string   `yaml:"server"`
	Namespace    string   `yaml:"namespace,omitempty"`
	Region       string   `yaml:"region,omitempty"`
	TagSeparator *string  `yaml:"tag_separator,omitempty"`
	AllowStale   *bool    `yaml:"allow_stale,omitempty"`
	Shared       sdShared `yaml:",inline"`
}

func (s *sdContext) nomad(field string, c *monitoringv1alpha1.NomadSDConfig) (nomadSDConfig, *rejection) {
	if strings.TrimSpace(string(c.Server)) == "" {
		return nomadSDConfig{}, reject(ReasonInvalidConfig, "%s.server: the server address is required", field)
	}
	out := nomadSDConfig{
		Server:       string(c.Server),
		Namespace:    deref(c.Namespace),
		Region:       deref(c.Region),
		TagSeparator: c.TagSeparator,
		AllowStale:   c.AllowStale,
	}
	var rej *rejection
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// eurekaSDConfig is one eureka_sd_configs entry.
type eurekaSDConfig struct {
	Server string   `yaml:"server"`
	Shared sdShared `yaml:",inline"`
}

func (s *sdContext) eureka(field string, c *monitoringv1alpha1.EurekaSDConfig) (eurekaSDConfig, *rejection) {
	if rej := serverURL(field+".server", string(c.Server)); rej != nil {
		return eurekaSDConfig{}, rej
	}
	out := eurekaSDConfig{Server: string(c.Server)}
	var rej *rejection
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// kumaSDConfig is one kuma_sd_configs entry: the monitoring assignments of Kuma's control plane.
type kumaSDConfig struct {
	Server       string   `yaml:"server"`
	ClientID     string   `yaml:"client_id,omitempty"`
	FetchTimeout string   `yaml:"fetch_timeout,omitempty"`
	Shared       sdShared `yaml:",inline"`
}

func (s *sdContext) kuma(field string, c *monitoringv1alpha1.KumaSDConfig) (kumaSDConfig, *rejection) {
	if rej := serverURL(field+".server", string(c.Server)); rej != nil {
		return kumaSDConfig{}, rej
	}
	out := kumaSDConfig{Server: string(c.Server), ClientID: deref(c.ClientID)}
	var rej *rejection
	if out.FetchTimeout, rej = optionalDuration(field+".fetchTimeout", c.FetchTimeout); rej != nil {
		return kumaSDConfig{}, rej
	}
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// puppetDBSDConfig is one puppetdb_sd_configs entry.
type puppetDBSDConfig struct {
	URL               string   `yaml:"url"`
	Query             string   `yaml:"query"`
	IncludeParameters *bool    `yaml:"include_parameters,omitempty"`
	Shared            sdShared `yaml:",inline"`
}

func (s *sdContext) puppetDB(field string, c *monitoringv1alpha1.PuppetDBSDConfig) (puppetDBSDConfig, *rejection) {
	// As the existing operator checks it: an http(s) URL with a host.
	if rej := httpSDURL(field+".url", string(c.URL)); rej != nil {
		return puppetDBSDConfig{}, rej
	}
	if c.Query == "" {
		return puppetDBSDConfig{}, reject(ReasonInvalidConfig, "%s.query: the query is required", field)
	}
	out := puppetDBSDConfig{URL: string(c.URL), Query: c.Query, IncludeParameters: c.IncludeParameters}
	var rej *rejection
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// serverURL checks the URL of a discovery server the way Prometheus's loader needs it (a
// scheme and a host), to name the field.
func serverURL(field, raw string) *rejection {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return reject(ReasonInvalidConfig, "%s: the server URL is required", field)
	case err != nil:
		return reject(ReasonInvalidConfig, "%s: %v", field, err)
	case u.Scheme == "" || u.Host == "":
		return reject(ReasonInvalidConfig, "%s: %q needs a scheme and a host", field, raw)
	}
	return nil
}
