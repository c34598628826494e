package scrape

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/alecthomas/units"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/util/strutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// discovery is where one monitor's jobs discover targets.
type discovery struct {
	namespaces []string // nil with all
	all        bool
}

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

// monitorContext is what every endpoint of one ServiceMonitor shares.
type monitorContext struct {
	sm            *monitoringv1.ServiceMonitor
	class         *monitoringv1.ScrapeClass
	sd            kubernetesSDConfig
	meta          metaLabels
	selectorRules []*relabelRule
	labelRules    []*relabelRule // targetLabels then podTargetLabels
	jobRules      []*relabelRule
	classRelabel  []*relabelRule
	classMetric   []*relabelRule
	enforceNS     bool
	limits        scrapeJob // only the limit, histogram, protocol and body size fields are set
}

// serviceMonitorJobs renders one job per endpoint of sm, or says why sm cannot be rendered.
func (g *generator) serviceMonitorJobs(sm *monitoringv1.ServiceMonitor) ([]*scrapeJob, discovery, *rejection) {
	mc := &monitorContext{sm: sm}
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

	disc, rej := g.discoveryNamespaces(sm)
	if rej != nil {
		return nil, discovery{}, rej
	}
	if !disc.all {
		mc.sd.Namespaces = &sdNamespaces{Names: disc.namespaces}
	}
	attach := spec.AttachMetadata
	if attach == nil && mc.class != nil {
		attach = mc.class.AttachMetadata
	}
	if attach != nil && attach.Node != nil {
		mc.sd.AttachMetadata = &sdAttachedMetadata{Node: *attach.Node}
	}

	if rej = mc.selector(role, &spec.Selector, spec.SelectorMechanism); rej != nil {
		return nil, discovery{}, rej
	}
	if rej = g.targetLabelRules(mc); rej != nil {
		return nil, discovery{}, rej
	}
	mc.jobRules = []*relabelRule{copyRule("__meta_kubernetes_service_name", "job")}
	if spec.JobLabel != "" {
		mc.jobRules = append(mc.jobRules, copyNonEmptyRule("__meta_kubernetes_service_label_"+strutil.SanitizeLabelName(spec.JobLabel), "job"))
	}
	if mc.class != nil {
		field := fmt.Sprintf("scrapeClass %q relabelings", mc.class.Name)
		if mc.classRelabel, rej = g.userRelabelings(field, mc.class.Relabelings); rej != nil {
			return nil, discovery{}, rej
		}
		field = fmt.Sprintf("scrapeClass %q metricRelabelings", mc.class.Name)
		if mc.classMetric, rej = g.userRelabelings(field, mc.class.MetricRelabelings); rej != nil {
			return nil, discovery{}, rej
		}
	}
	mc.enforceNS = g.enforceNamespaceLabel(sm)
	if rej = g.monitorLimits(mc); rej != nil {
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

func (g *generator) scrapeClass(name *string) (*monitoringv1.ScrapeClass, *rejection) {
	if name == nil {
		return g.defaultClass, nil
	}
	if c, ok := g.classes[*name]; ok {
		return c, nil
	}
	return nil, reject(ReasonScrapeClassNotFound, "scrapeClass: the Prometheus defines no scrape class %q", *name)
}

func (g *generator) discoveryNamespaces(sm *monitoringv1.ServiceMonitor) (discovery, *rejection) {
	nsSel := sm.Spec.NamespaceSelector
	switch {
	case g.prom.Spec.IgnoreNamespaceSelectors:
		return discovery{namespaces: []string{sm.Namespace}}, nil
	case nsSel.Any:
		return discovery{all: true}, nil
	case len(nsSel.MatchNames) > 0:
		seen := make(map[string]struct{}, len(nsSel.MatchNames))
		names := make([]string, 0, len(nsSel.MatchNames))
		for i, n := range nsSel.MatchNames {
			// An empty name would silently mean "all namespaces" to the Kubernetes client.
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				return discovery{}, reject(ReasonInvalidConfig, "namespaceSelector.matchNames[%d]: %q is not a valid namespace name: %s", i, n, strings.Join(errs, "; "))
			}
			if _, dup := seen[n]; dup {
				continue
			}
			seen[n] = struct{}{}
			names = append(names, n)
		}
		return discovery{namespaces: names}, nil
	}
	return discovery{namespaces: []string{sm.Namespace}}, nil
}

// selector turns the monitor's Service selector into keep/drop rules on the Service's labels,
// or into a discovery-side selector with selectorMechanism RoleSelector.
func (mc *monitorContext) selector(role string, sel *metav1.LabelSelector, mech *monitoringv1.SelectorMechanism) *rejection {
	parsed, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return reject(ReasonInvalidSelector, "selector: %v", err)
	}
	if mech != nil {
		switch *mech {
		case monitoringv1.SelectorMechanismRelabel:
		case monitoringv1.SelectorMechanismRole:
			if !parsed.Empty() {
				mc.sd.Selectors = []sdSelector{{Role: role, Label: parsed.String()}}
			}
			return nil
		default:
			return reject(ReasonInvalidConfig, "selectorMechanism: unknown value %q (want %q or %q)", *mech, monitoringv1.SelectorMechanismRelabel, monitoringv1.SelectorMechanismRole)
		}
	}

	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l := strutil.SanitizeLabelName(k)
		mc.selectorRules = append(mc.selectorRules, keepRule(
			"("+sel.MatchLabels[k]+");true",
			"__meta_kubernetes_service_label_"+l, "__meta_kubernetes_service_labelpresent_"+l,
		))
	}
	for _, e := range sel.MatchExpressions {
		l := strutil.SanitizeLabelName(e.Key)
		value := "__meta_kubernetes_service_label_" + l
		present := "__meta_kubernetes_service_labelpresent_" + l
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			mc.selectorRules = append(mc.selectorRules, keepRule("("+strings.Join(e.Values, "|")+");true", value, present))
		case metav1.LabelSelectorOpNotIn:
			mc.selectorRules = append(mc.selectorRules, dropRule("("+strings.Join(e.Values, "|")+");true", value, present))
		case metav1.LabelSelectorOpExists:
			mc.selectorRules = append(mc.selectorRules, keepRule("true", present))
		case metav1.LabelSelectorOpDoesNotExist:
			mc.selectorRules = append(mc.selectorRules, dropRule("true", present))
		}
	}
	return nil
}

