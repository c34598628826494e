package scrape

import (
	"strings"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// Discovery of a hosting provider's servers: DigitalOcean, Hetzner, Linode, Scaleway, OVHcloud
// and IONOS. Most sign in with a bearer token (authorization) read from a Secret.

// digitalOceanSDConfig is one digitalocean_sd_configs entry.
type digitalOceanSDConfig struct {
	Shared sdShared `yaml:",inline"`
}

func (s *sdContext) digitalOcean(field string, c *monitoringv1alpha1.DigitalOceanSDConfig) (digitalOceanSDConfig, *rejection) {
	var out digitalOceanSDConfig
	var rej *rejection
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// hetznerSDConfig is one hetzner_sd_configs entry.
type hetznerSDConfig struct {
	Role          string   `yaml:"role"`
	LabelSelector string   `yaml:"label_selector,omitempty"`
	Shared        sdShared `yaml:",inline"`
}

// hetzner renders one Hetzner discovery config. Its label selector (Prometheus v3.5) refuses
// the ScrapeConfig on an older Prometheus, like Consul's filter: left out, discovery would find
// every server of the project.
func (s *sdContext) hetzner(field string, c *monitoringv1alpha1.HetznerSDConfig) (hetznerSDConfig, *rejection) {
	if rej := s.need(field+".labelSelector", sdVersion{3, 5, 0}, c.LabelSelector != nil); rej != nil {
		return hetznerSDConfig{}, rej
	}
	out := hetznerSDConfig{Role: strings.ToLower(string(c.Role)), LabelSelector: deref(c.LabelSelector)}
	var rej *rejection
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// linodeSDConfig is one linode_sd_configs entry.
type linodeSDConfig struct {
	Region       string   `yaml:"region,omitempty"`
	TagSeparator *string  `yaml:"tag_separator,omitempty"`
	Shared       sdShared `yaml:",inline"`
}

func (s *sdContext) linode(field string, c *monitoringv1alpha1.LinodeSDConfig) (linodeSDConfig, *rejection) {
	out := linodeSDConfig{Region: deref(c.Region), TagSeparator: c.TagSeparator}
	var rej *rejection
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// scalewaySDConfig is one scaleway_sd_configs entry.
type scalewaySDConfig struct {
	AccessKey  string   `yaml:"access_key"`
	SecretKey  string   `yaml:"secret_key"`
	ProjectID  string   `yaml:"project_id"`
	Role       string   `yaml:"role"`
	APIURL     string   `yaml:"api_url,omitempty"`
	Zone       string   `yaml:"zone,omitempty"`
	NameFilter string   `yaml:"name_filter,omitempty"`
	TagsFilter []string `yaml:"tags_filter,omitempty"`
	Shared     sdShared `yaml:",inline"`
}

func (s *sdContext) scaleway(field string, c *monitoringv1alpha1.ScalewaySDConfig) (scalewaySDConfig, *rejection) {
	if c.AccessKey == "" || c.ProjectID == "" {
		return scalewaySDConfig{}, reject(ReasonInvalidConfig, "%s: accessKey and projectID are required", field)
	}
	out := scalewaySDConfig{
		AccessKey:  c.AccessKey,
		ProjectID:  c.ProjectID,
		Role:       strings.ToLower(string(c.Role)),
		APIURL:     deref(c.ApiURL),
		Zone:       deref(c.Zone),
		NameFilter: deref(c.NameFilter),
		TagsFilter: c.TagsFilter,
	}
	var rej *rejection
	if out.SecretKey, rej = s.secret(field+".secretKey", &c.SecretKey); rej != nil {
		return scalewaySDConfig{}, rej
	}
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// ovhServices are Prometheus's names of the API's OVHcloud services.
var ovhServices = map[monitoringv1alpha1.OVHService]string{
	monitoringv1alpha1.OVHServiceVPS:             "vps",
	monitoringv1alpha1.OVHServiceDedicatedServer: "dedicated_server",
}

// ovhcloudSDConfig is one ovhcloud_sd_configs entry. It has no HTTP client settings.
type ovhcloudSDConfig struct {
	ApplicationKey    string   `yaml:"application_key"`
	ApplicationSecret string   `yaml:"application_secret"`
	ConsumerKey       string   `yaml:"consumer_key"`
	Service           string   `yaml:"service"`
	Endpoint          string   `yaml:"endpoint,omitempty"`
	Shared            sdShared `yaml:",inline"`
}

// ovhcloud renders one OVHcloud discovery config. An unknown service is refused: the existing
// operator leaves it out with a log line, and Prometheus then refuses the whole config.
func (s *sdContext) ovhcloud(field string, c *monitoringv1alpha1.OVHCloudSDConfig) (ovhcloudSDConfig, *rejection) {
	service, ok := ovhServices[c.Service]
	if !ok {
		return ovhcloudSDConfig{}, reject(ReasonInvalidConfig, "%s.service: unknown service %q (want VPS or DedicatedServer)", field, c.Service)
	}
	if c.ApplicationKey == "" {
		return ovhcloudSDConfig{}, reject(ReasonInvalidConfig, "%s.applicationKey: the application key is required", field)
	}
	out := ovhcloudSDConfig{ApplicationKey: c.ApplicationKey, Service: service, Endpoint: deref(c.Endpoint)}
	var rej *rejection
	if out.ApplicationSecret, rej = s.secret(field+".applicationSecret", &c.ApplicationSecret); rej != nil {
		return ovhcloudSDConfig{}, rej
	}
	if out.ConsumerKey, rej = s.secret(field+".consumerKey", &c.ConsumerKey); rej != nil {
		return ovhcloudSDConfig{}, rej
	}
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// ionosSDConfig is one ionos_sd_configs entry.
type ionosSDConfig struct {
	DatacenterID string   `yaml:"datacenter_id"`
	Shared       sdShared `yaml:",inline"`
}

func (s *sdContext) ionos(field string, c *monitoringv1alpha1.IonosSDConfig) (ionosSDConfig, *rejection) {
	if c.DataCenterID == "" {
		return ionosSDConfig{}, reject(ReasonInvalidConfig, "%s.datacenterID: the data center is required", field)
	}
	out := ionosSDConfig{DatacenterID: c.DataCenterID}
	var rej *rejection
	out.Shared, rej = s.shared(field, c)
	return out, rej
}
