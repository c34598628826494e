package scrape

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/relabel"
	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// AlertingError means the alerting section cannot be rendered: spec.alerting, or the additional
// alertmanager or alert relabel configs, hold something Lookout or Prometheus's loader refuses.
// Unlike a monitor's jobs it cannot be left out alone (alerts would silently go nowhere, or
// carry the replica label), so no config is produced; the caller reports it (Reconciled=False)
// and keeps the config it applied before.
type AlertingError struct {
	Reason  string // one of the ReasonInvalidAlerting... constants: it names the field
	Message string // starts with the path of the field
}

func (e *AlertingError) Error() string { return e.Message }

// Reasons of an AlertingError.
const (
	ReasonInvalidAlerting                      = "InvalidAlerting"                      // spec.alerting
	ReasonInvalidAdditionalAlertManagerConfigs = "InvalidAdditionalAlertManagerConfigs" // spec.additionalAlertManagerConfigs
	ReasonInvalidAdditionalAlertRelabelConfigs = "InvalidAdditionalAlertRelabelConfigs" // spec.additionalAlertRelabelConfigs
)

const (
	additionalAlertManagerConfigsField = "spec.additionalAlertManagerConfigs"
	additionalAlertRelabelConfigsField = "spec.additionalAlertRelabelConfigs"
)

// alertingDocument is the alerting section as written, after scrape_configs.
type alertingDocument struct {
	Alerting *alertingSection `yaml:"alerting"`
}

// alertingSection holds generated items (*relabelRule, *alertmanagerEndpoint) followed by the
// additional ones as given (yaml.MapSlice).
type alertingSection struct {
	AlertRelabelConfigs []any `yaml:"alert_relabel_configs,omitempty"`
	Alertmanagers       []any `yaml:"alertmanagers,omitempty"`
}

// alertmanagerEndpoint is one entry of alerting.alertmanagers; field order follows the existing
// operator's.
type alertmanagerEndpoint struct {
	Scheme              string               `yaml:"scheme,omitempty"`
	PathPrefix          string               `yaml:"path_prefix,omitempty"`
	Timeout             string               `yaml:"timeout,omitempty"`
	EnableHTTP2         *bool                `yaml:"enable_http2,omitempty"`
	TLSConfig           *tlsConfig           `yaml:"tls_config,omitempty"`
	Proxy               proxyConfig          `yaml:",inline"`
	KubernetesSDConfigs []kubernetesSDConfig `yaml:"kubernetes_sd_configs"`
	BearerTokenFile     string               `yaml:"bearer_token_file,omitempty"`
	BasicAuth           *basicAuth           `yaml:"basic_auth,omitempty"`
	Authorization       *authorization       `yaml:"authorization,omitempty"`
	SigV4               *sigv4Config         `yaml:"sigv4,omitempty"`
	APIVersion          string               `yaml:"api_version"`
	RelabelConfigs      []*relabelRule       `yaml:"relabel_configs"`
	AlertRelabelConfigs []*relabelRule       `yaml:"alert_relabel_configs,omitempty"`
}

type sigv4Config struct {
	Region             string `yaml:"region,omitempty"`
	AccessKey          string `yaml:"access_key,omitempty"`
	SecretKey          string `yaml:"secret_key,omitempty"`
	Profile            string `yaml:"profile,omitempty"`
	RoleARN            string `yaml:"role_arn,omitempty"`
	ExternalID         string `yaml:"external_id,omitempty"`
	UseFIPSSTSEndpoint bool   `yaml:"use_fips_sts_endpoint,omitempty"`
}

// alertingParts is the alerting section in its three parts, kept apart so that a refusal can be
// put on the part at fault.
type alertingParts struct {
	generatedRelabel []any // the replica label drop
	endpoints        []any // spec.alerting.alertmanagers, one each
	relabel          []yaml.MapSlice
	alertmanagers    []yaml.MapSlice
	namespaces       []string // discovered in by the endpoints
}

