package scrape

// The types below mirror the parts of Prometheus's scrape_config this package writes. Field
// order is the order written, the existing operator's (docs/compatibility.md); Prometheus's own config types are not
// used for output because their marshalers redact secrets and reorder fields.

// scrapeJob is one entry of scrape_configs.
type scrapeJob struct {
	JobName                  string                 `yaml:"job_name"`
	HonorLabels              bool                   `yaml:"honor_labels"`
	HonorTimestamps          *bool                  `yaml:"honor_timestamps,omitempty"`
	TrackTimestampsStaleness *bool                  `yaml:"track_timestamps_staleness,omitempty"`
	StaticConfigs            []staticConfig         `yaml:"static_configs,omitempty"`
	FileSDConfigs            []fileSDConfig         `yaml:"file_sd_configs,omitempty"`
	HTTPSDConfigs            []httpSDConfig         `yaml:"http_sd_configs,omitempty"`
	KubernetesSDConfigs      []kubernetesSDConfig   `yaml:"kubernetes_sd_configs,omitempty"`
	DNSSDConfigs             []dnsSDConfig          `yaml:"dns_sd_configs,omitempty"`
	ConsulSDConfigs          []consulSDConfig       `yaml:"consul_sd_configs,omitempty"`
	EC2SDConfigs             []ec2SDConfig          `yaml:"ec2_sd_configs,omitempty"`
	AzureSDConfigs           []azureSDConfig        `yaml:"azure_sd_configs,omitempty"`
	GCESDConfigs             []gceSDConfig          `yaml:"gce_sd_configs,omitempty"`
	OpenStackSDConfigs       []openstackSDConfig    `yaml:"openstack_sd_configs,omitempty"`
	DigitalOceanSDConfigs    []digitalOceanSDConfig `yaml:"digitalocean_sd_configs,omitempty"`
	KumaSDConfigs            []kumaSDConfig         `yaml:"kuma_sd_configs,omitempty"`
	EurekaSDConfigs          []eurekaSDConfig       `yaml:"eureka_sd_configs,omitempty"`
	DockerSDConfigs          []dockerSDConfig       `yaml:"docker_sd_configs,omitempty"`
	LinodeSDConfigs          []linodeSDConfig       `yaml:"linode_sd_configs,omitempty"`
	HetznerSDConfigs         []hetznerSDConfig      `yaml:"hetzner_sd_configs,omitempty"`
	NomadSDConfigs           []nomadSDConfig        `yaml:"nomad_sd_configs,omitempty"`
	DockerSwarmSDConfigs     []dockerSwarmSDConfig  `yaml:"dockerswarm_sd_configs,omitempty"`
	PuppetDBSDConfigs        []puppetDBSDConfig     `yaml:"puppetdb_sd_configs,omitempty"`
	LightSailSDConfigs       []lightsailSDConfig    `yaml:"lightsail_sd_configs,omitempty"`
	OVHCloudSDConfigs        []ovhcloudSDConfig     `yaml:"ovhcloud_sd_configs,omitempty"`
	ScalewaySDConfigs        []scalewaySDConfig     `yaml:"scaleway_sd_configs,omitempty"`
	IonosSDConfigs           []ionosSDConfig        `yaml:"ionos_sd_configs,omitempty"`
	ScrapeInterval           string                 `yaml:"scrape_interval,omitempty"`
	ScrapeTimeout            string                 `yaml:"scrape_timeout,omitempty"`
	MetricsPath              string                 `yaml:"metrics_path,omitempty"`
	Params                   map[string][]string    `yaml:"params,omitempty"`
	Scheme                   string                 `yaml:"scheme,omitempty"`
	EnableCompression        *bool                  `yaml:"enable_compression,omitempty"`
	FollowRedirects          *bool                  `yaml:"follow_redirects,omitempty"`
	EnableHTTP2              *bool                  `yaml:"enable_http2,omitempty"`
	Proxy                    proxyConfig            `yaml:",inline"`
	OAuth2                   *oauth2Config          `yaml:"oauth2,omitempty"`
	TLSConfig                *tlsConfig             `yaml:"tls_config,omitempty"`
	BearerToken              string                 `yaml:"bearer_token,omitempty"`
	BearerTokenFile          string                 `yaml:"bearer_token_file,omitempty"`
	BasicAuth                *basicAuth             `yaml:"basic_auth,omitempty"`
	Authorization            *authorization         `yaml:"authorization,omitempty"`
	RelabelConfigs           []*relabelRule         `yaml:"relabel_configs,omitempty"`

	SampleLimit           uint64 `yaml:"sample_limit,omitempty"`
	TargetLimit           uint64 `yaml:"target_limit,omitempty"`
	LabelLimit            uint64 `yaml:"label_limit,omitempty"`
	LabelNameLengthLimit  uint64 `yaml:"label_name_length_limit,omitempty"`
	LabelValueLengthLimit uint64 `yaml:"label_value_length_limit,omitempty"`
	KeepDroppedTargets    uint64 `yaml:"keep_dropped_targets,omitempty"`

	ScrapeNativeHistograms         *bool   `yaml:"scrape_native_histograms,omitempty"`
	AlwaysScrapeClassicHistograms  *bool   `yaml:"always_scrape_classic_histograms,omitempty"`
	ScrapeClassicHistograms        *bool   `yaml:"scrape_classic_histograms,omitempty"` // its name before v3
	NativeHistogramBucketLimit     uint64  `yaml:"native_histogram_bucket_limit,omitempty"`
	NativeHistogramMinBucketFactor float64 `yaml:"native_histogram_min_bucket_factor,omitempty"`
	ConvertClassicHistogramsToNHCB *bool   `yaml:"convert_classic_histograms_to_nhcb,omitempty"`

	ScrapeProtocols        []string `yaml:"scrape_protocols,omitempty"`
	FallbackScrapeProtocol string   `yaml:"fallback_scrape_protocol,omitempty"`
	BodySizeLimit          string   `yaml:"body_size_limit,omitempty"`

	MetricNameValidationScheme string `yaml:"metric_name_validation_scheme,omitempty"`
	MetricNameEscapingScheme   string `yaml:"metric_name_escaping_scheme,omitempty"`

	MetricRelabelConfigs []*relabelRule `yaml:"metric_relabel_configs,omitempty"`
}

