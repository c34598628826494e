package scrape

import (
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

const (
	roleIngress       = "ingress"
	defaultProberPath = "/probe"
	// The label holding the Ingress address for ProbeTargetIngress.relabelingConfigs. The API
	// documents __tmp_prometheus_ingress_address, but the existing operator writes this one, and
	// relabelings written against it must keep producing the same URL.
	ingressAddressLabel = "__tmp_ingress_address"

	staticTargetsField  = "targets.staticConfig"
	ingressTargetsField = "targets.ingress"
)

// probeJobs renders the one job of a Probe: the targets (static, or discovered Ingresses) become
// the prober's `target` parameter, and the prober is what Prometheus scrapes.
func (g *generator) probeJobs(p *monitoringv1.Probe) ([]*scrapeJob, discovery, *rejection) {
	mc := &monitorContext{namespace: p.Namespace, name: p.Name, sd: g.apiServer}
	spec := &p.Spec
	var rej *rejection

	if mc.class, rej = g.scrapeClass(spec.ScrapeClassName); rej != nil {
		return nil, discovery{}, rej
	}
	job := &scrapeJob{JobName: fmt.Sprintf("%s/%s/%s", probeJobNamePrefix, p.Namespace, p.Name)}
	g.honor(job, false, nil, nil)

	// Targets. staticConfig wins when both are set, as the API documents.
	var (
		disc         discovery
		targetRules  []*relabelRule // after the job rules, before the prober rules
		userRelabel  []monitoringv1.RelabelConfig
		relabelField string
	)
	switch t := &spec.Targets; {
	case t.StaticConfig != nil:
		sc, rej := g.staticTargets(p.Namespace, t.StaticConfig)
		if rej != nil {
			return nil, discovery{}, rej
		}
		job.StaticConfigs = []staticConfig{sc}
		userRelabel, relabelField = t.StaticConfig.RelabelConfigs, staticTargetsField+".relabelingConfigs"
	case t.Ingress != nil:
		mc.sd.Role = roleIngress
		if disc, rej = g.discoveryNamespaces(ingressTargetsField+".namespaceSelector", p.Namespace, &t.Ingress.NamespaceSelector); rej != nil {
			return nil, discovery{}, rej
		}
		mc.restrictTo(disc)
		if rej = mc.selector(ingressTargetsField+".selector", "ingress", &t.Ingress.Selector, nil); rej != nil {
			return nil, discovery{}, rej
		}
		job.KubernetesSDConfigs = []kubernetesSDConfig{mc.sd}
		targetRules = append(targetRules, mc.selectorRules...)
		targetRules = append(targetRules,
			// Each Ingress rule's host and path is one target URL.
			&relabelRule{
				SourceLabels: []string{"__meta_kubernetes_ingress_scheme", "__address__", "__meta_kubernetes_ingress_path"},
				Separator:    ptr(";"),
				TargetLabel:  "__param_target",
				Regex:        ptr("(.+);(.+);(.+)"),
				Replacement:  ptr("${1}://${2}${3}"),
			},
			copyRule("__meta_kubernetes_namespace", "namespace"),
			copyRule("__meta_kubernetes_ingress_name", "ingress"),
			// Kept for user relabelings that build the probed URL themselves.
			copyRule("__address__", ingressAddressLabel),
		)
		userRelabel, relabelField = t.Ingress.RelabelConfigs, ingressTargetsField+".relabelingConfigs"
	default:
		return nil, discovery{}, reject(ReasonInvalidConfig, "targets: one of staticConfig and ingress is required")
	}

	// The prober is what is scraped; its scheme and proxy are the job's.
	prober := &spec.ProberSpec
	if rej = proberAddress(prober.URL); rej != nil {
		return nil, discovery{}, rej
	}
	job.MetricsPath = prober.Path
	if job.MetricsPath == "" {
		job.MetricsPath = defaultProberPath
	}
	if rej = g.scrapeTiming(job, "", spec.Interval, spec.ScrapeTimeout); rej != nil {
		return nil, discovery{}, rej
	}
	if job.Params, rej = probeParams(spec); rej != nil {
		return nil, discovery{}, rej
	}

	// ProbeSpec's own authorization field shadows the one of its embedded HTTPConfig; only the
	// former is reachable from YAML, but a Go caller may have set the latter.
	hc := monitoringv1.HTTPConfigWithProxyAndTLSFiles{
		HTTPConfigWithTLSFiles: monitoringv1.HTTPConfigWithTLSFiles{HTTPConfigWithoutTLS: spec.HTTPConfigWithoutTLS},
	}
	if spec.Authorization != nil {
		hc.Authorization = spec.Authorization
	}
	hc.TLSConfig = withoutFiles(spec.TLSConfig)
	if rej = g.endpointHTTP(job, p.Namespace, "", nil, &hc, "", mc.class); rej != nil {
		return nil, discovery{}, rej
	}
	if job.Scheme, rej = schemeOf("prober.scheme", prober.Scheme); rej != nil {
		return nil, discovery{}, rej
	}
	if err := prober.ProxyConfig.Validate(); err != nil {
		return nil, discovery{}, reject(ReasonInvalidConfig, "prober: %v", err)
	}
	if job.Proxy, rej = g.proxy(p.Namespace, "prober", &prober.ProxyConfig); rej != nil {
		return nil, discovery{}, rej
	}

	relabel, rej := g.userRelabelings(relabelField, userRelabel)
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
	mc.enforceNS = g.enforceNamespaceLabel(monitoringv1.ProbeName, p.Namespace, p.Name)
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
	}); rej != nil {
		return nil, discovery{}, rej
	}

	rules := make([]*relabelRule, 0, 10+len(targetRules)+len(mc.classRelabel)+len(relabel))
	rules = append(rules, copyRule("job", "__tmp_prometheus_job_name"))
	if spec.JobName != "" {
		rules = append(rules, setRule("job", spec.JobName))
	}
	rules = append(rules, targetRules...)
	if spec.Targets.StaticConfig != nil {
		rules = append(rules, copyRule("__address__", "__param_target"))
	}
	rules = append(rules,
		copyRule("__param_target", "instance"),
		setRule("__address__", prober.URL),
	)
	rules = append(rules, mc.classRelabel...)
	rules = append(rules, relabel...)
	if mc.enforceNS {
		rules = append(rules, setRule(g.prom.Spec.EnforcedNamespaceLabel, p.Namespace))
	}
	// Every target has the prober's address, so the probed target is what spreads them.
	rules = append(rules, shardingRules(g.shards, "__param_target")...)
	job.RelabelConfigs = rules

	g.finishJob(job, mc, userMetric)
	return []*scrapeJob{job}, disc, nil
}

