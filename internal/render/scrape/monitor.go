package scrape

import (
	"fmt"
	"sort"
	"strings"

	"github.com/alecthomas/units"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/util/strutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The helpers here are shared by every kind of monitor: ServiceMonitors, PodMonitors and Probes
// differ in how they discover targets, not in how a scrape is limited, authenticated or relabeled.

// discovery is where one monitor's jobs discover targets.
type discovery struct {
	namespaces []string // nil with all
	all        bool
	nodes      bool // Nodes are read: node role, or node metadata attached to targets
}

// monitorContext is what every job of one monitor shares.
type monitorContext struct {
	namespace, name string
	class           *monitoringv1.ScrapeClass
	sd              kubernetesSDConfig
	meta            metaLabels // ServiceMonitors only: the role's endpoint meta labels
	selectorRules   []*relabelRule
	labelRules      []*relabelRule // targetLabels then podTargetLabels
	jobRules        []*relabelRule
	classRelabel    []*relabelRule
	classMetric     []*relabelRule
	enforceNS       bool
	limits          scrapeJob // only the limit, histogram, protocol and body size fields are set
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

// discoveryNamespaces applies a monitor's namespaceSelector (named field in messages); own is the
// monitor's namespace.
func (g *generator) discoveryNamespaces(field, own string, nsSel *monitoringv1.NamespaceSelector) (discovery, *rejection) {
	switch {
	case g.prom.Spec.IgnoreNamespaceSelectors:
		return discovery{namespaces: []string{own}}, nil
	case nsSel.Any:
		return discovery{all: true}, nil
	case len(nsSel.MatchNames) > 0:
		seen := make(map[string]struct{}, len(nsSel.MatchNames))
		names := make([]string, 0, len(nsSel.MatchNames))
		for i, n := range nsSel.MatchNames {
			// An empty name would silently mean "all namespaces" to the Kubernetes client.
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				return discovery{}, reject(ReasonInvalidConfig, "%s.matchNames[%d]: %q is not a valid namespace name: %s", field, i, n, strings.Join(errs, "; "))
			}
			if _, dup := seen[n]; dup {
				continue
			}
			seen[n] = struct{}{}
			names = append(names, n)
		}
		return discovery{namespaces: names}, nil
	}
	return discovery{namespaces: []string{own}}, nil
}

// restrictTo writes the namespaces of d into the monitor's discovery config.
func (mc *monitorContext) restrictTo(d discovery) {
	if !d.all {
		mc.sd.Namespaces = &sdNamespaces{Names: d.namespaces}
	}
}

// attachMetadata is the monitor's attachMetadata, or its scrape class's when it sets none.
func (mc *monitorContext) attachMetadata(own *monitoringv1.AttachMetadata) {
	if own == nil && mc.class != nil {
		own = mc.class.AttachMetadata
	}
	if own != nil && own.Node != nil {
		mc.sd.AttachMetadata = &sdAttachedMetadata{Node: *own.Node}
	}
}

// readsNodes says whether the monitor's discovery reads Nodes, for RBAC.
func (mc *monitorContext) readsNodes() bool {
	return mc.sd.AttachMetadata != nil && mc.sd.AttachMetadata.Node
}

// selector turns a label selector over the discovered objects (object is the meta label
// infix Prometheus uses for them: "service", "pod", "ingress") into keep/drop rules on their
// labels, or into a discovery-side selector with selectorMechanism RoleSelector.
func (mc *monitorContext) selector(field, object string, sel *metav1.LabelSelector, mech *monitoringv1.SelectorMechanism) *rejection {
	parsed, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return reject(ReasonInvalidSelector, "%s: %v", field, err)
	}
	if mech != nil {
		switch *mech {
		case monitoringv1.SelectorMechanismRelabel:
		case monitoringv1.SelectorMechanismRole:
			if !parsed.Empty() {
				mc.sd.Selectors = []sdSelector{{Role: mc.sd.Role, Label: parsed.String()}}
				if object == "service" {
					// The endpoints (or endpointslice) role also watches Services: the existing
					// operator narrows that watch with the same selector, after the role's own.
					mc.sd.Selectors = append(mc.sd.Selectors, sdSelector{Role: "service", Label: parsed.String()})
				}
			}
			return nil
		default:
			return reject(ReasonInvalidConfig, "selectorMechanism: unknown value %q (want %q or %q)", *mech, monitoringv1.SelectorMechanismRelabel, monitoringv1.SelectorMechanismRole)
		}
	}

	labelPrefix := "__meta_kubernetes_" + object + "_label_"
	presentPrefix := "__meta_kubernetes_" + object + "_labelpresent_"
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l := strutil.SanitizeLabelName(k)
		mc.selectorRules = append(mc.selectorRules, keepRule("("+sel.MatchLabels[k]+");true", labelPrefix+l, presentPrefix+l))
	}
	for _, e := range sel.MatchExpressions {
		l := strutil.SanitizeLabelName(e.Key)
		value, present := labelPrefix+l, presentPrefix+l
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

// podTargetLabelRules copies the Pod labels named by the monitor's podTargetLabels, then by the
// Prometheus's, onto the targets.
func (g *generator) podTargetLabelRules(mc *monitorContext, own []string) *rejection {
	seen := map[string]struct{}{}
	for _, set := range []struct {
		field  string
		labels []string
	}{
		{"podTargetLabels", own},
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

// enforceNamespaceLabel says whether the Prometheus's enforcedNamespaceLabel applies to the
// object; resource is its plural resource name ("servicemonitors", "podmonitors", "probes").
func (g *generator) enforceNamespaceLabel(resource, ns, name string) bool {
	if g.prom.Spec.EnforcedNamespaceLabel == "" {
		return false
	}
	for _, ref := range g.prom.Spec.ExcludedFromEnforcement {
		group := ref.Group
		if group == "" {
			group = monitoringv1.SchemeGroupVersion.Group
		}
		if group == monitoringv1.SchemeGroupVersion.Group &&
			ref.Resource == resource &&
			ref.Namespace == ns &&
			(ref.Name == "" || ref.Name == name) {
			return false
		}
	}
	return true
}

// classRelabelings validates the scrape class's relabelings once for all the monitor's jobs.
func (g *generator) classRelabelings(mc *monitorContext) *rejection {
	if mc.class == nil {
		return nil
	}
	var rej *rejection
	field := fmt.Sprintf("scrapeClass %q relabelings", mc.class.Name)
	if mc.classRelabel, rej = g.userRelabelings(field, mc.class.Relabelings); rej != nil {
		return rej
	}
	field = fmt.Sprintf("scrapeClass %q metricRelabelings", mc.class.Name)
	mc.classMetric, rej = g.userRelabelings(field, mc.class.MetricRelabelings)
	return rej
}

// limitFields are the per-scrape limits and scrape settings every monitor kind carries in its
// spec; a field the kind lacks stays nil.
type limitFields struct {
	sampleLimit, targetLimit, labelLimit        *int64
	labelNameLengthLimit, labelValueLengthLimit *int64
	keepDroppedTargets                          *int64
	histograms                                  *monitoringv1.NativeHistogramConfig
	scrapeProtocols                             []monitoringv1.ScrapeProtocol
	fallbackScrapeProtocol                      *monitoringv1.ScrapeProtocol
	bodySizeLimit                               *monitoringv1.ByteSize
}

// monitorLimits computes the fields written after relabel_configs, which are the same for every
// job of the monitor.
func (g *generator) monitorLimits(mc *monitorContext, spec *limitFields) *rejection {
	l := &mc.limits
	h := spec.histograms
	for _, f := range []struct {
		field string
		v     *int64
	}{
		{"sampleLimit", spec.sampleLimit},
		{"targetLimit", spec.targetLimit},
		{"labelLimit", spec.labelLimit},
		{"labelNameLengthLimit", spec.labelNameLengthLimit},
		{"labelValueLengthLimit", spec.labelValueLengthLimit},
		{"keepDroppedTargets", spec.keepDroppedTargets},
		{"nativeHistogramBucketLimit", h.NativeHistogramBucketLimit},
	} {
		if f.v != nil && *f.v < 0 {
			return reject(ReasonInvalidConfig, "%s: must not be negative, got %d", f.field, *f.v)
		}
	}
	l.SampleLimit = g.sampleLimit.apply(spec.sampleLimit)
	l.TargetLimit = g.targetLimit.apply(spec.targetLimit)
	l.LabelLimit = g.labelLimit.apply(spec.labelLimit)
	l.LabelNameLengthLimit = g.labelNameLengthLimit.apply(spec.labelNameLengthLimit)
	l.LabelValueLengthLimit = g.labelValueLengthLimit.apply(spec.labelValueLengthLimit)
	l.KeepDroppedTargets = g.keepDrop.apply(spec.keepDroppedTargets)

	l.ScrapeNativeHistograms = h.ScrapeNativeHistograms
	l.AlwaysScrapeClassicHistograms = h.ScrapeClassicHistograms
	if h.NativeHistogramBucketLimit != nil {
		l.NativeHistogramBucketLimit = uint64(*h.NativeHistogramBucketLimit)
	}
	if q := h.NativeHistogramMinBucketFactor; q != nil {
		l.NativeHistogramMinBucketFactor = q.AsApproximateFloat64()
	}
	l.ConvertClassicHistogramsToNHCB = h.ConvertClassicHistogramsToNHCB

	for i, sp := range spec.scrapeProtocols {
		if !validScrapeProtocol(sp) {
			return reject(ReasonInvalidConfig, "scrapeProtocols[%d]: unknown scrape protocol %q", i, sp)
		}
		l.ScrapeProtocols = append(l.ScrapeProtocols, string(sp))
	}
	fallback := spec.fallbackScrapeProtocol
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
	if spec.bodySizeLimit != nil && *spec.bodySizeLimit != "" {
		var err error
		if size, err = units.ParseBase2Bytes(string(*spec.bodySizeLimit)); err != nil {
			return reject(ReasonInvalidConfig, "bodySizeLimit: invalid size %q: %v", *spec.bodySizeLimit, err)
		}
		l.BodySizeLimit = string(*spec.bodySizeLimit)
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

// honor writes honor_labels, honor_timestamps and track_timestamps_staleness, which the
// Prometheus's overrideHonorLabels and overrideHonorTimestamps can force to false.
func (g *generator) honor(job *scrapeJob, labels bool, timestamps, trackStaleness *bool) {
	job.HonorLabels = labels && !g.prom.Spec.OverrideHonorLabels
	job.HonorTimestamps = timestamps
	if g.prom.Spec.OverrideHonorTimestamps {
		job.HonorTimestamps = ptr(false)
	}
	if trackStaleness != nil {
		job.TrackTimestampsStaleness = trackStaleness
	}
}

// scrapeTiming validates and writes scrape_interval and scrape_timeout; field is the path of
// the object holding them, empty at the top of a spec.
func (g *generator) scrapeTiming(job *scrapeJob, field string, interval, timeout monitoringv1.Duration) *rejection {
	return g.scrapeTimingAt(job, fieldPath(field, "interval"), fieldPath(field, "scrapeTimeout"), interval, timeout)
}

// scrapeTimingAt is scrapeTiming for fields named intervalField and timeoutField.
func (g *generator) scrapeTimingAt(job *scrapeJob, intervalField, timeoutField string, interval, timeout monitoringv1.Duration) *rejection {
	effective := g.scrapeInterval
	if interval != "" {
		d, err := parseDuration(string(interval))
		if err != nil {
			return reject(ReasonInvalidDuration, "%s: %v", intervalField, err)
		}
		job.ScrapeInterval = string(interval)
		if d > 0 {
			effective = d
		}
	}
	if timeout != "" {
		d, err := parseDuration(string(timeout))
		if err != nil {
			return reject(ReasonInvalidDuration, "%s: %v", timeoutField, err)
		}
		if d > effective {
			return reject(ReasonInvalidDuration, "%s: %s is greater than the scrape interval %s", timeoutField, timeout, effective)
		}
		job.ScrapeTimeout = string(timeout)
	}
	return nil
}

// finishJob writes what follows relabel_configs: the monitor's limits, then the metric
// relabelings (the scrape class's, the job's own, then the enforced namespace label).
func (g *generator) finishJob(job *scrapeJob, mc *monitorContext, userMetric []*relabelRule) {
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
		metric = append(metric, setRule(g.prom.Spec.EnforcedNamespaceLabel, mc.namespace))
	}
	if len(metric) > 0 {
		job.MetricRelabelConfigs = metric
	}
	g.gateJob(job)
}

// fieldPath joins a field path and a child field; parent is empty for fields at the top of a
// spec.
func fieldPath(parent, child string) string {
	if parent == "" {
		return child
	}
	return parent + "." + child
}

// atField prefixes msg with the field it is about, when there is one.
func atField(field, msg string) string {
	if field == "" {
		return msg
	}
	return field + ": " + msg
}
