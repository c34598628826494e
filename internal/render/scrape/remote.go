package scrape

import (
	"crypto/sha256"
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/relabel"
	"go.yaml.in/yaml/v2"

	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// RemoteError means spec.remoteWrite or spec.remoteRead cannot be rendered: a field Lookout or
// Prometheus's loader refuses, a Secret or key that is missing, or a field the Prometheus version
// of spec.version does not know. Leaving the entry out would silently lose (or stop reading)
// data, so no config is produced; the caller reports it (Reconciled=False) and keeps the config
// it applied before.
type RemoteError struct {
	Reason  string // ReasonInvalidRemoteWrite or ReasonInvalidRemoteRead: it names the field
	Message string // starts with the path of the field
}

func (e *RemoteError) Error() string { return e.Message }

// Reasons of a RemoteError.
const (
	ReasonInvalidRemoteWrite = "InvalidRemoteWrite" // spec.remoteWrite
	ReasonInvalidRemoteRead  = "InvalidRemoteRead"  // spec.remoteRead
)

// The protobuf_message values of Remote Write 1.0 and 2.0.
const (
	protobufMessageV1 = "prometheus.WriteRequest"
	protobufMessageV2 = "io.prometheus.write.v2.Request"
)

// remoteDocument is the remote_write and remote_read sections, written after alerting.
type remoteDocument struct {
	RemoteWrite []*remoteWriteEndpoint `yaml:"remote_write,omitempty"`
	RemoteRead  []*remoteReadEndpoint  `yaml:"remote_read,omitempty"`
}

// remoteWriteEndpoint is one entry of remote_write.
type remoteWriteEndpoint struct {
	URL                  string            `yaml:"url"`
	Name                 string            `yaml:"name,omitempty"`
	RemoteTimeout        string            `yaml:"remote_timeout,omitempty"`
	Headers              map[string]string `yaml:"headers,omitempty"`
	WriteRelabelConfigs  []*relabelRule    `yaml:"write_relabel_configs,omitempty"`
	SendExemplars        *bool             `yaml:"send_exemplars,omitempty"`
	SendNativeHistograms *bool             `yaml:"send_native_histograms,omitempty"`
	RoundRobinDNS        *bool             `yaml:"round_robin_dns,omitempty"`
	ProtobufMessage      string            `yaml:"protobuf_message,omitempty"`
	HTTPClient           remoteHTTPClient  `yaml:",inline"`
	SigV4                *sigv4Config      `yaml:"sigv4,omitempty"`
	AzureAD              *azureADConfig    `yaml:"azuread,omitempty"`
	QueueConfig          *queueConfig      `yaml:"queue_config,omitempty"`
	MetadataConfig       *metadataConfig   `yaml:"metadata_config,omitempty"`
}

// remoteReadEndpoint is one entry of remote_read.
type remoteReadEndpoint struct {
	URL                  string            `yaml:"url"`
	Name                 string            `yaml:"name,omitempty"`
	RemoteTimeout        string            `yaml:"remote_timeout,omitempty"`
	Headers              map[string]string `yaml:"headers,omitempty"`
	ReadRecent           bool              `yaml:"read_recent,omitempty"`
	RequiredMatchers     map[string]string `yaml:"required_matchers,omitempty"`
	FilterExternalLabels *bool             `yaml:"filter_external_labels,omitempty"`
	HTTPClient           remoteHTTPClient  `yaml:",inline"`
}

// remoteHTTPClient is the HTTP client of a remote endpoint: a discovery config's, plus the
// deprecated bearer token settings.
type remoteHTTPClient struct {
	HTTP            httpClientConfig `yaml:",inline"`
	BearerToken     string           `yaml:"bearer_token,omitempty"`
	BearerTokenFile string           `yaml:"bearer_token_file,omitempty"`
}

type queueConfig struct {
	Capacity          int    `yaml:"capacity,omitempty"`
	MinShards         int    `yaml:"min_shards,omitempty"`
	MaxShards         int    `yaml:"max_shards,omitempty"`
	MaxSamplesPerSend int    `yaml:"max_samples_per_send,omitempty"`
	BatchSendDeadline string `yaml:"batch_send_deadline,omitempty"`
	MinBackoff        string `yaml:"min_backoff,omitempty"`
	MaxBackoff        string `yaml:"max_backoff,omitempty"`
	RetryOnRateLimit  bool   `yaml:"retry_on_http_429,omitempty"`
	SampleAgeLimit    string `yaml:"sample_age_limit,omitempty"`
}

type metadataConfig struct {
	Send              bool   `yaml:"send"`
	SendInterval      string `yaml:"send_interval,omitempty"`
	MaxSamplesPerSend *int32 `yaml:"max_samples_per_send,omitempty"`
}

type azureADConfig struct {
	Cloud            string                 `yaml:"cloud,omitempty"`
	ManagedIdentity  *azureManagedIdentity  `yaml:"managed_identity,omitempty"`
	OAuth            *azureOAuth            `yaml:"oauth,omitempty"`
	SDK              *azureSDK              `yaml:"sdk,omitempty"`
	WorkloadIdentity *azureWorkloadIdentity `yaml:"workload_identity,omitempty"`
	Scope            string                 `yaml:"scope,omitempty"`
}

type azureManagedIdentity struct {
	ClientID string `yaml:"client_id,omitempty"`
}

type azureOAuth struct {
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
	TenantID     string `yaml:"tenant_id"`
}

type azureSDK struct {
	TenantID string `yaml:"tenant_id,omitempty"`
}

type azureWorkloadIdentity struct {
	ClientID string `yaml:"client_id"`
	TenantID string `yaml:"tenant_id"`
}

// remote renders the remote_write and remote_read sections (nil when the Prometheus has
// neither) and checks them with Prometheus's loader under the global section.
func (g *generator) remote(cache *Cache) ([]byte, *RemoteError) {
	spec := &g.prom.Spec
	if len(spec.RemoteWrite) == 0 && len(spec.RemoteRead) == 0 {
		return nil, nil
	}
	reason := ReasonInvalidRemoteWrite
	if len(spec.RemoteWrite) == 0 {
		reason = ReasonInvalidRemoteRead
	}
	version, err := promrender.ParsedVersion(g.prom)
	if err != nil {
		return nil, &RemoteError{Reason: reason, Message: "spec.version: " + err.Error()}
	}
	doc := &remoteDocument{}
	var rerr *RemoteError
	if doc.RemoteWrite, rerr = remoteEntries(spec.RemoteWrite, "spec.remoteWrite", ReasonInvalidRemoteWrite,
		func(field string, rw *monitoringv1.RemoteWriteSpec) (*remoteWriteEndpoint, string, *rejection) {
			e, rej := g.remoteWrite(field, version, rw)
			if rej != nil {
				return nil, "", rej
			}
			return e, e.Name, nil
		}); rerr != nil {
		return nil, rerr
	}
	if doc.RemoteRead, rerr = remoteEntries(spec.RemoteRead, "spec.remoteRead", ReasonInvalidRemoteRead,
		func(field string, rr *monitoringv1.RemoteReadSpec) (*remoteReadEndpoint, string, *rejection) {
			e, rej := g.remoteRead(field, version, rr)
			if rej != nil {
				return nil, "", rej
			}
			return e, e.Name, nil
		}); rerr != nil {
		return nil, rerr
	}

	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, &RemoteError{Reason: reason, Message: fmt.Sprintf("cannot encode the remote_write and remote_read sections: %v", err)}
	}
	// Loaded once per content while the generator stays the same.
	sum := sha256.Sum256(out)
	if sum != cache.remote {
		if rerr := g.checkRemote(doc, out); rerr != nil {
			return nil, rerr
		}
		cache.remote = sum
	}
	return out, nil
}