// targetLabelRules copies the Service labels named by targetLabels and the Pod labels named by
// podTargetLabels (the monitor's, then the Prometheus's) onto the targets.
func (g *generator) targetLabelRules(mc *monitorContext) *rejection {
	spec := &mc.sm.Spec
	for i, l := range spec.TargetLabels {
		target, rej := g.labelFromKubernetes(fmt.Sprintf("targetLabels[%d]", i), l)
		if rej != nil {
			return rej
		}
		mc.labelRules = append(mc.labelRules, copyNonEmptyRule("__meta_kubernetes_service_label_"+target, target))
	}
	seen := map[string]struct{}{}
	for _, set := range []struct {
		field  string
		labels []string
	}{
		{"podTargetLabels", spec.PodTargetLabels},
		{"the Prometheus's podTargetLabels", g.prom.Spec.PodTargetLabels},
	} {
		for i, l := range set.labels {
			target, rej := g.labelFromKubernetes(fmt.Sprintf("%s[%d]", set.field, i), l)
			if rej != nil {
				return rej
			}
			if _, dup := seen[target]; dup {
				continue
			}
			seen[target] = struct{}{}
			mc.labelRules = append(mc.labelRules, copyNonEmptyRule("__meta_kubernetes_pod_label_"+target, target))
		}
	}
	return nil
}

// labelFromKubernetes is the Prometheus label a Kubernetes label key becomes, the way service
// discovery sanitizes it.
func (g *generator) labelFromKubernetes(field, key string) (string, *rejection) {
	if key == "" {
		return "", reject(ReasonInvalidConfig, "%s: the label name is empty", field)
	}
	l := strutil.SanitizeLabelName(key)
	if !g.nameScheme.IsValidLabelName(l) {
		return "", reject(ReasonInvalidConfig, "%s: %q does not give a valid Prometheus label name (%q)", field, key, l)
	}
	return l, nil
}

// enforceNamespaceLabel says whether the Prometheus's enforcedNamespaceLabel applies to sm.
func (g *generator) enforceNamespaceLabel(sm *monitoringv1.ServiceMonitor) bool {
	if g.prom.Spec.EnforcedNamespaceLabel == "" {
		return false
	}
	for _, ref := range g.prom.Spec.ExcludedFromEnforcement {
		group := ref.Group
		if group == "" {
			group = monitoringv1.SchemeGroupVersion.Group
		}
		if group == monitoringv1.SchemeGroupVersion.Group &&
			ref.Resource == monitoringv1.ServiceMonitorName &&
			ref.Namespace == sm.Namespace &&
			(ref.Name == "" || ref.Name == sm.Name) {
			return false
		}
	}
	return true
}

