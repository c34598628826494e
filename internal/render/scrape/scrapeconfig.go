package scrape

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	scrapeConfigKind          = monitoringv1alpha1.ScrapeConfigsKind
	scrapeConfigJobNamePrefix = "scrapeConfig"
	roleNode                  = "node"
)

// supportedSDFields are the ScrapeConfigSpec discovery fields Lookout renders, by Go field name.
// Every other field whose name ends in SDConfigs rejects the ScrapeConfig, so that a discovery
// mechanism added to the API later is refused rather than silently dropped.
var supportedSDFields = map[string]bool{
	"FileSDConfigs":         true,
	"HTTPSDConfigs":         true,
	"KubernetesSDConfigs":   true,
	"DNSSDConfigs":          true,
	"ConsulSDConfigs":       true,
	"EC2SDConfigs":          true,
	"AzureSDConfigs":        true,
	"GCESDConfigs":          true,
	"OpenStackSDConfigs":    true,
	"DigitalOceanSDConfigs": true,
	"KumaSDConfigs":         true,
	"EurekaSDConfigs":       true,
	"DockerSDConfigs":       true,
	"LinodeSDConfigs":       true,
	"HetznerSDConfigs":      true,
	"NomadSDConfigs":        true,
	"DockerSwarmSDConfigs":  true,
	"PuppetDBSDConfigs":     true,
	"LightSailSDConfigs":    true,
	"OVHCloudSDConfigs":     true,
	"ScalewaySDConfigs":     true,
	"IonosSDConfigs":        true,
}

// kubernetesRoles are the Prometheus roles of the API's KubernetesRole values.
var kubernetesRoles = map[monitoringv1alpha1.KubernetesRole]string{
	monitoringv1alpha1.KubernetesRolePod:           rolePod,
	monitoringv1alpha1.KubernetesRoleEndpoint:      roleEndpoints,
	monitoringv1alpha1.KubernetesRoleEndpointSlice: roleEndpointSlice,
	monitoringv1alpha1.KubernetesRoleService:       "service",
	monitoringv1alpha1.KubernetesRoleNode:          roleNode,
	monitoringv1alpha1.KubernetesRoleIngress:       roleIngress,
}