// remoteEntries converts the entries of the list at path, refusing with reason the first that
// cannot be converted and a name an earlier entry has (Prometheus names its queues and metrics
// after it).
func remoteEntries[S, E any](list []S, path, reason string, convert func(field string, s *S) (E, string, *rejection)) ([]E, *RemoteError) {
	out := make([]E, 0, len(list))
	names := map[string]string{}
	for i := range list {
		field := fmt.Sprintf("%s[%d]", path, i)
		e, name, rej := convert(field, &list[i])
		if rej != nil {
			return nil, &RemoteError{Reason: reason, Message: rej.message}
		}
		if first, ok := names[name]; ok && name != "" {
			return nil, &RemoteError{Reason: reason, Message: fmt.Sprintf("%s.name: %q is already the name of %s; names must be unique", field, name, first)}
		}
		names[name] = field
		out = append(out, e)
	}
	return out, nil
}

// checkRemote loads the sections (out) under the global section and refuses what Prometheus
// would refuse on reload: what its loader refuses, naming the entry refused on its own, and
// entries it cannot tell apart (it refuses duplicates when it applies the config, hashing each
// entry as loaded, where secrets are redacted).
func (g *generator) checkRemote(doc *remoteDocument, out []byte) *RemoteError {
	cfg, err := config.Load(string(g.globalYAML)+string(out), discardLogger)
	if err != nil {
		for i, e := range doc.RemoteWrite {
			if eerr := g.loadRemote(&remoteDocument{RemoteWrite: []*remoteWriteEndpoint{e}}); eerr != nil {
				return &RemoteError{Reason: ReasonInvalidRemoteWrite,
					Message: fmt.Sprintf("spec.remoteWrite[%d]: Prometheus refuses the generated remote write config: %s", i, loaderMessage(eerr))}
			}
		}
		for i, e := range doc.RemoteRead {
			if eerr := g.loadRemote(&remoteDocument{RemoteRead: []*remoteReadEndpoint{e}}); eerr != nil {
				return &RemoteError{Reason: ReasonInvalidRemoteRead,
					Message: fmt.Sprintf("spec.remoteRead[%d]: Prometheus refuses the generated remote read config: %s", i, loaderMessage(eerr))}
			}
		}
		reason, field := ReasonInvalidRemoteWrite, "spec.remoteWrite"
		if len(doc.RemoteWrite) == 0 {
			reason, field = ReasonInvalidRemoteRead, "spec.remoteRead"
		}
		return &RemoteError{Reason: reason, Message: field + ": Prometheus refuses the generated remote sections: " + loaderMessage(err)}
	}
	if i, j, ok := sameLoaded(cfg.RemoteWriteConfigs); ok {
		return &RemoteError{Reason: ReasonInvalidRemoteWrite,
			Message: fmt.Sprintf("spec.remoteWrite[%d]: Prometheus cannot tell it from spec.remoteWrite[%d] and refuses duplicate remote write configs; give them different names", j, i)}
	}
	if i, j, ok := sameLoaded(cfg.RemoteReadConfigs); ok {
		return &RemoteError{Reason: ReasonInvalidRemoteRead,
			Message: fmt.Sprintf("spec.remoteRead[%d]: Prometheus cannot tell it from spec.remoteRead[%d] and refuses duplicate remote read configs; give them different names", j, i)}
	}
	return nil
}