// monitorLimits computes the fields written after relabel_configs, which are the same for every
// endpoint of the monitor.
func (g *generator) monitorLimits(mc *monitorContext) *rejection {
	spec := &mc.sm.Spec
	l := &mc.limits
	for _, f := range []struct {
		field string
		v     *int64
	}{
		{"sampleLimit", spec.SampleLimit},
		{"targetLimit", spec.TargetLimit},
		{"labelLimit", spec.LabelLimit},
		{"labelNameLengthLimit", spec.LabelNameLengthLimit},
		{"labelValueLengthLimit", spec.LabelValueLengthLimit},
		{"keepDroppedTargets", spec.KeepDroppedTargets},
		{"nativeHistogramBucketLimit", spec.NativeHistogramBucketLimit},
	} {
		if f.v != nil && *f.v < 0 {
			return reject(ReasonInvalidConfig, "%s: must not be negative, got %d", f.field, *f.v)
		}
	}
	l.SampleLimit = g.sampleLimit.apply(spec.SampleLimit)
	l.TargetLimit = g.targetLimit.apply(spec.TargetLimit)
	l.LabelLimit = g.labelLimit.apply(spec.LabelLimit)
	l.LabelNameLengthLimit = g.labelNameLengthLimit.apply(spec.LabelNameLengthLimit)
	l.LabelValueLengthLimit = g.labelValueLengthLimit.apply(spec.LabelValueLengthLimit)
	l.KeepDroppedTargets = g.keepDrop.apply(spec.KeepDroppedTargets)

	l.ScrapeNativeHistograms = spec.ScrapeNativeHistograms
	l.AlwaysScrapeClassicHistograms = spec.ScrapeClassicHistograms
	if spec.NativeHistogramBucketLimit != nil {
		l.NativeHistogramBucketLimit = uint64(*spec.NativeHistogramBucketLimit)
	}
	if q := spec.NativeHistogramMinBucketFactor; q != nil {
		l.NativeHistogramMinBucketFactor = q.AsApproximateFloat64()
	}
	l.ConvertClassicHistogramsToNHCB = spec.ConvertClassicHistogramsToNHCB

	for i, sp := range spec.ScrapeProtocols {
		if !validScrapeProtocol(sp) {
			return reject(ReasonInvalidConfig, "scrapeProtocols[%d]: unknown scrape protocol %q", i, sp)
		}
		l.ScrapeProtocols = append(l.ScrapeProtocols, string(sp))
	}
	fallback := spec.FallbackScrapeProtocol
	field := "fallbackScrapeProtocol"
	if fallback == nil && mc.class != nil {
		fallback = mc.class.FallbackScrapeProtocol
		field = fmt.Sprintf("scrapeClass %q fallbackScrapeProtocol", mc.class.Name)
	}
	if fallback != nil {
		if !validScrapeProtocol(*fallback) {
			return reject(ReasonInvalidConfig, "%s: unknown scrape protocol %q", field, *fallback)
		}
		l.FallbackScrapeProtocol = string(*fallback)
	}

	var size units.Base2Bytes
	if spec.BodySizeLimit != nil && *spec.BodySizeLimit != "" {
		var err error
		if size, err = units.ParseBase2Bytes(string(*spec.BodySizeLimit)); err != nil {
			return reject(ReasonInvalidConfig, "bodySizeLimit: invalid size %q: %v", *spec.BodySizeLimit, err)
		}
		l.BodySizeLimit = string(*spec.BodySizeLimit)
	}
	if g.enforcedBodySize > 0 {
		switch {
		case size > g.enforcedBodySize:
			l.BodySizeLimit = g.enforcedBodySizeText
		case size <= 0 && (g.globalBodySize <= 0 || g.globalBodySize > g.enforcedBodySize):
			l.BodySizeLimit = g.enforcedBodySizeText
		}
	}
	return nil
}