// alerting renders the alerting section (nil when the Prometheus sends no alerts anywhere) and
// checks it with Prometheus's loader under the global section. It also returns the namespaces
// the alertmanagers of spec.alerting are discovered in.
func (g *generator) alerting(in Input, cache *Cache) ([]byte, []string, *AlertingError) {
	spec := &g.prom.Spec
	if spec.Alerting == nil && spec.AdditionalAlertManagerConfigs == nil && spec.AdditionalAlertRelabelConfigs == nil &&
		len(in.AdditionalAlertManagerConfigs) == 0 && len(in.AdditionalAlertRelabelConfigs) == 0 {
		return nil, nil, nil
	}
	var parts alertingParts
	// The replicas of one Prometheus send the same alerts; without the label Alertmanager
	// deduplicates them.
	replica := defaultReplicaLabelName
	if n := spec.ReplicaExternalLabelName; n != nil {
		replica = *n
	}
	if replica != "" {
		parts.generatedRelabel = append(parts.generatedRelabel, &relabelRule{Regex: ptr(regexp.QuoteMeta(replica)), Action: string(relabel.LabelDrop)})
	}
	if g.retainsShards() {
		for _, r := range g.retiredShardAlertDrop() {
			parts.generatedRelabel = append(parts.generatedRelabel, r)
		}
	}
	if a := spec.Alerting; a != nil {
		for i := range a.Alertmanagers {
			e, rej := g.alertmanager(fmt.Sprintf("spec.alerting.alertmanagers[%d]", i), &a.Alertmanagers[i])
			if rej != nil {
				return nil, nil, &AlertingError{Reason: ReasonInvalidAlerting, Message: rej.message}
			}
			parts.endpoints = append(parts.endpoints, e)
			parts.namespaces = append(parts.namespaces, e.KubernetesSDConfigs[0].Namespaces.Names...)
		}
	}
	var msg string
	if parts.relabel, msg = yamlList(in.AdditionalAlertRelabelConfigs, "relabel config", "source_labels"); msg != "" {
		return nil, nil, &AlertingError{Reason: ReasonInvalidAdditionalAlertRelabelConfigs, Message: additionalAlertRelabelConfigsField + ": " + msg}
	}
	if parts.alertmanagers, msg = yamlList(in.AdditionalAlertManagerConfigs, "alertmanager config", "static_configs"); msg != "" {
		return nil, nil, &AlertingError{Reason: ReasonInvalidAdditionalAlertManagerConfigs, Message: additionalAlertManagerConfigsField + ": " + msg}
	}
	if len(parts.generatedRelabel)+len(parts.endpoints)+len(parts.relabel)+len(parts.alertmanagers) == 0 {
		return nil, nil, nil
	}

	shipped, err := parts.marshal(false)
	if err != nil {
		return nil, nil, &AlertingError{Reason: ReasonInvalidAlerting, Message: fmt.Sprintf("cannot encode the alerting section: %v", err)}
	}
	check, err := parts.marshal(true)
	if err != nil {
		return nil, nil, &AlertingError{Reason: ReasonInvalidAlerting, Message: fmt.Sprintf("cannot encode the alerting section: %v", err)}
	}
	// Loaded once per content while the generator stays the same.
	sum := sha256.Sum256(check)
	if sum != cache.alerting {
		if err := g.loadTail(check); err != nil {
			return nil, nil, g.refusedAlerting(&parts, err)
		}
		cache.alerting = sum
	}
	return shipped, parts.namespaces, nil
}

// marshal writes the section; for the loader of this binary (check) without the discovery
// mechanisms it does not link.
func (p *alertingParts) marshal(check bool) ([]byte, error) {
	s := &alertingSection{AlertRelabelConfigs: p.generatedRelabel, Alertmanagers: p.endpoints}
	for _, r := range p.relabel {
		s.AlertRelabelConfigs = append(s.AlertRelabelConfigs, r)
	}
	for _, am := range p.alertmanagers {
		if check {
			am = checkable(am)
		}
		s.Alertmanagers = append(s.Alertmanagers, am)
	}
	return yaml.Marshal(&alertingDocument{Alerting: s})
}

// loadTail loads the global section followed by tail.
func (g *generator) loadTail(tail []byte) error {
	doc := make([]byte, 0, len(g.globalYAML)+len(tail))
	doc = append(append(doc, g.globalYAML...), tail...)
	_, err := config.Load(string(doc), discardLogger)
	return err
}