func (g *generator) loadRemote(doc *remoteDocument) error {
	b, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	return g.loadTail(b)
}

// sameLoaded finds two entries that encode the same once loaded: the first (i) and the later
// one (j).
func sameLoaded[T any](entries []*T) (i, j int, ok bool) {
	seen := map[string]int{}
	for j, e := range entries {
		b, err := yaml.Marshal(e)
		if err != nil {
			continue
		}
		if i, dup := seen[string(b)]; dup {
			return i, j, true
		}
		seen[string(b)] = j
	}
	return 0, 0, false
}

// versionGate is a field Prometheus knows from major.minor on; set says whether it is written.
type versionGate struct {
	field        string
	set          bool
	major, minor int
}

// checkGates refuses the first field written that Prometheus v does not know: it would refuse
// the whole config.
func checkGates(v workload.Version, field string, gates []versionGate) *rejection {
	for _, gt := range gates {
		if gt.set && !v.AtLeast(gt.major, gt.minor) {
			return reject(ReasonUnsupported, "%s.%s: requires Prometheus v%d.%d.0 or later, spec.version is %s",
				field, gt.field, gt.major, gt.minor, v.Tag())
		}
	}
	return nil
}

// remoteClientSpec is the HTTP client part of a remote endpoint in the API.
type remoteClientSpec struct {
	basicAuth                    *monitoringv1.BasicAuth
	authorization                *monitoringv1.Authorization
	oauth2                       *monitoringv1.OAuth2
	bearerToken, bearerTokenFile string
	tls                          *monitoringv1.TLSConfig
	proxy                        *monitoringv1.ProxyConfig
	followRedirects, enableHTTP2 *bool
}