// endpointJob renders the job for endpoint i of the monitor.
func (g *generator) endpointJob(mc *monitorContext, i int, ep *monitoringv1.Endpoint) (*scrapeJob, *rejection) {
	sm := mc.sm
	field := fmt.Sprintf("endpoints[%d]", i)
	job := &scrapeJob{
		JobName:             fmt.Sprintf("%s/%s/%s/%d", serviceMonitorJobNamePrefix, sm.Namespace, sm.Name, i),
		HonorLabels:         ep.HonorLabels && !g.prom.Spec.OverrideHonorLabels,
		HonorTimestamps:     ep.HonorTimestamps,
		KubernetesSDConfigs: []kubernetesSDConfig{mc.sd},
		MetricsPath:         ep.Path,
	}
	if g.prom.Spec.OverrideHonorTimestamps {
		job.HonorTimestamps = ptr(false)
	}
	if ep.TrackTimestampsStaleness != nil {
		job.TrackTimestampsStaleness = ep.TrackTimestampsStaleness
	}

	portRule, endpointLabel, rej := g.portFilter(mc, field, ep)
	if rej != nil {
		return nil, rej
	}

	interval := g.scrapeInterval
	if ep.Interval != "" {
		d, err := parseDuration(string(ep.Interval))
		if err != nil {
			return nil, reject(ReasonInvalidDuration, "%s.interval: %v", field, err)
		}
		job.ScrapeInterval = string(ep.Interval)
		if d > 0 {
			interval = d
		}
	}
	if ep.ScrapeTimeout != "" {
		d, err := parseDuration(string(ep.ScrapeTimeout))
		if err != nil {
			return nil, reject(ReasonInvalidDuration, "%s.scrapeTimeout: %v", field, err)
		}
		if d > interval {
			return nil, reject(ReasonInvalidDuration, "%s.scrapeTimeout: %s is greater than the scrape interval %s", field, ep.ScrapeTimeout, interval)
		}
		job.ScrapeTimeout = string(ep.ScrapeTimeout)
	}
	if len(ep.Params) > 0 {
		job.Params = ep.Params
	}

	if rej := g.endpointHTTP(job, sm, field, ep, mc.class); rej != nil {
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

	// The order is part of the compatibility contract (COMPAT.md, relabel_configs 1–11).
	meta := mc.meta
	rules := make([]*relabelRule, 0, 16+len(mc.selectorRules)+len(mc.labelRules)+len(mc.classRelabel)+len(userRelabel))
	rules = append(rules, copyRule("job", "__tmp_prometheus_job_name"))
	rules = append(rules, mc.selectorRules...)
	rules = append(rules, portRule)
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
	rules = append(rules, setRule("endpoint", endpointLabel))
	rules = append(rules, mc.classRelabel...)
	rules = append(rules, userRelabel...)
	if mc.enforceNS {
		rules = append(rules, setRule(g.prom.Spec.EnforcedNamespaceLabel, sm.Namespace))
	}
	rules = append(rules, shardingRules(g.shards)...)
	job.RelabelConfigs = rules

	l := &mc.limits
	job.SampleLimit, job.TargetLimit, job.LabelLimit = l.SampleLimit, l.TargetLimit, l.LabelLimit
	job.LabelNameLengthLimit, job.LabelValueLengthLimit = l.LabelNameLengthLimit, l.LabelValueLengthLimit
	job.KeepDroppedTargets = l.KeepDroppedTargets
	job.ScrapeNativeHistograms, job.AlwaysScrapeClassicHistograms = l.ScrapeNativeHistograms, l.AlwaysScrapeClassicHistograms
	job.NativeHistogramBucketLimit, job.NativeHistogramMinBucketFactor = l.NativeHistogramBucketLimit, l.NativeHistogramMinBucketFactor
	job.ConvertClassicHistogramsToNHCB = l.ConvertClassicHistogramsToNHCB
	job.ScrapeProtocols, job.FallbackScrapeProtocol, job.BodySizeLimit = l.ScrapeProtocols, l.FallbackScrapeProtocol, l.BodySizeLimit

	metric := make([]*relabelRule, 0, len(mc.classMetric)+len(userMetric)+1)
	metric = append(metric, mc.classMetric...)
	metric = append(metric, userMetric...)
	if mc.enforceNS {
		metric = append(metric, setRule(g.prom.Spec.EnforcedNamespaceLabel, sm.Namespace))
	}
	if len(metric) > 0 {
		job.MetricRelabelConfigs = metric
	}
	return job, nil
}

// portFilter is the rule keeping only the endpoint's port, and the value of the `endpoint` label.
func (g *generator) portFilter(mc *monitorContext, field string, ep *monitoringv1.Endpoint) (*relabelRule, string, *rejection) {
	switch {
	case ep.Port != "":
		// Service port names are DNS labels (up to 63 characters), unlike container port names.
		if errs := validation.IsDNS1123Label(ep.Port); len(errs) > 0 {
			return nil, "", reject(ReasonInvalidPort, "%s.port: %q is not a valid Service port name: %s", field, ep.Port, strings.Join(errs, "; "))
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
		if errs := validation.IsValidPortName(name); len(errs) > 0 {
			return nil, "", reject(ReasonInvalidPort, "%s.targetPort: %q is not a valid container port name (IANA service name): %s", field, name, strings.Join(errs, "; "))
		}
		return keepRule(name, "__meta_kubernetes_pod_container_port_name"), name, nil
	}
	return nil, "", reject(ReasonInvalidPort, "%s: neither port nor targetPort is set; one is required to pick the port to scrape", field)
}