// refusedAlerting puts the loader's refusal (err) of the whole section on the part at fault:
// the generated part, else the first additional item refused on its own.
func (g *generator) refusedAlerting(p *alertingParts, err error) *AlertingError {
	alone := func(relabel, alertmanagers []any) error {
		b, merr := yaml.Marshal(&alertingDocument{Alerting: &alertingSection{AlertRelabelConfigs: relabel, Alertmanagers: alertmanagers}})
		if merr != nil {
			return merr
		}
		return g.loadTail(b)
	}
	if gerr := alone(p.generatedRelabel, p.endpoints); gerr != nil {
		for i, e := range p.endpoints {
			if eerr := alone(nil, []any{e}); eerr != nil {
				return &AlertingError{Reason: ReasonInvalidAlerting,
					Message: fmt.Sprintf("spec.alerting.alertmanagers[%d]: Prometheus refuses the generated alertmanager config: %s", i, loaderMessage(eerr))}
			}
		}
		return &AlertingError{Reason: ReasonInvalidAlerting, Message: "spec.alerting: Prometheus refuses the generated alerting section: " + loaderMessage(gerr)}
	}
	for i, r := range p.relabel {
		if rerr := alone([]any{r}, nil); rerr != nil {
			return &AlertingError{Reason: ReasonInvalidAdditionalAlertRelabelConfigs,
				Message: fmt.Sprintf("%s: item %d: Prometheus refuses it: %s", additionalAlertRelabelConfigsField, i, loaderMessage(rerr))}
		}
	}
	for i, am := range p.alertmanagers {
		if aerr := alone(nil, []any{checkable(am)}); aerr != nil {
			return &AlertingError{Reason: ReasonInvalidAdditionalAlertManagerConfigs,
				Message: fmt.Sprintf("%s: item %d: Prometheus refuses it: %s", additionalAlertManagerConfigsField, i, loaderMessage(aerr))}
		}
	}
	reason := ReasonInvalidAdditionalAlertManagerConfigs
	if len(p.alertmanagers) == 0 {
		reason = ReasonInvalidAdditionalAlertRelabelConfigs
	}
	return &AlertingError{Reason: reason, Message: "Prometheus refuses the alerting section with the additional configs: " + loaderMessage(err)}
}

// alertmanager renders one entry of spec.alerting.alertmanagers (at field): Kubernetes discovery
// of the named Service's endpoints in its namespace, kept to the given port. Credentials are
// read in the Prometheus's namespace, like every Secret its spec names.
func (g *generator) alertmanager(field string, am *monitoringv1.AlertmanagerEndpoints) (*alertmanagerEndpoint, *rejection) {
	ns := g.prom.Namespace
	if am.Name == "" {
		return nil, reject(ReasonInvalidConfig, "%s.name: the Service name is required", field)
	}
	target := ns
	if am.Namespace != nil {
		if target = *am.Namespace; target == "" {
			return nil, reject(ReasonInvalidConfig, "%s.namespace: must not be empty; leave it out for the Prometheus's namespace", field)
		}
	}
	if rej := exclusive(field, []namedSet{{"basicAuth", am.BasicAuth != nil}, {"bearerTokenFile", am.BearerTokenFile != ""},
		{"authorization", am.Authorization != nil}, {"sigv4", am.Sigv4 != nil}}); rej != nil {
		return nil, rej
	}
	if err := am.ProxyConfig.Validate(); err != nil {
		return nil, reject(ReasonInvalidConfig, "%s: %v", field, err)
	}

	out := &alertmanagerEndpoint{
		EnableHTTP2:         am.EnableHttp2,
		KubernetesSDConfigs: []kubernetesSDConfig{g.kubernetesSD(g.role, &sdNamespaces{Names: []string{target}})},
		BearerTokenFile:     am.BearerTokenFile,
	}
	var rej *rejection
	if out.Scheme, rej = schemeOf(field+".scheme", am.Scheme); rej != nil {
		return nil, rej
	}
	if am.PathPrefix != nil {
		out.PathPrefix = *am.PathPrefix
	}
	if am.Timeout != nil {
		out.Timeout = string(*am.Timeout)
		if _, err := parseDuration(out.Timeout); err != nil {
			return nil, reject(ReasonInvalidDuration, "%s.timeout: %v", field, err)
		}
	}
	if out.TLSConfig, rej = g.endpointTLS(ns, field+".tlsConfig", am.TLSConfig, nil); rej != nil {
		return nil, rej
	}
	if out.Proxy, rej = g.proxy(ns, field, &am.ProxyConfig); rej != nil {
		return nil, rej
	}
	if am.BasicAuth != nil {
		if out.BasicAuth, rej = g.basicAuth(ns, field+".basicAuth", am.BasicAuth); rej != nil {
			return nil, rej
		}
	}
	if am.Authorization != nil {
		if out.Authorization, rej = g.authorization(ns, field+".authorization", am.Authorization); rej != nil {
			return nil, rej
		}
	}
	if am.Sigv4 != nil {
		if out.SigV4, rej = g.sigv4(ns, field+".sigv4", am.Sigv4); rej != nil {
			return nil, rej
		}
	}
	if out.APIVersion, rej = g.alertmanagerAPIVersion(field+".apiVersion", am.APIVersion); rej != nil {
		return nil, rej
	}

	keepPort, rej := g.alertmanagerPort(field+".port", am.Port)
	if rej != nil {
		return nil, rej
	}
	out.RelabelConfigs = []*relabelRule{keepRule(am.Name, "__meta_kubernetes_service_name"), keepPort}
	user, rej := g.userRelabelings(field+".relabelings", am.RelabelConfigs)
	if rej != nil {
		return nil, rej
	}
	out.RelabelConfigs = append(out.RelabelConfigs, user...)
	if len(am.AlertRelabelConfigs) > 0 {
		if out.AlertRelabelConfigs, rej = g.userRelabelings(field+".alertRelabelings", am.AlertRelabelConfigs); rej != nil {
			return nil, rej
		}
	}
	return out, nil
}

