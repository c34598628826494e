package scrape

import (
	"fmt"
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/util/strutil"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const rolePod = "pod"

// podMonitorJobs renders one job per podMetricsEndpoints entry of pm, or says why pm cannot be
// rendered. The jobs have the shape of a ServiceMonitor's with discovery role pod: no Service,
// so no service/node labels, and the job label names the PodMonitor.
func (g *generator) podMonitorJobs(pm *monitoringv1.PodMonitor) ([]*scrapeJob, discovery, *rejection) {
	mc := &monitorContext{namespace: pm.Namespace, name: pm.Name, sd: g.apiServer}
	spec := &pm.Spec
	var rej *rejection

	if mc.class, rej = g.scrapeClass(spec.ScrapeClassName); rej != nil {
		return nil, discovery{}, rej
	}
	mc.sd.Role = rolePod
	disc, rej := g.discoveryNamespaces("namespaceSelector", pm.Namespace, &spec.NamespaceSelector)
	if rej != nil {
		return nil, discovery{}, rej
	}
	mc.restrictTo(disc)
	mc.attachMetadata(spec.AttachMetadata)
	disc.nodes = mc.readsNodes()

	if rej = mc.selector("selector", "pod", &spec.Selector, spec.SelectorMechanism); rej != nil {
		return nil, discovery{}, rej
	}
	if g.nodeLocal {
		mc.onThisNodeOnly()
	}
	if rej = g.podTargetLabelRules(mc, spec.PodTargetLabels); rej != nil {
		return nil, discovery{}, rej
	}
	mc.jobRules = []*relabelRule{setRule("job", pm.Namespace+"/"+pm.Name)}
	if spec.JobLabel != "" {
		mc.jobRules = append(mc.jobRules, copyNonEmptyRule("__meta_kubernetes_pod_label_"+strutil.SanitizeLabelName(spec.JobLabel), "job"))
	}
	if rej = g.classRelabelings(mc); rej != nil {
		return nil, discovery{}, rej
	}
	mc.enforceNS = g.enforceNamespaceLabel(monitoringv1.PodMonitorName, pm.Namespace, pm.Name)
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

	jobs := make([]*scrapeJob, 0, len(spec.PodMetricsEndpoints))
	for i := range spec.PodMetricsEndpoints {
		job, rej := g.podEndpointJob(mc, i, &spec.PodMetricsEndpoints[i])
		if rej != nil {
			return nil, discovery{}, rej
		}
		jobs = append(jobs, job)
	}
	if len(jobs) == 0 {
		// Nothing is discovered, so nothing needs to be granted.
		return jobs, discovery{}, nil
	}
	return jobs, disc, nil
}

// podEndpointJob renders the job for podMetricsEndpoints entry i of the monitor.
func (g *generator) podEndpointJob(mc *monitorContext, i int, ep *monitoringv1.PodMetricsEndpoint) (*scrapeJob, *rejection) {
	field := fmt.Sprintf("podMetricsEndpoints[%d]", i)
	job := &scrapeJob{
		JobName:             fmt.Sprintf("%s/%s/%s/%d", podMonitorJobNamePrefix, mc.namespace, mc.name, i),
		KubernetesSDConfigs: []kubernetesSDConfig{mc.sd},
		MetricsPath:         ep.Path,
	}
	g.honor(job, ep.HonorLabels, ep.HonorTimestamps, ep.TrackTimestampsStaleness)

	portRule, endpointLabel, rej := podPortFilter(field, ep)
	if rej != nil {
		return nil, rej
	}
	if rej := g.scrapeTiming(job, field, ep.Interval, ep.ScrapeTimeout); rej != nil {
		return nil, rej
	}
	if len(ep.Params) > 0 {
		job.Params = ep.Params
	}

	// A PodMonitor endpoint carries the same HTTP settings as a ServiceMonitor's, minus the file
	// paths (bearerTokenFile, TLS files).
	hc := monitoringv1.HTTPConfigWithProxyAndTLSFiles{
		HTTPConfigWithTLSFiles: monitoringv1.HTTPConfigWithTLSFiles{HTTPConfigWithoutTLS: ep.HTTPConfigWithoutTLS},
		ProxyConfig:            ep.ProxyConfig,
	}
	hc.TLSConfig = withoutFiles(ep.TLSConfig)
	if rej := g.endpointHTTP(job, mc.namespace, field, ep.Scheme, &hc, "", mc.class); rej != nil {
		return nil, rej
	}

	userRelabel, rej := g.userRelabelings(field+".relabelings", ep.RelabelConfigs)
	if rej != nil {
		return nil, rej
	}
	userMetric, rej := g.userRelabelings(field+".metricRelabelings", ep.MetricRelabelConfigs)
	if rej != nil {
		return nil, rej
	}

	// The ServiceMonitor order without the Service's steps, except that the existing operator
	// drops finished pods right after saving the job name, before the selector.
	rules := make([]*relabelRule, 0, 14+len(mc.selectorRules)+len(mc.labelRules)+len(mc.classRelabel)+len(userRelabel))
	rules = append(rules, copyRule("job", "__tmp_prometheus_job_name"))
	if ep.FilterRunning == nil || *ep.FilterRunning {
		rules = append(rules, dropRule("(Failed|Succeeded)", "__meta_kubernetes_pod_phase"))
	}
	rules = append(rules, mc.selectorRules...)
	if portRule != nil {
		rules = append(rules, portRule)
	}
	rules = append(rules,
		copyRule("__meta_kubernetes_namespace", "namespace"),
		copyRule("__meta_kubernetes_pod_container_name", "container"),
		copyRule("__meta_kubernetes_pod_name", "pod"),
	)
	rules = append(rules, mc.labelRules...)
	rules = append(rules, mc.jobRules...)
	if endpointLabel != "" {
		rules = append(rules, setRule("endpoint", endpointLabel))
	}
	rules = append(rules, mc.classRelabel...)
	rules = append(rules, userRelabel...)
	if mc.enforceNS {
		rules = append(rules, setRule(g.prom.Spec.EnforcedNamespaceLabel, mc.namespace))
	}
	rules = append(rules, shardingRules(g.shards, "__address__")...)
	job.RelabelConfigs = rules

	g.finishJob(job, mc, userMetric)
	return job, nil
}

// podPortFilter is the rule keeping only the endpoint's container port, and the value of the
// `endpoint` label (none for portNumber, as with the existing operator). port wins over
// portNumber, which wins over the deprecated targetPort. With
// none of them there is no filter: every declared container port is a target, as with the
// existing operator.
func podPortFilter(field string, ep *monitoringv1.PodMetricsEndpoint) (*relabelRule, string, *rejection) {
	const (
		portName   = "__meta_kubernetes_pod_container_port_name"
		portNumber = "__meta_kubernetes_pod_container_port_number"
	)
	byName := func(sub, name string) (*relabelRule, string, *rejection) {
		if err := PortPattern(name); err != nil {
			return nil, "", reject(ReasonInvalidPort, "%s.%s: %q is %v", field, sub, name, err)
		}
		return keepRule(name, portName), name, nil
	}
	byNumber := func(sub string, n int32) (*relabelRule, string, *rejection) {
		if n < 1 || n > 65535 {
			return nil, "", reject(ReasonInvalidPort, "%s.%s: %d is not a port number between 1 and 65535", field, sub, n)
		}
		s := strconv.Itoa(int(n))
		return keepRule(s, portNumber), s, nil
	}
	switch {
	case ep.Port != nil && *ep.Port != "":
		return byName("port", *ep.Port)
	case ep.PortNumber != nil:
		// The existing operator sets no endpoint label for portNumber: keep the series'
		// identity.
		rule, _, rej := byNumber("portNumber", *ep.PortNumber)
		return rule, "", rej
	case ep.TargetPort != nil && ep.TargetPort.Type == intstr.Int:
		return byNumber("targetPort", ep.TargetPort.IntVal)
	case ep.TargetPort != nil:
		return byName("targetPort", ep.TargetPort.StrVal)
	}
	return nil, "", nil
}