// scrapeConfigJobs renders the one job of a ScrapeConfig. Unlike the monitors, a ScrapeConfig
// spells out its discovery itself; Lookout adds only what it adds to every job: the original job
// name, the job label (spec.jobName), the scrape class, the enforced namespace label, sharding
// and the enforced limits.
func (g *generator) scrapeConfigJobs(sc *monitoringv1alpha1.ScrapeConfig) ([]*scrapeJob, discovery, *rejection) {
	spec := &sc.Spec
	mc := &monitorContext{namespace: sc.Namespace, name: sc.Name}
	var rej *rejection

	if rej = unsupportedDiscovery(spec); rej != nil {
		return nil, discovery{}, rej
	}
	if mc.class, rej = g.scrapeClass(spec.ScrapeClassName); rej != nil {
		return nil, discovery{}, rej
	}
	job := &scrapeJob{JobName: fmt.Sprintf("%s/%s/%s", scrapeConfigJobNamePrefix, sc.Namespace, sc.Name)}
	g.honor(job, spec.HonorLabels != nil && *spec.HonorLabels, spec.HonorTimestamps, spec.TrackTimestampsStaleness)

	disc, rej := g.scrapeConfigDiscovery(job, sc)
	if rej != nil {
		return nil, discovery{}, rej
	}

	var interval, timeout monitoringv1.Duration
	if spec.ScrapeInterval != nil {
		interval = *spec.ScrapeInterval
	}
	if spec.ScrapeTimeout != nil {
		timeout = *spec.ScrapeTimeout
	}
	if rej = g.scrapeTimingAt(job, "scrapeInterval", "scrapeTimeout", interval, timeout); rej != nil {
		return nil, discovery{}, rej
	}
	if spec.MetricsPath != nil {
		job.MetricsPath = *spec.MetricsPath
	}
	if len(spec.Params) > 0 {
		job.Params = spec.Params
	}
	job.EnableCompression = spec.EnableCompression

	hc := monitoringv1.HTTPConfigWithProxyAndTLSFiles{
		HTTPConfigWithTLSFiles: monitoringv1.HTTPConfigWithTLSFiles{HTTPConfigWithoutTLS: monitoringv1.HTTPConfigWithoutTLS{
			Authorization: spec.Authorization,
			BasicAuth:     spec.BasicAuth,
			OAuth2:        spec.OAuth2,
			EnableHTTP2:   spec.EnableHTTP2,
		}},
		ProxyConfig: spec.ProxyConfig,
	}
	hc.TLSConfig = withoutFiles(spec.TLSConfig)
	if rej = g.endpointHTTP(job, sc.Namespace, "", spec.Scheme, &hc, "", mc.class); rej != nil {
		return nil, discovery{}, rej
	}

	if spec.NameValidationScheme != nil {
		scheme, err := nameValidationScheme(*spec.NameValidationScheme)
		if err != nil {
			return nil, discovery{}, reject(ReasonInvalidConfig, "nameValidationScheme: %v", err)
		}
		job.MetricNameValidationScheme = scheme.String()
	}
	if spec.NameEscapingScheme != nil {
		var err error
		if job.MetricNameEscapingScheme, err = nameEscapingScheme(*spec.NameEscapingScheme); err != nil {
			return nil, discovery{}, reject(ReasonInvalidConfig, "nameEscapingScheme: %v", err)
		}
	}

	userRelabel, rej := g.userRelabelings("relabelings", spec.RelabelConfigs)
	if rej != nil {
		return nil, discovery{}, rej
	}
	userMetric, rej := g.userRelabelings("metricRelabelings", spec.MetricRelabelConfigs)
	if rej != nil {
		return nil, discovery{}, rej
	}
	if rej = g.classRelabelings(mc); rej != nil {
		return nil, discovery{}, rej
	}
	mc.enforceNS = g.enforceNamespaceLabel(monitoringv1alpha1.ScrapeConfigName, sc.Namespace, sc.Name)
	if rej = g.monitorLimits(mc, &limitFields{
		sampleLimit:            spec.SampleLimit,
		targetLimit:            spec.TargetLimit,
		labelLimit:             spec.LabelLimit,
		labelNameLengthLimit:   spec.LabelNameLengthLimit,
		labelValueLengthLimit:  spec.LabelValueLengthLimit,
		keepDroppedTargets:     spec.KeepDroppedTargets,
		histograms:             &spec.NativeHistogramConfig,
		scrapeProtocols:        spec.ScrapeProtocols,
		fallbackScrapeProtocol: spec.FallbackScrapeProtocol,
		bodySizeLimit:          spec.BodySizeLimit,
	}); rej != nil {
		return nil, discovery{}, rej
	}

	rules := make([]*relabelRule, 0, 6+len(mc.classRelabel)+len(userRelabel))
	rules = append(rules, copyRule("job", "__tmp_prometheus_job_name"))
	if spec.JobName != nil {
		if *spec.JobName == "" {
			return nil, discovery{}, reject(ReasonInvalidConfig, "jobName: must not be empty when set")
		}
		rules = append(rules, setRule("job", *spec.JobName))
	}
	rules = append(rules, mc.classRelabel...)
	rules = append(rules, userRelabel...)
	if mc.enforceNS {
		rules = append(rules, setRule(g.prom.Spec.EnforcedNamespaceLabel, sc.Namespace))
	}
	// As with the existing operator, a ScrapeConfig gets sharding rules only when the targets
	// are spread over shards (unlike the monitors' jobs, which always carry them), and a job
	// that shards itself (a hashmod relabeling of its own) is left to it: a second hashmod
	// would re-hash the first one's result.
	if g.sharded() && !hasHashmod(userRelabel) {
		rules = append(rules, shardingRules(g.shards, "__address__")...)
	}
	job.RelabelConfigs = rules

	g.finishJob(job, mc, userMetric)
	return []*scrapeJob{job}, disc, nil
}

// unsupportedDiscovery rejects a ScrapeConfig using a discovery mechanism Lookout does not
// render (every one of the API is rendered; this is for those a later API adds): dropping it
// would silently scrape less than the user asked for.
func unsupportedDiscovery(spec *monitoringv1alpha1.ScrapeConfigSpec) *rejection {
	return discoveryOutside(spec, supportedSDFields)
}