// alertmanagerPort keeps the endpoints of the port: a Service port name, or (as the existing
// operator does) a number matched against the pod's container port.
func (g *generator) alertmanagerPort(field string, port intstr.IntOrString) (*relabelRule, *rejection) {
	if port.Type == intstr.Int {
		if port.IntVal < 1 || port.IntVal > 65535 {
			return nil, reject(ReasonInvalidPort, "%s: %d is not a port number between 1 and 65535", field, port.IntVal)
		}
		return keepRule(strconv.Itoa(int(port.IntVal)), "__meta_kubernetes_pod_container_port_number"), nil
	}
	if port.StrVal == "" {
		return nil, reject(ReasonInvalidPort, "%s: the Service port name or number is required", field)
	}
	if errs := validation.IsDNS1123Label(port.StrVal); len(errs) > 0 {
		return nil, reject(ReasonInvalidPort, "%s: %q is not a valid Service port name: %s", field, port.StrVal, strings.Join(errs, "; "))
	}
	return keepRule(port.StrVal, roleMetaLabels[g.role].portName), nil
}

// alertmanagerAPIVersion is the api_version written: always v2. Prometheus v3 speaks only the
// v2 API, and the API documents that apiVersion has no effect there; a Prometheus v2 asked for
// the v1 API is refused, since this binary's loader (v3) cannot check such a config.
func (g *generator) alertmanagerAPIVersion(field string, v *monitoringv1.AlertmanagerAPIVersion) (string, *rejection) {
	if v == nil {
		return "v2", nil
	}
	switch monitoringv1.AlertmanagerAPIVersion(strings.ToUpper(string(*v))) {
	case monitoringv1.AlertmanagerAPIVersion2:
		return "v2", nil
	case monitoringv1.AlertmanagerAPIVersion1:
		if version := strings.TrimPrefix(g.prom.Spec.Version, "v"); version == "2" || strings.HasPrefix(version, "2.") {
			return "", reject(ReasonUnsupported, "%s: the Alertmanager v1 API with Prometheus %s is not supported by Lookout; use V2 (Alertmanager has served it since v0.16)", field, g.prom.Spec.Version)
		}
		return "v2", nil
	}
	return "", reject(ReasonInvalidConfig, "%s: %q is neither V1 nor V2", field, string(*v))
}

// sigv4 renders AWS Signature Version 4 signing; the access and secret keys come from Secrets.
func (g *generator) sigv4(ns, field string, s *monitoringv1.Sigv4) (*sigv4Config, *rejection) {
	if (s.AccessKey == nil) != (s.SecretKey == nil) {
		return nil, reject(ReasonInvalidConfig, "%s: accessKey and secretKey must be set together", field)
	}
	out := &sigv4Config{Region: s.Region, Profile: s.Profile, RoleARN: s.RoleArn, ExternalID: s.ExternalID}
	if s.UseFIPSSTSEndpoint != nil {
		out.UseFIPSSTSEndpoint = *s.UseFIPSSTSEndpoint
	}
	if s.AccessKey != nil {
		var rej *rejection
		if out.AccessKey, rej = g.secretValue(ns, field+".accessKey", s.AccessKey); rej != nil {
			return nil, rej
		}
		if out.SecretKey, rej = g.secretValue(ns, field+".secretKey", s.SecretKey); rej != nil {
			return nil, rej
		}
	}
	return out, nil
}

// retiredShardLabel carries the shard number through the alert relabeling, and no further.
const retiredShardLabel = "__tmp_lookout_shard"

// retiredShardAlertDrop drops every alert of a shard kept after a scale-down: its rules
// still run, on data no one scrapes any more, and an alert on missing series (absent(),
// a rate falling to zero) would fire from there. The shard number is the reloader's
// $(SHARD), as in the scrape sharding; the current shards are 0 to spec.shards-1.
func (g *generator) retiredShardAlertDrop() []*relabelRule {
	current := make([]string, 0, g.shards)
	for i := range g.shards {
		current = append(current, strconv.FormatUint(i, 10))
	}
	return []*relabelRule{
		{TargetLabel: retiredShardLabel, Replacement: ptr(shardPlaceholder), Action: string(relabel.Replace)},
		{SourceLabels: []string{retiredShardLabel}, Regex: ptr(strings.Join(current, "|")), Action: string(relabel.Keep)},
		{Regex: ptr(retiredShardLabel), Action: string(relabel.LabelDrop)},
	}
}
