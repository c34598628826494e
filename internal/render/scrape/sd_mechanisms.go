package scrape

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// The discovery mechanisms of a ScrapeConfig beyond static, file, HTTP, Kubernetes and DNS
// discovery, one file per family: service catalogs (sd_catalog.go), AWS (sd_aws.go), Azure,
// GCE and OpenStack (sd_cloud.go), hosting providers (sd_hosting.go) and Docker
// (sd_docker.go). Each is written with the existing operator's keys; its credentials are read
// from Secrets of the ScrapeConfig's namespace and inlined, through the same code as every
// other credential of the config; what the Prometheus version does not know is refused or left
// out as the existing operator does.

// sdContext renders the discovery configs of one ScrapeConfig: its Secrets are read in ns,
// and what the version leaves out becomes the warning of job's ScrapeConfig.
type sdContext struct {
	g   *generator
	ns  string
	job *scrapeJob
}

// sdMechanisms writes the ScrapeConfig's discovery configs of every mechanism but static, file,
// HTTP, Kubernetes and DNS into job, in the order of the API's fields.
func (g *generator) sdMechanisms(job *scrapeJob, ns string, spec *monitoringv1alpha1.ScrapeConfigSpec) *rejection {
	s := &sdContext{g: g, ns: ns, job: job}
	var rej *rejection
	if job.ConsulSDConfigs, rej = sdEach(s, "consulSDConfigs", spec.ConsulSDConfigs, s.consul); rej != nil {
		return rej
	}
	if job.EC2SDConfigs, rej = sdEach(s, "ec2SDConfigs", spec.EC2SDConfigs, s.ec2); rej != nil {
		return rej
	}
	if job.AzureSDConfigs, rej = sdEach(s, "azureSDConfigs", spec.AzureSDConfigs, s.azure); rej != nil {
		return rej
	}
	if job.GCESDConfigs, rej = sdEach(s, "gceSDConfigs", spec.GCESDConfigs, s.gce); rej != nil {
		return rej
	}
	if job.OpenStackSDConfigs, rej = sdEach(s, "openstackSDConfigs", spec.OpenStackSDConfigs, s.openstack); rej != nil {
		return rej
	}
	if job.DigitalOceanSDConfigs, rej = sdEach(s, "digitalOceanSDConfigs", spec.DigitalOceanSDConfigs, s.digitalOcean); rej != nil {
		return rej
	}
	if job.KumaSDConfigs, rej = sdEach(s, "kumaSDConfigs", spec.KumaSDConfigs, s.kuma); rej != nil {
		return rej
	}
	if job.EurekaSDConfigs, rej = sdEach(s, "eurekaSDConfigs", spec.EurekaSDConfigs, s.eureka); rej != nil {
		return rej
	}
	if job.DockerSDConfigs, rej = sdEach(s, "dockerSDConfigs", spec.DockerSDConfigs, s.docker); rej != nil {
		return rej
	}
	if job.LinodeSDConfigs, rej = sdEach(s, "linodeSDConfigs", spec.LinodeSDConfigs, s.linode); rej != nil {
		return rej
	}
	if job.HetznerSDConfigs, rej = sdEach(s, "hetznerSDConfigs", spec.HetznerSDConfigs, s.hetzner); rej != nil {
		return rej
	}
	if job.NomadSDConfigs, rej = sdEach(s, "nomadSDConfigs", spec.NomadSDConfigs, s.nomad); rej != nil {
		return rej
	}
	if job.DockerSwarmSDConfigs, rej = sdEach(s, "dockerSwarmSDConfigs", spec.DockerSwarmSDConfigs, s.dockerSwarm); rej != nil {
		return rej
	}
	if job.PuppetDBSDConfigs, rej = sdEach(s, "puppetDBSDConfigs", spec.PuppetDBSDConfigs, s.puppetDB); rej != nil {
		return rej
	}
	if job.LightSailSDConfigs, rej = sdEach(s, "lightSailSDConfigs", spec.LightSailSDConfigs, s.lightsail); rej != nil {
		return rej
	}
	if job.OVHCloudSDConfigs, rej = sdEach(s, "ovhcloudSDConfigs", spec.OVHCloudSDConfigs, s.ovhcloud); rej != nil {
		return rej
	}
	if job.ScalewaySDConfigs, rej = sdEach(s, "scalewaySDConfigs", spec.ScalewaySDConfigs, s.scaleway); rej != nil {
		return rej
	}
	if job.IonosSDConfigs, rej = sdEach(s, "ionosSDConfigs", spec.IonosSDConfigs, s.ionos); rej != nil {
		return rej
	}
	return nil
}

