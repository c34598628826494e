package scrape

import (
	"strings"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// Discovery of the containers of a Docker engine and the services, tasks or nodes of a Docker
// Swarm, through the engine's API at the host the ScrapeConfig names.

// dockerSDConfig is one docker_sd_configs entry.
type dockerSDConfig struct {
	Host               string     `yaml:"host"`
	HostNetworkingHost string     `yaml:"host_networking_host,omitempty"`
	MatchFirstNetwork  *bool      `yaml:"match_first_network,omitempty"`
	Filters            []sdFilter `yaml:"filters,omitempty"`
	Shared             sdShared   `yaml:",inline"`
}

// docker renders one Docker discovery config. As with the existing operator, matchFirstNetwork
// is left out with a warning before Prometheus v2.54.1.
func (s *sdContext) docker(field string, c *monitoringv1alpha1.DockerSDConfig) (dockerSDConfig, *rejection) {
	if rej := dockerHost(field+".host", c.Host); rej != nil {
		return dockerSDConfig{}, rej
	}
	out := dockerSDConfig{
		Host:               c.Host,
		HostNetworkingHost: deref(c.HostNetworkingHost),
		MatchFirstNetwork:  c.MatchFirstNetwork,
		Filters:            sdFilters(c.Filters),
	}
	var rej *rejection
	if out.Shared, rej = s.shared(field, c); rej != nil {
		return dockerSDConfig{}, rej
	}
	s.drop(field+".matchFirstNetwork", sdVersion{2, 54, 1}, out.MatchFirstNetwork != nil, func() { out.MatchFirstNetwork = nil })
	return out, nil
}

// dockerSwarmSDConfig is one dockerswarm_sd_configs entry.
type dockerSwarmSDConfig struct {
	Host    string     `yaml:"host"`
	Role    string     `yaml:"role"`
	Filters []sdFilter `yaml:"filters,omitempty"`
	Shared  sdShared   `yaml:",inline"`
}

func (s *sdContext) dockerSwarm(field string, c *monitoringv1alpha1.DockerSwarmSDConfig) (dockerSwarmSDConfig, *rejection) {
	if rej := dockerHost(field+".host", c.Host); rej != nil {
		return dockerSwarmSDConfig{}, rej
	}
	out := dockerSwarmSDConfig{Host: c.Host, Role: strings.ToLower(string(c.Role)), Filters: sdFilters(c.Filters)}
	var rej *rejection
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// dockerHost checks the address of a Docker engine as the API's pattern does: a scheme, "://"
// and the rest (unix:///var/run/docker.sock, tcp://docker:2375).
func dockerHost(field, host string) *rejection {
	if scheme, rest, ok := strings.Cut(host, "://"); !ok || scheme == "" || rest == "" {
		return reject(ReasonInvalidConfig, "%s: %q is not the address of a Docker engine (like unix:///var/run/docker.sock or tcp://docker:2375)", field, host)
	}
	return nil
}
