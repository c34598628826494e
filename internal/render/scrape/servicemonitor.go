package scrape

import (
	"fmt"
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/util/strutil"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// metaLabels are the discovery labels that differ between the endpoints and endpointslice roles.
type metaLabels struct {
	portName, targetKind, targetName string
}

var roleMetaLabels = map[string]metaLabels{
	roleEndpoints: {
		portName:   "__meta_kubernetes_endpoint_port_name",
		targetKind: "__meta_kubernetes_endpoint_address_target_kind",
		targetName: "__meta_kubernetes_endpoint_address_target_name",
	},
	roleEndpointSlice: {
		portName:   "__meta_kubernetes_endpointslice_port_name",
		targetKind: "__meta_kubernetes_endpointslice_address_target_kind",
		targetName: "__meta_kubernetes_endpointslice_address_target_name",
	},
}

// serviceMonitorJobs renders one job per endpoint of sm, or says why sm cannot be rendered.
func (g *generator) serviceMonitorJobs(sm *monitoringv1.ServiceMonitor) ([]*scrapeJob, discovery, *rejection) {
	mc := &monitorContext{namespace: sm.Namespace, name: sm.Name, sd: g.apiServer}
	spec := &sm.Spec
	var rej *rejection

	if mc.class, rej = g.scrapeClass(spec.ScrapeClassName); rej != nil {
		return nil, discovery{}, rej
	}
	role := g.role
	if spec.ServiceDiscoveryRole != nil {
		var err error
		if role, err = sdRole(*spec.ServiceDiscoveryRole); err != nil {
			return nil, discovery{}, reject(ReasonInvalidConfig, "serviceDiscoveryRole: %v", err)
		}
	}
	mc.meta = roleMetaLabels[role]
	mc.sd.Role = role

	disc, rej := g.discoveryNamespaces("namespaceSelector", sm.Namespace, &spec.NamespaceSelector)
	if rej != nil {
		return nil, discovery{}, rej
	}
	mc.restrictTo(disc)
	mc.attachMetadata(spec.AttachMetadata)
	disc.nodes = mc.readsNodes()

	if rej = mc.selector("selector", "service", &spec.Selector, spec.SelectorMechanism); rej != nil {
		return nil, discovery{}, rej
	}
	if rej = g.targetLabelRules(mc, spec); rej != nil {
		return nil, discovery{}, rej
	}
	mc.jobRules = []*relabelRule{copyRule("__meta_kubernetes_service_name", "job")}
	if spec.JobLabel != "" {
		mc.jobRules = append(mc.jobRules, copyNonEmptyRule("__meta_kubernetes_service_label_"+strutil.SanitizeLabelName(spec.JobLabel), "job"))
	}
	if rej = g.classRelabelings(mc); rej != nil {
		return nil, discovery{}, rej
	}
	mc.enforceNS = g.enforceNamespaceLabel(monitoringv1.ServiceMonitorName, sm.Namespace, sm.Name)
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

	jobs := make([]*scrapeJob, 0, len(spec.Endpoints))
	for i := range spec.Endpoints {
		job, rej := g.endpointJob(mc, i, &spec.Endpoints[i])
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

// targetLabelRules copies the Service labels named by targetLabels and the Pod labels named by
// podTargetLabels (the monitor's, then the Prometheus's) onto the targets.
func (g *generator) targetLabelRules(mc *monitorContext, spec *monitoringv1.ServiceMonitorSpec) *rejection {
	for i, l := range spec.TargetLabels {
		target, rej := g.labelFromKubernetes(fmt.Sprintf("targetLabels[%d]", i), l)
		if rej != nil {
			return rej
		}
		mc.labelRules = append(mc.labelRules, copyNonEmptyRule("__meta_kubernetes_service_label_"+target, target))
	}
	return g.podTargetLabelRules(mc, spec.PodTargetLabels)
}

// endpointJob renders the job for endpoint i of the monitor.
func (g *generator) endpointJob(mc *monitorContext, i int, ep *monitoringv1.Endpoint) (*scrapeJob, *rejection) {
	field := fmt.Sprintf("endpoints[%d]", i)
	job := &scrapeJob{
		JobName:             fmt.Sprintf("%s/%s/%s/%d", serviceMonitorJobNamePrefix, mc.namespace, mc.name, i),
		KubernetesSDConfigs: []kubernetesSDConfig{mc.sd},
		MetricsPath:         ep.Path,
	}
	g.honor(job, ep.HonorLabels, ep.HonorTimestamps, ep.TrackTimestampsStaleness)

	portRule, endpointLabel, rej := g.portFilter(mc, field, ep)
	if rej != nil {
		return nil, rej
	}
	if rej := g.scrapeTiming(job, field, ep.Interval, ep.ScrapeTimeout); rej != nil {
		return nil, rej
	}
	if len(ep.Params) > 0 {
		job.Params = ep.Params
	}

	if rej := g.endpointHTTP(job, mc.namespace, field, ep.Scheme, &ep.HTTPConfigWithProxyAndTLSFiles, ep.BearerTokenFile, mc.class); rej != nil {
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

	// The order is the existing operator's and part of the compatibility contract (docs/compatibility.md).
	meta := mc.meta
	rules := make([]*relabelRule, 0, 16+len(mc.selectorRules)+len(mc.labelRules)+len(mc.classRelabel)+len(userRelabel))
	rules = append(rules, copyRule("job", "__tmp_prometheus_job_name"))
	rules = append(rules, mc.selectorRules...)
	if portRule != nil {
		rules = append(rules, portRule)
	}
	rules = append(rules,
		&relabelRule{SourceLabels: []string{meta.targetKind, meta.targetName}, Separator: ptr(";"), TargetLabel: "node", Regex: ptr("Node;(.*)"), Replacement: ptr("${1}")},
		&relabelRule{SourceLabels: []string{meta.targetKind, meta.targetName}, Separator: ptr(";"), TargetLabel: "pod", Regex: ptr("Pod;(.*)"), Replacement: ptr("${1}")},
		copyRule("__meta_kubernetes_namespace", "namespace"),
		copyRule("__meta_kubernetes_service_name", "service"),
		copyRule("__meta_kubernetes_pod_name", "pod"),
		copyRule("__meta_kubernetes_pod_container_name", "container"),
	)
	if ep.FilterRunning == nil || *ep.FilterRunning {
		rules = append(rules, dropRule("(Failed|Succeeded)", "__meta_kubernetes_pod_phase"))
	}
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

// portFilter is the rule keeping only the endpoint's port, and the value of the `endpoint` label;
// neither when the endpoint names no port.
func (g *generator) portFilter(mc *monitorContext, field string, ep *monitoringv1.Endpoint) (*relabelRule, string, *rejection) {
	switch {
	case ep.Port != "":
		if err := PortPattern(ep.Port); err != nil {
			return nil, "", reject(ReasonInvalidPort, "%s.port: %q is %v", field, ep.Port, err)
		}
		return keepRule(ep.Port, mc.meta.portName), ep.Port, nil
	case ep.TargetPort != nil && ep.TargetPort.Type == intstr.Int:
		n := ep.TargetPort.IntVal
		if n < 1 || n > 65535 {
			return nil, "", reject(ReasonInvalidPort, "%s.targetPort: %d is not a port number between 1 and 65535", field, n)
		}
		s := strconv.Itoa(int(n))
		return keepRule(s, "__meta_kubernetes_pod_container_port_number"), s, nil
	case ep.TargetPort != nil:
		name := ep.TargetPort.StrVal
		if err := PortPattern(name); err != nil {
			return nil, "", reject(ReasonInvalidPort, "%s.targetPort: %q is %v", field, name, err)
		}
		return keepRule(name, "__meta_kubernetes_pod_container_port_name"), name, nil
	}
	// Neither: every port of the Service's endpoints is a target, with no endpoint label,
	// as with the existing operator.
	return nil, "", nil
}
