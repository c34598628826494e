package scrape

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	promcfg "github.com/prometheus/common/config"
	promdiscovery "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/aws"
	"github.com/prometheus/prometheus/discovery/azure"
	"github.com/prometheus/prometheus/discovery/consul"
	"github.com/prometheus/prometheus/discovery/digitalocean"
	"github.com/prometheus/prometheus/discovery/eureka"
	"github.com/prometheus/prometheus/discovery/gce"
	"github.com/prometheus/prometheus/discovery/hetzner"
	"github.com/prometheus/prometheus/discovery/ionos"
	"github.com/prometheus/prometheus/discovery/linode"
	"github.com/prometheus/prometheus/discovery/moby"
	"github.com/prometheus/prometheus/discovery/nomad"
	"github.com/prometheus/prometheus/discovery/openstack"
	"github.com/prometheus/prometheus/discovery/ovhcloud"
	"github.com/prometheus/prometheus/discovery/puppetdb"
	"github.com/prometheus/prometheus/discovery/scaleway"
	"github.com/prometheus/prometheus/discovery/xds"
	corev1 "k8s.io/api/core/v1"
)

// sdCreds is the Secret every discovery case below reads its credentials from.
func sdCreds() map[string]string {
	return map[string]string{
		"token": "t0ken", "user": "alice", "password": "s3cret", "access": "AKIAEXAMPLE", "secret": "aws-s3cret",
		"client-secret": "azure-s3cret", "app-secret": "ovh-app-s3cret", "consumer": "ovh-consumer",
		"scw-secret": "8d6bd9a4-6a2b-4c1e-9a7e-2f0f3c6f1e01", // Scaleway's client wants a UUID
	}
}

// sdInput is a default Prometheus (at version, when set) with the ScrapeConfig default/sd whose
// spec set fills in (without static targets) and the Secret default/creds.
func sdInput(version string, set func(*monitoringv1alpha1.ScrapeConfigSpec)) Input {
	p := newPrometheus()
	p.Spec.Version = version
	return withScrapeConfigs(newInput(p, nil, newSecret("default", "creds", sdCreds())),
		newScrapeConfig("default", "sd", withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.StaticConfigs = nil
			set(s)
		})))
}

// loadedSD is the one discovery config of the ScrapeConfig default/sd as Prometheus's loader
// read the generated config.
func loadedSD(t *testing.T, res *Result) promdiscovery.Config {
	t.Helper()
	for _, j := range mustLoad(t, res.Config()).ScrapeConfigs {
		if j.JobName == "scrapeConfig/default/sd" {
			if len(j.ServiceDiscoveryConfigs) != 1 {
				t.Fatalf("discovery configs %+v, want one", j.ServiceDiscoveryConfigs)
			}
			return j.ServiceDiscoveryConfigs[0]
		}
	}
	t.Fatalf("no job scrapeConfig/default/sd in\n%s", res.Config())
	return nil
}

func bearer(key string) *monitoringv1.SafeAuthorization {
	return &monitoringv1.SafeAuthorization{Credentials: secretPtr("creds", key)}
}

func credsBasicAuth() *monitoringv1.BasicAuth {
	return &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")}
}

// authorized says whether hc carries the bearer token of sdCreds.
func authorized(hc promcfg.HTTPClientConfig) bool {
	return hc.Authorization != nil && hc.Authorization.Type == "Bearer" && string(hc.Authorization.Credentials) == "t0ken"
}

// sdCase is a ScrapeConfig of one discovery mechanism and what Prometheus's loader must make
// of it.
type sdCase struct {
	name   string
	object string // the ScrapeConfig's name in the golden file
	set    func(*monitoringv1alpha1.ScrapeConfigSpec)
	check  func(t *testing.T, c promdiscovery.Config)
}