// discoveryOutside rejects a ScrapeConfig using a discovery field not in supported.
func discoveryOutside(spec *monitoringv1alpha1.ScrapeConfigSpec, supported map[string]bool) *rejection {
	var fields []string
	v := reflect.ValueOf(spec).Elem()
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !strings.HasSuffix(f.Name, "SDConfigs") || supported[f.Name] || v.Field(i).Len() == 0 {
			continue
		}
		fields = append(fields, jsonName(f))
	}
	if len(fields) > 0 {
		return reject(ReasonUnsupported, "%s: not supported by Lookout yet", strings.Join(fields, ", "))
	}
	if len(spec.DNSSDConfigs) > 0 && !sdLinked("dns") {
		return reject(ReasonUnsupported, "dnsSDConfigs: not supported by this build of Lookout (Prometheus's DNS discovery is not linked in)")
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// scrapeConfigDiscovery writes the ScrapeConfig's targets and discovery configs into job, in
// the order of the API's fields, and returns what Prometheus must be allowed to discover in
// this cluster.
func (g *generator) scrapeConfigDiscovery(job *scrapeJob, sc *monitoringv1alpha1.ScrapeConfig) (discovery, *rejection) {
	spec := &sc.Spec
	for i := range spec.StaticConfigs {
		static, rej := g.scrapeConfigStatic(fmt.Sprintf("staticConfigs[%d]", i), &spec.StaticConfigs[i])
		if rej != nil {
			return discovery{}, rej
		}
		job.StaticConfigs = append(job.StaticConfigs, static)
	}

	if len(spec.FileSDConfigs) > 0 && g.prom.Spec.ArbitraryFSAccessThroughSMs.Deny {
		return discovery{}, reject(ReasonFileAccessDenied, "fileSDConfigs: reading files from the Prometheus container is denied by the Prometheus's arbitraryFSAccessThroughSMs.deny")
	}
	for i := range spec.FileSDConfigs {
		fc := &spec.FileSDConfigs[i]
		field := fmt.Sprintf("fileSDConfigs[%d]", i)
		out := fileSDConfig{Files: make([]string, 0, len(fc.Files))}
		for j, f := range fc.Files {
			if f == "" {
				return discovery{}, reject(ReasonInvalidConfig, "%s.files[%d]: the file name is empty", field, j)
			}
			out.Files = append(out.Files, string(f))
		}
		var rej *rejection
		if out.RefreshInterval, rej = refreshInterval(field, fc.RefreshInterval); rej != nil {
			return discovery{}, rej
		}
		job.FileSDConfigs = append(job.FileSDConfigs, out)
	}

	for i := range spec.HTTPSDConfigs {
		hc := &spec.HTTPSDConfigs[i]
		field := fmt.Sprintf("httpSDConfigs[%d]", i)
		if rej := httpSDURL(field+".url", string(hc.URL)); rej != nil {
			return discovery{}, rej
		}
		out := httpSDConfig{URL: string(hc.URL)}
		var rej *rejection
		if out.RefreshInterval, rej = refreshInterval(field, hc.RefreshInterval); rej != nil {
			return discovery{}, rej
		}
		if out.HTTPClient, rej = g.sdHTTPClient(sc.Namespace, field, sdHTTP{
			basicAuth: hc.BasicAuth, authorization: hc.Authorization, oauth2: hc.OAuth2, proxy: &hc.ProxyConfig,
			tls: hc.TLSConfig, followRedirects: hc.FollowRedirects, enableHTTP2: hc.EnableHTTP2,
		}); rej != nil {
			return discovery{}, rej
		}
		job.HTTPSDConfigs = append(job.HTTPSDConfigs, out)
	}

	var disc discovery
	namespaces := map[string]struct{}{}
	for i := range spec.KubernetesSDConfigs {
		out, d, rej := g.scrapeConfigKubernetes(sc.Namespace, fmt.Sprintf("kubernetesSDConfigs[%d]", i), &spec.KubernetesSDConfigs[i])
		if rej != nil {
			return discovery{}, rej
		}
		job.KubernetesSDConfigs = append(job.KubernetesSDConfigs, out)
		disc.all = disc.all || d.all
		disc.nodes = disc.nodes || d.nodes
		for _, ns := range d.namespaces {
			namespaces[ns] = struct{}{}
		}
	}
	if len(namespaces) > 0 {
		disc.namespaces = sortedKeys(namespaces)
	}

	for i := range spec.DNSSDConfigs {
		dc := &spec.DNSSDConfigs[i]
		field := fmt.Sprintf("dnsSDConfigs[%d]", i)
		out := dnsSDConfig{Names: make([]string, 0, len(dc.Names))}
		for j, n := range dc.Names {
			if strings.TrimSpace(n) == "" {
				return discovery{}, reject(ReasonInvalidConfig, "%s.names[%d]: the name is empty", field, j)
			}
			out.Names = append(out.Names, n)
		}
		var rej *rejection
		if out.RefreshInterval, rej = refreshInterval(field, dc.RefreshInterval); rej != nil {
			return discovery{}, rej
		}
		if dc.Type != nil {
			out.Type = string(*dc.Type)
		}
		if dc.Port != nil {
			if *dc.Port < 1 || *dc.Port > 65535 {
				return discovery{}, reject(ReasonInvalidPort, "%s.port: %d is not a port number between 1 and 65535", field, *dc.Port)
			}
			out.Port = *dc.Port
		}
		job.DNSSDConfigs = append(job.DNSSDConfigs, out)
	}
	if rej := g.sdMechanisms(job, sc.Namespace, spec); rej != nil {
		return discovery{}, rej
	}
	return disc, nil
}

// scrapeConfigStatic is one static_configs entry, written as given.
func (g *generator) scrapeConfigStatic(field string, sc *monitoringv1alpha1.StaticConfig) (staticConfig, *rejection) {
	out := staticConfig{Targets: make([]string, 0, len(sc.Targets))}
	for i, t := range sc.Targets {
		if strings.TrimSpace(string(t)) == "" {
			return staticConfig{}, reject(ReasonInvalidConfig, "%s.targets[%d]: the target is empty", field, i)
		}
		out.Targets = append(out.Targets, string(t))
	}
	if len(sc.Labels) > 0 {
		out.Labels = make(map[string]string, len(sc.Labels))
		for _, name := range sortedKeys(sc.Labels) {
			if !g.nameScheme.IsValidLabelName(name) {
				return staticConfig{}, reject(ReasonInvalidConfig, "%s.labels: %q is not a valid label name", field, name)
			}
			out.Labels[name] = sc.Labels[name]
		}
	}
	return out, nil
}

// scrapeConfigKubernetes is one kubernetes_sd_configs entry, and what Prometheus must be allowed
// to discover for it: nothing when it talks to another API server.
func (g *generator) scrapeConfigKubernetes(ns, field string, kc *monitoringv1alpha1.KubernetesSDConfig) (kubernetesSDConfig, discovery, *rejection) {
	role, ok := kubernetesRoles[kc.Role]
	if !ok {
		return kubernetesSDConfig{}, discovery{}, reject(ReasonInvalidConfig, "%s.role: unknown role %q (want Pod, Endpoints, EndpointSlice, Service, Node or Ingress)", field, kc.Role)
	}
	out := kubernetesSDConfig{Role: role}
	remote := kc.APIServer != nil
	if remote {
		if *kc.APIServer == "" {
			return kubernetesSDConfig{}, discovery{}, reject(ReasonInvalidConfig, "%s.apiServer: must not be empty when set", field)
		}
		out.APIServer = *kc.APIServer
	} else if kc.BasicAuth != nil || kc.Authorization != nil || kc.OAuth2 != nil || kc.TLSConfig != nil || kc.ProxyURL != nil {
		// Prometheus refuses it too, less clearly.
		return kubernetesSDConfig{}, discovery{}, reject(ReasonInvalidConfig, "%s: basicAuth, authorization, oauth2, tlsConfig and proxyUrl need apiServer; without it Prometheus uses its own service account", field)
	}
	var rej *rejection
	if out.HTTPClient, rej = g.sdHTTPClient(ns, field, sdHTTP{
		basicAuth: kc.BasicAuth, authorization: kc.Authorization, oauth2: kc.OAuth2, proxy: &kc.ProxyConfig,
		tls: kc.TLSConfig, followRedirects: kc.FollowRedirects, enableHTTP2: kc.EnableHTTP2,
	}); rej != nil {
		return kubernetesSDConfig{}, discovery{}, rej
	}

	var disc discovery
	if nd := kc.Namespaces; nd != nil && (len(nd.Names) > 0 || (nd.IncludeOwnNamespace != nil && *nd.IncludeOwnNamespace)) {
		out.Namespaces = &sdNamespaces{OwnNamespace: nd.IncludeOwnNamespace != nil && *nd.IncludeOwnNamespace}
		seen := map[string]struct{}{}
		for i, n := range nd.Names {
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				return kubernetesSDConfig{}, discovery{}, reject(ReasonInvalidConfig, "%s.namespaces.names[%d]: %q is not a valid namespace name: %s", field, i, n, strings.Join(errs, "; "))
			}
			if _, dup := seen[n]; dup {
				continue
			}
			seen[n] = struct{}{}
			out.Namespaces.Names = append(out.Namespaces.Names, n)
			disc.namespaces = append(disc.namespaces, n)
		}
		if out.Namespaces.OwnNamespace {
			// Prometheus's own namespace, where it runs.
			disc.namespaces = append(disc.namespaces, g.prom.Namespace)
		}
	} else {
		disc.all = true
	}
	if role == roleNode {
		// Nodes are not namespaced.
		disc = discovery{nodes: true}
	}

	for i, s := range kc.Selectors {
		sr, ok := kubernetesRoles[s.Role]
		if !ok {
			return kubernetesSDConfig{}, discovery{}, reject(ReasonInvalidConfig, "%s.selectors[%d].role: unknown role %q", field, i, s.Role)
		}
		sel := sdSelector{Role: sr}
		if s.Label != nil {
			sel.Label = *s.Label
		}
		if s.Field != nil {
			sel.Field = *s.Field
		}
		out.Selectors = append(out.Selectors, sel)
	}
	if kc.AttachMetadata != nil && kc.AttachMetadata.Node != nil {
		out.AttachMetadata = &sdAttachedMetadata{Node: *kc.AttachMetadata.Node}
		disc.nodes = disc.nodes || *kc.AttachMetadata.Node
	}
	if remote {
		// Another cluster's API server: nothing to grant here.
		disc = discovery{}
	}
	return out, disc, nil
}