// remoteClient renders the HTTP client of a remote endpoint (at field); credentials are read in
// the Prometheus's namespace. TLS files and bearer token files are paths in the Prometheus
// container, written as given.
func (g *generator) remoteClient(field string, v workload.Version, c remoteClientSpec) (remoteHTTPClient, *rejection) {
	pc := c.proxy
	if rej := checkGates(v, field, []versionGate{
		{"oauth2", c.oauth2 != nil, 2, 27},
		{"authorization", c.authorization != nil, 2, 26},
		{"followRedirects", c.followRedirects != nil, 2, 26},
		{"enableHTTP2", c.enableHTTP2 != nil, 2, 35},
		{"noProxy", pc.NoProxy != nil && *pc.NoProxy != "", 2, 43},
		{"proxyFromEnvironment", pc.ProxyFromEnvironment != nil && *pc.ProxyFromEnvironment, 2, 43},
		{"proxyConnectHeader", len(pc.ProxyConnectHeader) > 0, 2, 43},
	}); rej != nil {
		return remoteHTTPClient{}, rej
	}
	ns := g.prom.Namespace
	hc, rej := g.sdHTTPClient(ns, field, sdHTTP{basicAuth: c.basicAuth, oauth2: c.oauth2, proxy: c.proxy,
		followRedirects: c.followRedirects, enableHTTP2: c.enableHTTP2})
	if rej != nil {
		return remoteHTTPClient{}, rej
	}
	out := remoteHTTPClient{HTTP: hc, BearerToken: c.bearerToken, BearerTokenFile: c.bearerTokenFile}
	if c.authorization != nil {
		if out.HTTP.Authorization, rej = g.authorizationWithFile(ns, field+".authorization", c.authorization); rej != nil {
			return remoteHTTPClient{}, rej
		}
	}
	if c.tls != nil {
		if err := c.tls.Validate(); err != nil {
			return remoteHTTPClient{}, reject(ReasonInvalidConfig, "%s.tlsConfig: %v", field, err)
		}
		if out.HTTP.TLSConfig, rej = g.endpointTLS(ns, field+".tlsConfig", c.tls, nil); rej != nil {
			return remoteHTTPClient{}, rej
		}
	}
	return out, nil
}

// remoteURL checks the URL of a remote endpoint.
func remoteURL(field string, u monitoringv1.URL) (string, *rejection) {
	return string(u), httpSDURL(field+".url", string(u))
}