// staticTargets is the static_configs entry of a Probe. The targets get the Probe's namespace
// as the `namespace` label unless the Probe's own labels set one.
func (g *generator) staticTargets(ns string, sc *monitoringv1.ProbeTargetStaticConfig) (staticConfig, *rejection) {
	out := staticConfig{Targets: make([]string, 0, len(sc.Targets)), Labels: map[string]string{"namespace": ns}}
	for i, t := range sc.Targets {
		if strings.TrimSpace(t) == "" {
			return staticConfig{}, reject(ReasonInvalidConfig, "%s.static[%d]: the target is empty", staticTargetsField, i)
		}
		out.Targets = append(out.Targets, t)
	}
	for _, name := range sortedKeys(sc.Labels) {
		if !g.nameScheme.IsValidLabelName(name) {
			return staticConfig{}, reject(ReasonInvalidConfig, "%s.labels: %q is not a valid label name", staticTargetsField, name)
		}
		out.Labels[name] = sc.Labels[name]
	}
	return out, nil
}

// proberAddress checks the prober's address. It becomes __address__, which Prometheus wants as
// host[:port]: a scheme or a path there would fail every scrape.
func proberAddress(addr string) *rejection {
	const field = "prober.url"
	switch {
	case strings.TrimSpace(addr) == "":
		return reject(ReasonInvalidConfig, "%s: the prober's address is required", field)
	case strings.Contains(addr, "://"):
		return reject(ReasonInvalidConfig, "%s: %q must be host:port without a scheme; set prober.scheme instead", field, addr)
	case strings.Contains(addr, "/"):
		return reject(ReasonInvalidConfig, "%s: %q must be host:port without a path; set prober.path instead", field, addr)
	}
	return nil
}

// probeParams are the query parameters sent to the prober: spec.params, with spec.module
// taking precedence over a `module` parameter, as the API documents.
func probeParams(spec *monitoringv1.ProbeSpec) (map[string][]string, *rejection) {
	if len(spec.Params) == 0 && spec.Module == "" {
		return nil, nil
	}
	out := make(map[string][]string, len(spec.Params)+1)
	for i, p := range spec.Params {
		if p.Name == "" {
			return nil, reject(ReasonInvalidConfig, "params[%d].name: the parameter name is empty", i)
		}
		if _, dup := out[p.Name]; dup {
			return nil, reject(ReasonInvalidConfig, "params[%d].name: parameter %q is given more than once", i, p.Name)
		}
		out[p.Name] = append([]string(nil), p.Values...)
	}
	if spec.Module != "" {
		out["module"] = []string{spec.Module}
	}
	return out, nil
}