// sdHTTP is the HTTP client part of a discovery config in the API.
type sdHTTP struct {
	basicAuth                    *monitoringv1.BasicAuth
	authorization                *monitoringv1.SafeAuthorization
	oauth2                       *monitoringv1.OAuth2
	proxy                        *monitoringv1.ProxyConfig
	tls                          *monitoringv1.SafeTLSConfig
	followRedirects, enableHTTP2 *bool
}

// sdHTTPClient renders the HTTP client of a discovery config; credentials are read in ns.
func (g *generator) sdHTTPClient(ns, field string, in sdHTTP) (httpClientConfig, *rejection) {
	hc := monitoringv1.HTTPConfig{
		HTTPConfigWithoutTLS: monitoringv1.HTTPConfigWithoutTLS{BasicAuth: in.basicAuth, Authorization: in.authorization, OAuth2: in.oauth2},
		TLSConfig:            in.tls,
	}
	if err := hc.Validate(); err != nil {
		return httpClientConfig{}, reject(ReasonInvalidConfig, "%s: %v", field, err)
	}
	if err := in.proxy.Validate(); err != nil {
		return httpClientConfig{}, reject(ReasonInvalidConfig, "%s: %v", field, err)
	}
	out := httpClientConfig{FollowRedirects: in.followRedirects, EnableHTTP2: in.enableHTTP2}
	var rej *rejection
	if in.basicAuth != nil {
		if out.BasicAuth, rej = g.basicAuth(ns, field+".basicAuth", in.basicAuth); rej != nil {
			return httpClientConfig{}, rej
		}
	}
	if in.authorization != nil {
		if out.Authorization, rej = g.authorization(ns, field+".authorization", in.authorization); rej != nil {
			return httpClientConfig{}, rej
		}
	}
	if in.oauth2 != nil {
		if out.OAuth2, rej = g.oauth2(ns, field+".oauth2", in.oauth2); rej != nil {
			return httpClientConfig{}, rej
		}
	}
	if in.tls != nil {
		if out.TLSConfig, rej = g.safeTLS(ns, field+".tlsConfig", in.tls); rej != nil {
			return httpClientConfig{}, rej
		}
	}
	if out.Proxy, rej = g.proxy(ns, field, in.proxy); rej != nil {
		return httpClientConfig{}, rej
	}
	return out, nil
}

// httpSDURL checks an HTTP discovery URL the way Prometheus does, to name the field.
func httpSDURL(field, raw string) *rejection {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return reject(ReasonInvalidConfig, "%s: the URL is required", field)
	case err != nil:
		return reject(ReasonInvalidConfig, "%s: %v", field, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return reject(ReasonInvalidConfig, "%s: %q must use http or https", field, raw)
	case u.Host == "":
		return reject(ReasonInvalidConfig, "%s: %q has no host", field, raw)
	}
	return nil
}

// refreshInterval validates a discovery config's refreshInterval; empty leaves Prometheus's
// default.
func refreshInterval(field string, d *monitoringv1.Duration) (string, *rejection) {
	return optionalDuration(field+".refreshInterval", d)
}