// remoteWrite renders one entry of spec.remoteWrite (at field) for Prometheus v.
func (g *generator) remoteWrite(field string, v workload.Version, rw *monitoringv1.RemoteWriteSpec) (*remoteWriteEndpoint, *rejection) {
	qc, mc, s4, az := rw.QueueConfig, rw.MetadataConfig, rw.Sigv4, rw.AzureAD
	gates := []versionGate{
		{"name", rw.Name != nil && *rw.Name != "", 2, 15},
		{"messageVersion", rw.MessageVersion != nil && *rw.MessageVersion == monitoringv1.RemoteWriteMessageVersion2_0, 2, 54},
		{"sendExemplars", rw.SendExemplars != nil, 2, 27},
		{"sendNativeHistograms", rw.SendNativeHistograms != nil, 2, 40},
		{"headers", len(rw.Headers) > 0, 2, 25},
		{"roundRobinDNS", rw.RoundRobinDNS != nil, 3, 1},
		{"sigv4", s4 != nil, 2, 26},
		{"sigv4.useFIPSSTSEndpoint", s4 != nil && s4.UseFIPSSTSEndpoint != nil && *s4.UseFIPSSTSEndpoint, 2, 54},
		{"sigv4.externalId", s4 != nil && s4.ExternalID != "", 3, 11},
		{"azureAd", az != nil, 2, 45},
		{"azureAd.oauth", az != nil && az.OAuth != nil, 2, 48},
		{"azureAd.sdk", az != nil && az.SDK != nil, 2, 52},
		{"azureAd.managedIdentity.clientId", az != nil && az.ManagedIdentity != nil && (az.ManagedIdentity.ClientID == nil || *az.ManagedIdentity.ClientID == ""), 3, 5},
		{"azureAd.workloadIdentity", az != nil && az.WorkloadIdentity != nil, 3, 7},
		{"azureAd.scope", az != nil && az.Scope != nil, 3, 9},
		{"queueConfig.retryOnRateLimit", qc != nil && qc.RetryOnRateLimit, 2, 26},
		{"queueConfig.sampleAgeLimit", qc != nil && qc.SampleAgeLimit != nil, 2, 50},
		{"metadataConfig", mc != nil, 2, 23},
		{"metadataConfig.maxSamplesPerSend", mc != nil && mc.MaxSamplesPerSend != nil, 2, 29},
	}
	for i := range rw.WriteRelabelConfigs {
		action := strings.ToLower(rw.WriteRelabelConfigs[i].Action)
		f := fmt.Sprintf("writeRelabelConfigs[%d].action", i)
		gates = append(gates,
			versionGate{f, action == string(relabel.Lowercase) || action == string(relabel.Uppercase), 2, 36},
			versionGate{f, action == string(relabel.KeepEqual) || action == string(relabel.DropEqual), 2, 41})
	}
	if rej := checkGates(v, field, gates); rej != nil {
		return nil, rej
	}
	if rej := exclusive(field, []namedSet{
		{"basicAuth", rw.BasicAuth != nil}, {"authorization", rw.Authorization != nil}, {"oauth2", rw.OAuth2 != nil},
		{"sigv4", s4 != nil}, {"azureAd", az != nil}, {"bearerToken", rw.BearerToken != ""}, {"bearerTokenFile", rw.BearerTokenFile != ""},
	}); rej != nil {
		return nil, rej
	}

	out := &remoteWriteEndpoint{Headers: rw.Headers, SendExemplars: rw.SendExemplars, SendNativeHistograms: rw.SendNativeHistograms, RoundRobinDNS: rw.RoundRobinDNS}
	var rej *rejection
	if out.URL, rej = remoteURL(field, rw.URL); rej != nil {
		return nil, rej
	}
	if rw.Name != nil {
		out.Name = *rw.Name
	}
	if out.RemoteTimeout, rej = optionalDuration(field+".remoteTimeout", rw.RemoteTimeout); rej != nil {
		return nil, rej
	}
	if mv := rw.MessageVersion; mv != nil {
		switch *mv {
		case monitoringv1.RemoteWriteMessageVersion1_0:
			// Older versions know only this message and no key for it.
			if v.AtLeast(2, 54) {
				out.ProtobufMessage = protobufMessageV1
			}
		case monitoringv1.RemoteWriteMessageVersion2_0:
			out.ProtobufMessage = protobufMessageV2
		default:
			return nil, reject(ReasonInvalidConfig, "%s.messageVersion: %q is neither %s nor %s", field, string(*mv),
				monitoringv1.RemoteWriteMessageVersion1_0, monitoringv1.RemoteWriteMessageVersion2_0)
		}
	}
	if len(rw.WriteRelabelConfigs) > 0 {
		if out.WriteRelabelConfigs, rej = g.userRelabelings(field+".writeRelabelConfigs", rw.WriteRelabelConfigs); rej != nil {
			return nil, rej
		}
	}
	if out.HTTPClient, rej = g.remoteClient(field, v, remoteClientSpec{
		basicAuth: rw.BasicAuth, authorization: rw.Authorization, oauth2: rw.OAuth2,
		bearerToken: rw.BearerToken, bearerTokenFile: rw.BearerTokenFile,
		tls: rw.TLSConfig, proxy: &rw.ProxyConfig, followRedirects: rw.FollowRedirects, enableHTTP2: rw.EnableHttp2,
	}); rej != nil {
		return nil, rej
	}
	if s4 != nil {
		if out.SigV4, rej = g.sigv4(g.prom.Namespace, field+".sigv4", s4); rej != nil {
			return nil, rej
		}
	}
	if az != nil {
		if out.AzureAD, rej = g.azureAD(field+".azureAd", az); rej != nil {
			return nil, rej
		}
	}
	if qc != nil {
		if out.QueueConfig, rej = remoteQueue(field+".queueConfig", qc); rej != nil {
			return nil, rej
		}
	}
	if mc != nil {
		if out.MetadataConfig, rej = remoteMetadata(field+".metadataConfig", mc); rej != nil {
			return nil, rej
		}
	}
	return out, nil
}