// sdSince are the mechanisms the existing operator refuses on a Prometheus older than the
// release that added them, by the API's field name; as with it, the others are not checked.
var sdSince = map[string]sdVersion{
	"digitalOceanSDConfigs": {2, 20, 0},
	"dockerSwarmSDConfigs":  {2, 20, 0},
	"scalewaySDConfigs":     {2, 26, 0},
	"lightSailSDConfigs":    {2, 27, 0},
	"linodeSDConfigs":       {2, 28, 0},
	"puppetDBSDConfigs":     {2, 31, 0},
	"ionosSDConfigs":        {2, 36, 0},
	"ovhcloudSDConfigs":     {2, 40, 0},
	"kumaSDConfigs":         {2, 50, 0},
}

// sdEach renders every entry of one discovery field with render, which gets the entry's path
// (consulSDConfigs[0]) to name in its rejections.
func sdEach[In, Out any](s *sdContext, field string, in []In, render func(field string, c *In) (Out, *rejection)) ([]Out, *rejection) {
	if len(in) == 0 {
		return nil, nil
	}
	if rej := s.need(field, sdSince[field], true); rej != nil {
		return nil, rej
	}
	out := make([]Out, 0, len(in))
	for i := range in {
		o, rej := render(fmt.Sprintf("%s[%d]", field, i), &in[i])
		if rej != nil {
			return nil, rej
		}
		out = append(out, o)
	}
	return out, nil
}

// sdVersion is the Prometheus release that added a mechanism or one of its fields; the zero
// value is every release.
type sdVersion struct{ major, minor, patch int }

func (v sdVersion) String() string {
	if v.patch == 0 {
		return fmt.Sprintf("v%d.%d", v.major, v.minor)
	}
	return fmt.Sprintf("v%d.%d.%d", v.major, v.minor, v.patch)
}

// knows says whether the Prometheus version is v or later. A version that does not parse
// gates nothing: the Prometheus's own renderer refuses it by name.
func (s *sdContext) knows(v sdVersion) bool {
	if !s.g.versionKnown || v == (sdVersion{}) {
		return true
	}
	pv := s.g.version
	return cmp.Or(cmp.Compare(pv.Major, v.major), cmp.Compare(pv.Minor, v.minor), cmp.Compare(pv.Patch, v.patch)) >= 0
}

// need refuses the ScrapeConfig when field is set and the version does not know it, where the
// existing operator refuses it: left out, the discovery would find other targets than asked
// (a filter, a resource group), or none (an authentication method, a role).
func (s *sdContext) need(field string, v sdVersion, set bool) *rejection {
	if !set || s.knows(v) {
		return nil
	}
	return reject(ReasonUnsupported, "%s: needs Prometheus %s or later, this one is %s", field, v, s.g.version.Tag())
}

// drop leaves field out (calling clear) when it is set and the version does not know it, where
// the existing operator leaves it out; the ScrapeConfig is accepted with a warning naming it.
func (s *sdContext) drop(field string, v sdVersion, set bool, clear func()) {
	if !set || s.knows(v) {
		return
	}
	clear()
	if s.g.dropped != nil {
		*s.g.dropped = append(*s.g.dropped, fmt.Sprintf("%s: %s (needs %s)", s.job.JobName, field, v))
	}
}

// sdShared is what most discovery configs share, inlined into each: the port of the targets,
// the refresh interval and the HTTP client the mechanism's API is called with.
type sdShared struct {
	Port            *int32           `yaml:"port,omitempty"`
	RefreshInterval string           `yaml:"refresh_interval,omitempty"`
	HTTPClient      httpClientConfig `yaml:",inline"`
}