type kubernetesSDConfig struct {
	APIServer      string              `yaml:"api_server,omitempty"`
	Role           string              `yaml:"role"`
	Namespaces     *sdNamespaces       `yaml:"namespaces,omitempty"`
	Selectors      []sdSelector        `yaml:"selectors,omitempty"`
	AttachMetadata *sdAttachedMetadata `yaml:"attach_metadata,omitempty"`
	// Only with APIServer: without it Prometheus uses its own service account.
	HTTPClient httpClientConfig `yaml:",inline"`
}

// fileSDConfig reads targets from files in the Prometheus container.
type fileSDConfig struct {
	Files           []string `yaml:"files"`
	RefreshInterval string   `yaml:"refresh_interval,omitempty"`
}

// httpSDConfig fetches targets from an HTTP endpoint.
type httpSDConfig struct {
	URL             string           `yaml:"url"`
	RefreshInterval string           `yaml:"refresh_interval,omitempty"`
	HTTPClient      httpClientConfig `yaml:",inline"`
}

// dnsSDConfig resolves DNS names into targets.
type dnsSDConfig struct {
	Names           []string `yaml:"names"`
	RefreshInterval string   `yaml:"refresh_interval,omitempty"`
	Type            string   `yaml:"type,omitempty"`
	Port            int32    `yaml:"port,omitempty"`
}

// httpClientConfig is the HTTP client of a service discovery mechanism, inlined into its config
// the way Prometheus reads it.
type httpClientConfig struct {
	BasicAuth       *basicAuth     `yaml:"basic_auth,omitempty"`
	Authorization   *authorization `yaml:"authorization,omitempty"`
	OAuth2          *oauth2Config  `yaml:"oauth2,omitempty"`
	TLSConfig       *tlsConfig     `yaml:"tls_config,omitempty"`
	Proxy           proxyConfig    `yaml:",inline"`
	FollowRedirects *bool          `yaml:"follow_redirects,omitempty"`
	EnableHTTP2     *bool          `yaml:"enable_http2,omitempty"`
}

// staticConfig is one static_configs entry: fixed targets sharing labels.
type staticConfig struct {
	Targets []string          `yaml:"targets"`
	Labels  map[string]string `yaml:"labels,omitempty"`
}

type sdNamespaces struct {
	OwnNamespace bool     `yaml:"own_namespace,omitempty"`
	Names        []string `yaml:"names,omitempty"`
}

type sdSelector struct {
	Role  string `yaml:"role"`
	Label string `yaml:"label,omitempty"`
	Field string `yaml:"field,omitempty"`
}

type sdAttachedMetadata struct {
	Node bool `yaml:"node"`
}

type proxyConfig struct {
	ProxyURL             string              `yaml:"proxy_url,omitempty"`
	NoProxy              string              `yaml:"no_proxy,omitempty"`
	ProxyFromEnvironment bool                `yaml:"proxy_from_environment,omitempty"`
	ProxyConnectHeader   map[string][]string `yaml:"proxy_connect_header,omitempty"`
}

type tlsConfig struct {
	CA                 string `yaml:"ca,omitempty"`
	Cert               string `yaml:"cert,omitempty"`
	Key                string `yaml:"key,omitempty"`
	CAFile             string `yaml:"ca_file,omitempty"`
	CertFile           string `yaml:"cert_file,omitempty"`
	KeyFile            string `yaml:"key_file,omitempty"`
	ServerName         string `yaml:"server_name,omitempty"`
	InsecureSkipVerify *bool  `yaml:"insecure_skip_verify,omitempty"`
	MinVersion         string `yaml:"min_version,omitempty"`
	MaxVersion         string `yaml:"max_version,omitempty"`
}

type basicAuth struct {
	Username string `yaml:"username,omitempty"`
	Password string `yaml:"password,omitempty"`
}

type authorization struct {
	Type            string `yaml:"type"`
	Credentials     string `yaml:"credentials,omitempty"`
	CredentialsFile string `yaml:"credentials_file,omitempty"`
}

type oauth2Config struct {
	ClientID       string            `yaml:"client_id"`
	ClientSecret   string            `yaml:"client_secret,omitempty"`
	TokenURL       string            `yaml:"token_url"`
	Scopes         []string          `yaml:"scopes,omitempty"`
	EndpointParams map[string]string `yaml:"endpoint_params,omitempty"`
	TLSConfig      *tlsConfig        `yaml:"tls_config,omitempty"`
	Proxy          proxyConfig       `yaml:",inline"`
}

// relabelRule is one relabel_config. Pointers tell "unset" (Prometheus's default applies)
// from an explicit empty string.
type relabelRule struct {
	SourceLabels []string `yaml:"source_labels,omitempty"`
	Separator    *string  `yaml:"separator,omitempty"`
	TargetLabel  string   `yaml:"target_label,omitempty"`
	Regex        *string  `yaml:"regex,omitempty"`
	Modulus      uint64   `yaml:"modulus,omitempty"`
	Replacement  *string  `yaml:"replacement,omitempty"`
	Action       string   `yaml:"action,omitempty"`
}

func ptr[T any](v T) *T { return &v }