// remoteQueue renders queue_config; zero values leave Prometheus's defaults.
func remoteQueue(field string, qc *monitoringv1.QueueConfig) (*queueConfig, *rejection) {
	if qc.MaxRetries != 0 {
		return nil, reject(ReasonUnsupported, "%s.maxRetries: Prometheus has not had this setting since v2.11 (it retries recoverable errors until they succeed) and refuses a config with it; remove the field", field)
	}
	out := &queueConfig{Capacity: qc.Capacity, MinShards: qc.MinShards, MaxShards: qc.MaxShards, MaxSamplesPerSend: qc.MaxSamplesPerSend, RetryOnRateLimit: qc.RetryOnRateLimit}
	for _, n := range []struct {
		name  string
		value int
	}{{"capacity", qc.Capacity}, {"minShards", qc.MinShards}, {"maxShards", qc.MaxShards}, {"maxSamplesPerSend", qc.MaxSamplesPerSend}} {
		if n.value < 0 {
			return nil, reject(ReasonInvalidConfig, "%s.%s: must not be negative, got %d", field, n.name, n.value)
		}
	}
	for _, d := range []struct {
		name string
		in   *monitoringv1.Duration
		out  *string
	}{
		{"batchSendDeadline", qc.BatchSendDeadline, &out.BatchSendDeadline},
		{"minBackoff", qc.MinBackoff, &out.MinBackoff},
		{"maxBackoff", qc.MaxBackoff, &out.MaxBackoff},
		{"sampleAgeLimit", qc.SampleAgeLimit, &out.SampleAgeLimit},
	} {
		var rej *rejection
		if *d.out, rej = optionalDuration(field+"."+d.name, d.in); rej != nil {
			return nil, rej
		}
	}
	return out, nil
}

// remoteMetadata renders metadata_config. As the API documents, an empty metadataConfig sends
// no metadata (send: false), while leaving it out keeps Prometheus's default (send).
func remoteMetadata(field string, mc *monitoringv1.MetadataConfig) (*metadataConfig, *rejection) {
	if n := mc.MaxSamplesPerSend; n != nil && *n < -1 {
		return nil, reject(ReasonInvalidConfig, "%s.maxSamplesPerSend: must be -1 or more, got %d", field, *n)
	}
	out := &metadataConfig{Send: mc.Send, MaxSamplesPerSend: mc.MaxSamplesPerSend}
	var rej *rejection
	if out.SendInterval, rej = optionalDuration(field+".sendInterval", &mc.SendInterval); rej != nil {
		return nil, rej
	}
	return out, nil
}