// shared renders the port, refresh interval and HTTP client of c, a pointer to a discovery
// config of the API. Every mechanism names these fields alike (port, refreshInterval,
// basicAuth, authorization, oauth2, the inlined proxy settings, tlsConfig, followRedirects,
// enableHTTP2), each having those it has, so they are read by name: one path for two dozen
// types, through the code every other HTTP client of the config goes through.
// TestScrapeConfigFieldsAreAllHandled pins the names.
func (s *sdContext) shared(field string, c any) (sdShared, *rejection) {
	v := reflect.ValueOf(c).Elem()
	var out sdShared
	var rej *rejection
	if out.RefreshInterval, rej = refreshInterval(field, fieldByName[monitoringv1.Duration](v, "RefreshInterval")); rej != nil {
		return sdShared{}, rej
	}
	if out.Port = fieldByName[int32](v, "Port"); out.Port != nil && (*out.Port < 0 || *out.Port > 65535) {
		return sdShared{}, reject(ReasonInvalidPort, "%s.port: %d is not a port number between 0 and 65535", field, *out.Port)
	}
	in := sdHTTP{
		basicAuth:       fieldByName[monitoringv1.BasicAuth](v, "BasicAuth"),
		authorization:   fieldByName[monitoringv1.SafeAuthorization](v, "Authorization"),
		oauth2:          fieldByName[monitoringv1.OAuth2](v, "OAuth2"),
		proxy:           fieldByName[monitoringv1.ProxyConfig](v, "ProxyConfig"),
		tls:             fieldByName[monitoringv1.SafeTLSConfig](v, "TLSConfig"),
		followRedirects: fieldByName[bool](v, "FollowRedirects"),
		enableHTTP2:     cmp.Or(fieldByName[bool](v, "EnableHTTP2"), fieldByName[bool](v, "EnableHttp2")), // Consul's spelling
	}
	if in.proxy == nil {
		in.proxy = &monitoringv1.ProxyConfig{}
	}
	if out.HTTPClient, rej = s.g.sdHTTPClient(s.ns, field, in); rej != nil {
		return sdShared{}, rej
	}
	return out, nil
}

// fieldByName is the field name of the struct v, a *T or a T (taken by address: IONOS's
// authorization is a value), when it is set; nil when v has no such field or it is unset. A
// field of that name and another type is a bug of this package, which every test rendering
// the type finds, whatever its value.
func fieldByName[T any](v reflect.Value, name string) *T {
	f := v.FieldByName(name)
	if !f.IsValid() {
		return nil
	}
	switch f.Type() {
	case reflect.TypeFor[*T]():
		return f.Interface().(*T)
	case reflect.TypeFor[T]():
		if f.IsZero() {
			return nil
		}
		return f.Addr().Interface().(*T)
	}
	panic(fmt.Sprintf("scrape: %s.%s is a %s, not a %s", v.Type(), name, f.Type(), reflect.TypeFor[T]()))
}

// secret reads one credential of a discovery config from a Secret of the ScrapeConfig's
// namespace; it is empty when sel is nil.
func (s *sdContext) secret(field string, sel *corev1.SecretKeySelector) (string, *rejection) {
	if sel == nil {
		return "", nil
	}
	return s.g.secretValue(s.ns, field, sel)
}

// sdFilter is one filter of the EC2, Docker and Docker Swarm APIs' listings.
type sdFilter struct {
	Name   string   `yaml:"name"`
	Values []string `yaml:"values"`
}

// sdFilters are the API's filters sorted by name, as the existing operator writes them.
func sdFilters(in monitoringv1alpha1.Filters) []sdFilter {
	if len(in) == 0 {
		return nil
	}
	out := make([]sdFilter, 0, len(in))
	for _, f := range in {
		out = append(out, sdFilter{Name: f.Name, Values: f.Values})
	}
	slices.SortStableFunc(out, func(a, b sdFilter) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// deref is the value p points at, empty when p is nil.
func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}