// sdCases are one ScrapeConfig of each discovery mechanism but the five Lookout rendered first,
// with credentials from Secret default/creds.
func sdCases() []sdCase {
	refresh := ptr(monitoringv1.Duration("2m"))
	return []sdCase{
		{
			name:   "Consul with its ACL token, filters and basic auth",
			object: "consul",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.ConsulSDConfigs = []monitoringv1alpha1.ConsulSDConfig{{
					Server: "consul.service:8500", PathPrefix: ptr("/consul"), TokenRef: secretPtr("creds", "token"), Datacenter: ptr("dc1"),
					Namespace: ptr("team-a"), Partition: ptr("p1"), Scheme: ptr(monitoringv1.SchemeHTTPS), Services: []string{"web", "api"},
					Tags: []string{"prod"}, TagSeparator: ptr(";"), NodeMeta: map[string]string{"rack": "a"}, Filter: ptr(`Service.Tags contains "metrics"`),
					HealthFilter: ptr(`Checks.Status == "passing"`), AllowStale: ptr(false), RefreshInterval: refresh, BasicAuth: credsBasicAuth(),
					FollowRedirects: ptr(false), EnableHttp2: ptr(false),
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				c, ok := dc.(*consul.SDConfig)
				if !ok || c.Server != "consul.service:8500" || c.PathPrefix != "/consul" || string(c.Token) != "t0ken" || c.Datacenter != "dc1" ||
					c.Namespace != "team-a" || c.Partition != "p1" || c.Scheme != "https" || len(c.Services) != 2 || c.ServiceTags[0] != "prod" ||
					c.TagSeparator != ";" || c.NodeMeta["rack"] != "a" || c.Filter == "" || c.HealthFilter == "" || c.AllowStale ||
					c.RefreshInterval.String() != "2m" || c.HTTPClientConfig.BasicAuth == nil || string(c.HTTPClientConfig.BasicAuth.Password) != "s3cret" ||
					c.HTTPClientConfig.FollowRedirects || c.HTTPClientConfig.EnableHTTP2 {
					t.Errorf("consul_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "EC2 with its access key pair, role and filters sorted by name",
			object: "ec2",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.EC2SDConfigs = []monitoringv1alpha1.EC2SDConfig{{
					Region: ptr("eu-west-1"), AccessKey: secretPtr("creds", "access"), SecretKey: secretPtr("creds", "secret"),
					RoleARN: ptr("arn:aws:iam::1:role/prom"), Port: ptr[int32](9100), RefreshInterval: refresh,
					Filters:     monitoringv1alpha1.Filters{{Name: "tag:env", Values: []string{"prod"}}, {Name: "instance-state-name", Values: []string{"running"}}},
					ProxyConfig: monitoringv1.ProxyConfig{ProxyURL: ptr("http://proxy.internal:3128")}, TLSConfig: &monitoringv1.SafeTLSConfig{InsecureSkipVerify: ptr(true)},
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				c, ok := dc.(*aws.EC2SDConfig)
				if !ok || c.Region != "eu-west-1" || c.AccessKey != "AKIAEXAMPLE" || string(c.SecretKey) != "aws-s3cret" || c.RoleARN != "arn:aws:iam::1:role/prom" ||
					c.Port != 9100 || len(c.Filters) != 2 || c.Filters[0].Name != "instance-state-name" || c.HTTPClientConfig.ProxyURL.String() != "http://proxy.internal:3128" ||
					!c.HTTPClientConfig.TLSConfig.InsecureSkipVerify {
					t.Errorf("ec2_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "Azure with its client secret",
			object: "azure",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.AzureSDConfigs = []monitoringv1alpha1.AzureSDConfig{{
					Environment: ptr("AzurePublicCloud"), AuthenticationMethod: ptr(monitoringv1alpha1.AuthMethodTypeOAuth), SubscriptionID: "sub-1",
					TenantID: ptr("tenant-1"), ClientID: ptr("client-1"), ClientSecret: secretPtr("creds", "client-secret"), ResourceGroup: ptr("rg"),
					Port: ptr[int32](9100), RefreshInterval: refresh,
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				c, ok := dc.(*azure.SDConfig)
				if !ok || c.Environment != "AzurePublicCloud" || c.AuthenticationMethod != "OAuth" || c.SubscriptionID != "sub-1" || c.TenantID != "tenant-1" ||
					c.ClientID != "client-1" || string(c.ClientSecret) != "azure-s3cret" || c.ResourceGroup != "rg" || c.Port != 9100 {
					t.Errorf("azure_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "GCE",
			object: "gce",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.GCESDConfigs = []monitoringv1alpha1.GCESDConfig{{Project: "proj", Zone: "europe-west1-b", Filter: ptr("labels.env = prod"), TagSeparator: ptr(";"), Port: ptr[int32](9100)}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				c, ok := dc.(*gce.SDConfig)
				if !ok || c.Project != "proj" || c.Zone != "europe-west1-b" || c.Filter != "labels.env = prod" || c.TagSeparator != ";" || c.Port != 9100 {
					t.Errorf("gce_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "OpenStack with its password and application credential, availability in lower case",
			object: "openstack",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.OpenStackSDConfigs = []monitoringv1alpha1.OpenStackSDConfig{{
					Role: monitoringv1alpha1.OpenStackRoleInstance, Region: "RegionOne", IdentityEndpoint: ptr(monitoringv1alpha1.URL("https://keystone.example.com:5000/v3")),
					Username: ptr("prom"), Password: secretPtr("creds", "password"), DomainName: ptr("default"), ProjectName: ptr("ops"),
					ApplicationCredentialID: ptr("app-1"), ApplicationCredentialSecret: secretPtr("creds", "token"),
					Availability: ptr(monitoringv1alpha1.OpenStackAvailabilityInternal), AllTenants: ptr(true), Port: ptr[int32](9100),
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				c, ok := dc.(*openstack.SDConfig)
				if !ok || c.Role != openstack.OpenStackRoleInstance || c.Region != "RegionOne" || c.Username != "prom" || string(c.Password) != "s3cret" ||
					string(c.ApplicationCredentialSecret) != "t0ken" || c.Availability != "internal" || !c.AllTenants || c.Port != 9100 {
					t.Errorf("openstack_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "DigitalOcean with its API token",
			object: "digitalocean",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.DigitalOceanSDConfigs = []monitoringv1alpha1.DigitalOceanSDConfig{{Authorization: bearer("token"), Port: ptr[int32](9100), RefreshInterval: refresh}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*digitalocean.SDConfig); !ok || !authorized(c.HTTPClientConfig) || c.Port != 9100 {
					t.Errorf("digitalocean_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "Kuma with its client ID and fetch timeout",
			object: "kuma",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.KumaSDConfigs = []monitoringv1alpha1.KumaSDConfig{{
					Server: "http://kuma-control-plane.kuma-system:5676", ClientID: ptr("prometheus-0"), FetchTimeout: ptr(monitoringv1.Duration("1m")),
					Authorization: bearer("token"),
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*xds.SDConfig); !ok || c.Server != "http://kuma-control-plane.kuma-system:5676" || c.ClientID != "prometheus-0" ||
					c.FetchTimeout.String() != "1m" || !authorized(c.HTTPClientConfig) {
					t.Errorf("kuma_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "Eureka with basic auth",
			object: "eureka",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.EurekaSDConfigs = []monitoringv1alpha1.EurekaSDConfig{{Server: "http://eureka.example.com:8761/eureka", BasicAuth: credsBasicAuth()}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*eureka.SDConfig); !ok || c.Server != "http://eureka.example.com:8761/eureka" || c.HTTPClientConfig.BasicAuth == nil ||
					c.HTTPClientConfig.BasicAuth.Username != "alice" || string(c.HTTPClientConfig.BasicAuth.Password) != "s3cret" {
					t.Errorf("eureka_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "Docker with filters and its engine's TLS client certificate",
			object: "docker",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.DockerSDConfigs = []monitoringv1alpha1.DockerSDConfig{{
					Host: "tcp://docker.example.com:2376", Port: ptr[int32](9100), HostNetworkingHost: ptr("docker.example.com"), MatchFirstNetwork: ptr(false),
					Filters:   monitoringv1alpha1.Filters{{Name: "label", Values: []string{"metrics=true"}}},
					TLSConfig: &monitoringv1.SafeTLSConfig{ServerName: ptr("docker.example.com")}, Authorization: bearer("token"),
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*moby.DockerSDConfig); !ok || c.Host != "tcp://docker.example.com:2376" || c.Port != 9100 || c.HostNetworkingHost != "docker.example.com" ||
					c.MatchFirstNetwork || len(c.Filters) != 1 || c.HTTPClientConfig.TLSConfig.ServerName != "docker.example.com" || !authorized(c.HTTPClientConfig) {
					t.Errorf("docker_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "Linode with its API token",
			object: "linode",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.LinodeSDConfigs = []monitoringv1alpha1.LinodeSDConfig{{Region: ptr("eu-central"), TagSeparator: ptr(";"), Authorization: bearer("token"), Port: ptr[int32](9100)}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*linode.SDConfig); !ok || c.Region != "eu-central" || c.TagSeparator != ";" || c.Port != 9100 || !authorized(c.HTTPClientConfig) {
					t.Errorf("linode_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "Hetzner's Robot API with basic auth and a label selector",
			object: "hetzner",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.HetznerSDConfigs = []monitoringv1alpha1.HetznerSDConfig{{Role: monitoringv1alpha1.HetznerRoleRobot, BasicAuth: credsBasicAuth(), LabelSelector: ptr("env=prod")}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*hetzner.SDConfig); !ok || c.Role != hetzner.Role("robot") || c.LabelSelector != "env=prod" || c.HTTPClientConfig.BasicAuth == nil {
					t.Errorf("hetzner_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "Nomad with its ACL token",
			object: "nomad",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.NomadSDConfigs = []monitoringv1alpha1.NomadSDConfig{{
					Server: "https://nomad.example.com:4646", Namespace: ptr("apps"), Region: ptr("global"), AllowStale: ptr(false), Authorization: bearer("token"),
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*nomad.SDConfig); !ok || c.Server != "https://nomad.example.com:4646" || c.Namespace != "apps" || c.Region != "global" ||
					c.AllowStale || !authorized(c.HTTPClientConfig) {
					t.Errorf("nomad_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "Docker Swarm tasks",
			object: "dockerswarm",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.DockerSwarmSDConfigs = []monitoringv1alpha1.DockerSwarmSDConfig{{
					Host: "unix:///var/run/docker.sock", Role: monitoringv1alpha1.DockerSwarmRoleTasks, Port: ptr[int32](9100),
					Filters: monitoringv1alpha1.Filters{{Name: "desired-state", Values: []string{"running"}}},
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*moby.DockerSwarmSDConfig); !ok || c.Host != "unix:///var/run/docker.sock" || c.Role != "tasks" || c.Port != 9100 || len(c.Filters) != 1 {
					t.Errorf("dockerswarm_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "PuppetDB with its query and basic auth",
			object: "puppetdb",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.PuppetDBSDConfigs = []monitoringv1alpha1.PuppetDBSDConfig{{
					URL: "https://puppetdb.example.com", Query: `resources { type = "Class" and title = "Prometheus::Node_exporter" }`,
					IncludeParameters: ptr(true), Port: ptr[int32](9100), BasicAuth: credsBasicAuth(),
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*puppetdb.SDConfig); !ok || c.URL != "https://puppetdb.example.com" || c.Query == "" || !c.IncludeParameters || c.Port != 9100 ||
					c.HTTPClientConfig.BasicAuth == nil {
					t.Errorf("puppetdb_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "Lightsail with its access key pair",
			object: "lightsail",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.LightSailSDConfigs = []monitoringv1alpha1.LightSailSDConfig{{
					Region: ptr("eu-west-1"), AccessKey: secretPtr("creds", "access"), SecretKey: secretPtr("creds", "secret"), Endpoint: ptr("https://lightsail.eu-west-1.amazonaws.com"), Port: ptr[int32](9100),
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*aws.LightsailSDConfig); !ok || c.Region != "eu-west-1" || c.AccessKey != "AKIAEXAMPLE" || string(c.SecretKey) != "aws-s3cret" ||
					c.Endpoint != "https://lightsail.eu-west-1.amazonaws.com" || c.Port != 9100 {
					t.Errorf("lightsail_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "OVHcloud with its application secret and consumer key",
			object: "ovhcloud",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.OVHCloudSDConfigs = []monitoringv1alpha1.OVHCloudSDConfig{{
					ApplicationKey: "app-key", ApplicationSecret: secretRef("creds", "app-secret"), ConsumerKey: secretRef("creds", "consumer"),
					Service: monitoringv1alpha1.OVHServiceDedicatedServer, Endpoint: ptr("ovh-eu"),
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*ovhcloud.SDConfig); !ok || c.ApplicationKey != "app-key" || string(c.ApplicationSecret) != "ovh-app-s3cret" ||
					string(c.ConsumerKey) != "ovh-consumer" || c.Service != "dedicated_server" || c.Endpoint != "ovh-eu" {
					t.Errorf("ovhcloud_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "Scaleway baremetal with its secret key",
			object: "scaleway",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.ScalewaySDConfigs = []monitoringv1alpha1.ScalewaySDConfig{{
					AccessKey: "SCW1234567890ABCDEFG", SecretKey: secretRef("creds", "scw-secret"), ProjectID: "0b1d9c4e-3c4f-4a8e-8a51-6d2e9c0f7a42", Role: monitoringv1alpha1.ScalewayRoleBaremetal,
					Zone: ptr("fr-par-1"), NameFilter: ptr("web"), TagsFilter: []string{"prod"}, Port: ptr[int32](9100),
				}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*scaleway.SDConfig); !ok || c.AccessKey != "SCW1234567890ABCDEFG" || string(c.SecretKey) != "8d6bd9a4-6a2b-4c1e-9a7e-2f0f3c6f1e01" ||
					c.Project != "0b1d9c4e-3c4f-4a8e-8a51-6d2e9c0f7a42" ||
					c.Zone != "fr-par-1" || c.NameFilter != "web" || len(c.TagsFilter) != 1 || c.Port != 9100 {
					t.Errorf("scaleway_sd_configs = %+v", dc)
				}
			},
		},
		{
			name:   "IONOS with its API token",
			object: "ionos",
			set: func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.IonosSDConfigs = []monitoringv1alpha1.IonosSDConfig{{DataCenterID: "8feda53f-15f0-447f-badf-ebe32dad2fc0", Authorization: *bearer("token"), Port: ptr[int32](9100)}}
			},
			check: func(t *testing.T, dc promdiscovery.Config) {
				if c, ok := dc.(*ionos.SDConfig); !ok || c.DatacenterID != "8feda53f-15f0-447f-badf-ebe32dad2fc0" || c.Port != 9100 || !authorized(c.HTTPClientConfig) {
					t.Errorf("ionos_sd_configs = %+v", dc)
				}
			},
		},
	}
}

// sdGoldenCases keep the whole prometheus.yaml of a Prometheus selecting one ScrapeConfig of
// each mechanism of sdCases, named after it.
func sdGoldenCases() map[string]Input {
	p := newPrometheus()
	in := newInput(p, nil, newSecret("default", "creds", sdCreds()))
	for _, tc := range sdCases() {
		in = withScrapeConfigs(in, newScrapeConfig("default", tc.object, withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.StaticConfigs = nil
			tc.set(s)
		})))
	}
	return map[string]Input{"scrapeconfig_every_discovery_mechanism": in}
}

// Every discovery mechanism of the API, rendered with its credentials read from a Secret and
// loaded by Prometheus's own loader; each check reads what the loader made of it.
func TestScrapeConfigDiscoveryMechanisms(t *testing.T) {
	for _, tc := range sdCases() {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Generate(sdInput("", tc.set))
			if err != nil {
				t.Fatal(err)
			}
			if v := res.Verdicts; len(v) != 1 || !v[0].Accepted || v[0].Message != "" {
				t.Fatalf("verdicts %+v, want the ScrapeConfig accepted without a warning", v)
			}
			tc.check(t, loadedSD(t, res))
		})
	}
}

// A missing Secret rejects the ScrapeConfig that needs it, naming the field, and no other.
func TestScrapeConfigDiscoveryMissingSecret(t *testing.T) {
	missing := func(key string) *corev1.SecretKeySelector { return secretPtr("missing", key) }
	tests := []struct {
		name, field string
		set         func(*monitoringv1alpha1.ScrapeConfigSpec)
	}{
		{"Consul token", "consulSDConfigs[0].tokenRef", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.ConsulSDConfigs = []monitoringv1alpha1.ConsulSDConfig{{Server: "consul:8500", TokenRef: missing("token")}}
		}},
		{"EC2 secret key", "ec2SDConfigs[0].secretKey", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.EC2SDConfigs = []monitoringv1alpha1.EC2SDConfig{{AccessKey: secretPtr("creds", "access"), SecretKey: missing("secret")}}
		}},
		{"Azure client secret", "azureSDConfigs[0].clientSecret", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.AzureSDConfigs = []monitoringv1alpha1.AzureSDConfig{{SubscriptionID: "sub", TenantID: ptr("t"), ClientID: ptr("c"), ClientSecret: missing("secret")}}
		}},
		{"OpenStack application credential", "openstackSDConfigs[0].applicationCredentialSecret", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.OpenStackSDConfigs = []monitoringv1alpha1.OpenStackSDConfig{{Role: monitoringv1alpha1.OpenStackRoleHypervisor, Region: "r", ApplicationCredentialSecret: missing("secret")}}
		}},
		{"DigitalOcean OAuth2 client secret", "digitalOceanSDConfigs[0].oauth2.clientSecret", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.DigitalOceanSDConfigs = []monitoringv1alpha1.DigitalOceanSDConfig{{OAuth2: &monitoringv1.OAuth2{
				ClientID: monitoringv1.SecretOrConfigMap{Secret: secretPtr("creds", "user")}, ClientSecret: *missing("secret"), TokenURL: "https://auth.example.com/token",
			}}}
		}},
		{"Hetzner TLS key", "hetznerSDConfigs[0].tlsConfig.keySecret", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.HetznerSDConfigs = []monitoringv1alpha1.HetznerSDConfig{{Role: monitoringv1alpha1.HetznerRoleHcloud, Authorization: bearer("token"), TLSConfig: &monitoringv1.SafeTLSConfig{
				Cert: monitoringv1.SecretOrConfigMap{Secret: secretPtr("creds", "user")}, KeySecret: missing("tls.key"),
			}}}
		}},
		{"Nomad proxy header", "nomadSDConfigs[0].proxyConnectHeader[Proxy-Authorization][0]", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.NomadSDConfigs = []monitoringv1alpha1.NomadSDConfig{{Server: "http://nomad:4646", ProxyConfig: monitoringv1.ProxyConfig{
				ProxyURL: ptr("http://proxy:3128"), ProxyConnectHeader: map[string][]corev1.SecretKeySelector{"Proxy-Authorization": {*missing("h")}},
			}}}
		}},
		{"Lightsail access key", "lightSailSDConfigs[0].accessKey", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.LightSailSDConfigs = []monitoringv1alpha1.LightSailSDConfig{{AccessKey: missing("access"), SecretKey: secretPtr("creds", "secret")}}
		}},
		{"OVHcloud consumer key", "ovhcloudSDConfigs[0].consumerKey", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.OVHCloudSDConfigs = []monitoringv1alpha1.OVHCloudSDConfig{{ApplicationKey: "k", ApplicationSecret: secretRef("creds", "app-secret"), ConsumerKey: *missing("c"), Service: monitoringv1alpha1.OVHServiceVPS}}
		}},
		{"Scaleway secret key", "scalewaySDConfigs[0].secretKey", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.ScalewaySDConfigs = []monitoringv1alpha1.ScalewaySDConfig{{AccessKey: "a", SecretKey: *missing("s"), ProjectID: "p", Role: monitoringv1alpha1.ScalewayRoleInstance}}
		}},
		{"IONOS token", "ionosSDConfigs[0].authorization.credentials", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.IonosSDConfigs = []monitoringv1alpha1.IonosSDConfig{{DataCenterID: "dc", Authorization: monitoringv1.SafeAuthorization{Credentials: missing("token")}}}
		}},
	}
	var cases []verdictCase
	for _, tc := range tests {
		in := sdInput("", tc.set)
		in = withScrapeConfigs(in, newScrapeConfig("default", "unrelated"))
		cases = append(cases, verdictCase{
			name: "rejects the ScrapeConfig whose " + tc.name + " Secret is missing, and only it",
			in:   in,
			want: []wantVerdict{
				{key: "default/sd", reason: ReasonSecretNotFound, message: tc.field + ": Secret default/missing not found"},
				{key: "default/unrelated"},
			},
		})
	}
	runVerdictCases(t, cases)
}

// What the Prometheus version does not know is refused or left out as the existing operator
// does: refused where leaving it out would discover other targets than asked, or none.
func TestScrapeConfigDiscoveryVersionGates(t *testing.T) {
	refused := func(msg string) []wantVerdict {
		return []wantVerdict{{key: "default/sd", reason: ReasonUnsupported, msgContains: []string{msg}}}
	}
	accepted := []wantVerdict{{key: "default/sd"}}
	consulWith := func(set func(*monitoringv1alpha1.ConsulSDConfig)) func(*monitoringv1alpha1.ScrapeConfigSpec) {
		return func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			c := monitoringv1alpha1.ConsulSDConfig{Server: "consul:8500"}
			set(&c)
			s.ConsulSDConfigs = []monitoringv1alpha1.ConsulSDConfig{c}
		}
	}
	ec2TLS := func(s *monitoringv1alpha1.ScrapeConfigSpec) {
		s.EC2SDConfigs = []monitoringv1alpha1.EC2SDConfig{{
			Region: ptr("eu-west-1"), TLSConfig: &monitoringv1.SafeTLSConfig{InsecureSkipVerify: ptr(true)}, FollowRedirects: ptr(false),
			Filters: monitoringv1alpha1.Filters{{Name: "tag:env", Values: []string{"prod"}}},
		}}
	}
	docker := func(s *monitoringv1alpha1.ScrapeConfigSpec) {
		s.DockerSDConfigs = []monitoringv1alpha1.DockerSDConfig{{Host: "unix:///var/run/docker.sock", MatchFirstNetwork: ptr(false)}}
	}
	runVerdictCases(t, []verdictCase{
		{
			name: "refuses a Consul filter before v3.0",
			in:   sdInput("v2.53.1", consulWith(func(c *monitoringv1alpha1.ConsulSDConfig) { c.Filter = ptr("Node.Datacenter == dc1") })),
			want: refused("consulSDConfigs[0].filter: needs Prometheus v3.0 or later, this one is v2.53.1"),
		},
		{
			name: "refuses a Consul health filter before v3.11.2, the release that added it",
			in:   sdInput("v3.11.1", consulWith(func(c *monitoringv1alpha1.ConsulSDConfig) { c.HealthFilter = ptr(`Checks.Status == "passing"`) })),
			want: refused("consulSDConfigs[0].healthFilter: needs Prometheus v3.11.2 or later, this one is v3.11.1"),
		},
		{
			name: "writes a Consul health filter from v3.11.2",
			in:   sdInput("v3.11.2", consulWith(func(c *monitoringv1alpha1.ConsulSDConfig) { c.HealthFilter = ptr(`Checks.Status == "passing"`) })),
			want: accepted,
			check: func(t *testing.T, res *Result) {
				if c := loadedSD(t, res).(*consul.SDConfig); c.HealthFilter == "" {
					t.Errorf("health_filter not written: %+v", c)
				}
			},
		},
		{
			name: "refuses a Consul path prefix before v2.45",
			in:   sdInput("v2.44.0", consulWith(func(c *monitoringv1alpha1.ConsulSDConfig) { c.PathPrefix = ptr("/consul") })),
			want: refused("consulSDConfigs[0].pathPrefix: needs Prometheus v2.45"),
		},
		{
			name: "refuses Azure's SDK authentication before v2.52",
			in: sdInput("v2.51.2", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.AzureSDConfigs = []monitoringv1alpha1.AzureSDConfig{{SubscriptionID: "sub", AuthenticationMethod: ptr(monitoringv1alpha1.AuthMethodTypeSDK)}}
			}),
			want: refused("azureSDConfigs[0].authenticationMethod: SDK: needs Prometheus v2.52"),
		},
		{
			name: "refuses an Azure resource group before v2.35",
			in: sdInput("v2.34.0", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.AzureSDConfigs = []monitoringv1alpha1.AzureSDConfig{{SubscriptionID: "sub", AuthenticationMethod: ptr(monitoringv1alpha1.AuthMethodTypeManagedIdentity), ResourceGroup: ptr("rg")}}
			}),
			want: refused("azureSDConfigs[0].resourceGroup: needs Prometheus v2.35"),
		},
		{
			name: "refuses OpenStack's LoadBalancer role before v3.2",
			in: sdInput("v3.1.0", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.OpenStackSDConfigs = []monitoringv1alpha1.OpenStackSDConfig{{Role: monitoringv1alpha1.OpenStackRoleLoadBalancer, Region: "r"}}
			}),
			want: refused("openstackSDConfigs[0].role: LoadBalancer: needs Prometheus v3.2"),
		},
		{
			name: "refuses a Hetzner label selector before v3.5",
			in: sdInput("v3.4.2", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.HetznerSDConfigs = []monitoringv1alpha1.HetznerSDConfig{{Role: monitoringv1alpha1.HetznerRoleHcloud, Authorization: bearer("token"), LabelSelector: ptr("env=prod")}}
			}),
			want: refused("hetznerSDConfigs[0].labelSelector: needs Prometheus v3.5"),
		},
		{
			name: "refuses Kuma discovery before v2.50, as the existing operator does",
			in: sdInput("v2.49.1", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.KumaSDConfigs = []monitoringv1alpha1.KumaSDConfig{{Server: "http://kuma:5676"}}
			}),
			want: refused("kumaSDConfigs: needs Prometheus v2.50 or later, this one is v2.49.1"),
		},
		{
			name: "refuses OVHcloud discovery before v2.40",
			in: sdInput("v2.39.0", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.OVHCloudSDConfigs = []monitoringv1alpha1.OVHCloudSDConfig{{ApplicationKey: "k", ApplicationSecret: secretRef("creds", "app-secret"), ConsumerKey: secretRef("creds", "consumer"), Service: monitoringv1alpha1.OVHServiceVPS}}
			}),
			want: refused("ovhcloudSDConfigs: needs Prometheus v2.40"),
		},
		{
			name: "leaves EC2's TLS config and redirects out before v2.41, with a warning",
			in:   sdInput("v2.40.7", ec2TLS),
			want: []wantVerdict{{key: "default/sd", msgContains: []string{
				"ec2SDConfigs[0].followRedirects (needs v2.41)", "ec2SDConfigs[0].tlsConfig (needs v2.41)", "accepted without what Prometheus v2.40.7 does not know",
			}}},
			check: func(t *testing.T, res *Result) {
				c := loadedSD(t, res).(*aws.EC2SDConfig)
				if c.HTTPClientConfig.TLSConfig.InsecureSkipVerify || !c.HTTPClientConfig.FollowRedirects || len(c.Filters) != 1 {
					t.Errorf("ec2_sd_configs for v2.40 = %+v", c)
				}
			},
		},
		{
			name: "writes EC2's TLS config from v2.41",
			in:   sdInput("v2.41.0", ec2TLS),
			want: accepted,
			check: func(t *testing.T, res *Result) {
				if c := loadedSD(t, res).(*aws.EC2SDConfig); !c.HTTPClientConfig.TLSConfig.InsecureSkipVerify || c.HTTPClientConfig.FollowRedirects {
					t.Errorf("ec2_sd_configs for v2.41 = %+v", c)
				}
			},
		},
		{
			name: "leaves Docker's matchFirstNetwork out before v2.54.1, with a warning",
			in:   sdInput("v2.54.0", docker),
			want: []wantVerdict{{key: "default/sd", msgContains: []string{"dockerSDConfigs[0].matchFirstNetwork (needs v2.54.1)"}}},
			check: func(t *testing.T, res *Result) {
				if c := loadedSD(t, res).(*moby.DockerSDConfig); !c.MatchFirstNetwork {
					t.Errorf("match_first_network written for v2.54.0: %+v", c)
				}
			},
		},
		{
			name: "writes Docker's matchFirstNetwork from v2.54.1",
			in:   sdInput("v2.54.1", docker),
			want: accepted,
			check: func(t *testing.T, res *Result) {
				if c := loadedSD(t, res).(*moby.DockerSDConfig); c.MatchFirstNetwork {
					t.Errorf("match_first_network not written for v2.54.1: %+v", c)
				}
			},
		},
	})
}

// Settings Prometheus would refuse, or that would not do what they say, are refused by name.
func TestScrapeConfigDiscoveryInvalid(t *testing.T) {
	invalid := func(msg string) []wantVerdict {
		return []wantVerdict{{key: "default/sd", reason: ReasonInvalidConfig, msgContains: []string{msg}}}
	}
	runVerdictCases(t, []verdictCase{
		{
			name: "refuses an EC2 access key without its secret key",
			in: sdInput("", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.EC2SDConfigs = []monitoringv1alpha1.EC2SDConfig{{AccessKey: secretPtr("creds", "access")}}
			}),
			want: invalid("ec2SDConfigs[0]: accessKey and secretKey go together"),
		},
		{
			name: "refuses Azure's OAuth authentication without a client secret",
			in: sdInput("", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.AzureSDConfigs = []monitoringv1alpha1.AzureSDConfig{{SubscriptionID: "sub", TenantID: ptr("t"), ClientID: ptr("c")}}
			}),
			want: invalid("azureSDConfigs[0]: the OAuth authentication method needs tenantID, clientID and clientSecret"),
		},
		{
			name: "refuses a Docker host without a scheme",
			in: sdInput("", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.DockerSDConfigs = []monitoringv1alpha1.DockerSDConfig{{Host: "docker.example.com:2375"}}
			}),
			want: invalid("dockerSDConfigs[0].host"),
		},
		{
			name: "refuses two kinds of authentication on one discovery config",
			in: sdInput("", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.EurekaSDConfigs = []monitoringv1alpha1.EurekaSDConfig{{Server: "http://eureka:8761", BasicAuth: credsBasicAuth(), Authorization: bearer("token")}}
			}),
			want: invalid("eurekaSDConfigs[0]"),
		},
		{
			name: "refuses a PuppetDB URL that is not http(s)",
			in: sdInput("", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.PuppetDBSDConfigs = []monitoringv1alpha1.PuppetDBSDConfig{{URL: "ftp://puppetdb.example.com", Query: "resources {}"}}
			}),
			want: invalid("puppetDBSDConfigs[0].url"),
		},
		{
			name: "refuses with the loader's message what only Prometheus checks (an EC2 filter without values)",
			in: sdInput("", func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.EC2SDConfigs = []monitoringv1alpha1.EC2SDConfig{{Filters: monitoringv1alpha1.Filters{{Name: "tag:env"}}}}
			}),
			want: invalid("filter values cannot be empty"),
		},
	})
}