// azureAD renders Azure AD authentication: exactly one way of getting a token, the OAuth client
// secret read from a Secret in the Prometheus's namespace.
func (g *generator) azureAD(field string, az *monitoringv1.AzureAD) (*azureADConfig, *rejection) {
	kinds := []namedSet{{"managedIdentity", az.ManagedIdentity != nil}, {"oauth", az.OAuth != nil}, {"sdk", az.SDK != nil}, {"workloadIdentity", az.WorkloadIdentity != nil}}
	if rej := exclusive(field, kinds); rej != nil {
		return nil, rej
	}
	out := &azureADConfig{}
	if az.Cloud != nil {
		out.Cloud = *az.Cloud
	}
	if az.Scope != nil {
		out.Scope = *az.Scope
	}
	switch {
	case az.ManagedIdentity != nil:
		out.ManagedIdentity = &azureManagedIdentity{}
		if id := az.ManagedIdentity.ClientID; id != nil {
			out.ManagedIdentity.ClientID = *id
		}
	case az.OAuth != nil:
		secret, rej := g.secretValue(g.prom.Namespace, field+".oauth.clientSecret", &az.OAuth.ClientSecret)
		if rej != nil {
			return nil, rej
		}
		out.OAuth = &azureOAuth{ClientID: az.OAuth.ClientID, ClientSecret: secret, TenantID: az.OAuth.TenantID}
	case az.SDK != nil:
		out.SDK = &azureSDK{}
		if id := az.SDK.TenantID; id != nil {
			out.SDK.TenantID = *id
		}
	case az.WorkloadIdentity != nil:
		out.WorkloadIdentity = &azureWorkloadIdentity{ClientID: az.WorkloadIdentity.ClientID, TenantID: az.WorkloadIdentity.TenantID}
	default:
		return nil, reject(ReasonInvalidConfig, "%s: one of managedIdentity, oauth, sdk or workloadIdentity is required", field)
	}
	return out, nil
}

// remoteRead renders one entry of spec.remoteRead (at field) for Prometheus v.
func (g *generator) remoteRead(field string, v workload.Version, rr *monitoringv1.RemoteReadSpec) (*remoteReadEndpoint, *rejection) {
	if rej := checkGates(v, field, []versionGate{
		{"name", rr.Name != "", 2, 15},
		{"headers", len(rr.Headers) > 0, 2, 26},
		{"filterExternalLabels", rr.FilterExternalLabels != nil, 2, 34},
	}); rej != nil {
		return nil, rej
	}
	if rej := exclusive(field, []namedSet{
		{"basicAuth", rr.BasicAuth != nil}, {"authorization", rr.Authorization != nil}, {"oauth2", rr.OAuth2 != nil},
		{"bearerToken", rr.BearerToken != ""}, {"bearerTokenFile", rr.BearerTokenFile != ""},
	}); rej != nil {
		return nil, rej
	}
	out := &remoteReadEndpoint{Name: rr.Name, Headers: rr.Headers, ReadRecent: rr.ReadRecent, RequiredMatchers: rr.RequiredMatchers,
		FilterExternalLabels: rr.FilterExternalLabels}
	var rej *rejection
	if out.URL, rej = remoteURL(field, rr.URL); rej != nil {
		return nil, rej
	}
	if out.RemoteTimeout, rej = optionalDuration(field+".remoteTimeout", rr.RemoteTimeout); rej != nil {
		return nil, rej
	}
	if out.HTTPClient, rej = g.remoteClient(field, v, remoteClientSpec{
		basicAuth: rr.BasicAuth, authorization: rr.Authorization, oauth2: rr.OAuth2,
		bearerToken: rr.BearerToken, bearerTokenFile: rr.BearerTokenFile,
		tls: rr.TLSConfig, proxy: &rr.ProxyConfig, followRedirects: rr.FollowRedirects,
	}); rej != nil {
		return nil, rej
	}
	return out, nil
}

// optionalDuration checks a duration field; unset or empty leaves Prometheus's default.
func optionalDuration(field string, d *monitoringv1.Duration) (string, *rejection) {
	if d == nil || *d == "" {
		return "", nil
	}
	if _, err := parseDuration(string(*d)); err != nil {
		return "", reject(ReasonInvalidDuration, "%s: %v", field, err)
	}
	return string(*d), nil
}

// namedSet is a field and whether it is set, for exclusive.
type namedSet struct {
	name string
	set  bool
}

// exclusive refuses more than one of the fields set at once.
func exclusive(field string, fields []namedSet) *rejection {
	var set []string
	for _, f := range fields {
		if f.set {
			set = append(set, f.name)
		}
	}
	if len(set) > 1 {
		return reject(ReasonInvalidConfig, "%s: %s cannot be set together; choose one", field, strings.Join(set, " and "))
	}
	return nil
}
