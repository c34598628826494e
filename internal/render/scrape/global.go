package scrape

import (
	"errors"
	"fmt"

	"github.com/alecthomas/units"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

const (
	defaultScrapeInterval     = "30s"
	defaultEvaluationInterval = "30s"

	defaultPrometheusLabelName = "prometheus"
	defaultReplicaLabelName    = "prometheus_replica"
	// Substituted by the reloader from the pod's environment.
	podNamePlaceholder = "$(POD_NAME)"
	shardPlaceholder   = "$(SHARD)"
)

// globalConfig is the `global` section; field order is the order written.
type globalConfig struct {
	ScrapeInterval                 string            `yaml:"scrape_interval"`
	ScrapeTimeout                  string            `yaml:"scrape_timeout,omitempty"`
	ScrapeProtocols                []string          `yaml:"scrape_protocols,omitempty"`
	EvaluationInterval             string            `yaml:"evaluation_interval"`
	RuleQueryOffset                string            `yaml:"rule_query_offset,omitempty"`
	ExternalLabels                 map[string]string `yaml:"external_labels,omitempty"`
	BodySizeLimit                  string            `yaml:"body_size_limit,omitempty"`
	SampleLimit                    uint64            `yaml:"sample_limit,omitempty"`
	TargetLimit                    uint64            `yaml:"target_limit,omitempty"`
	LabelLimit                     uint64            `yaml:"label_limit,omitempty"`
	LabelNameLengthLimit           uint64            `yaml:"label_name_length_limit,omitempty"`
	LabelValueLengthLimit          uint64            `yaml:"label_value_length_limit,omitempty"`
	KeepDroppedTargets             uint64            `yaml:"keep_dropped_targets,omitempty"`
	MetricNameValidationScheme     string            `yaml:"metric_name_validation_scheme,omitempty"`
	MetricNameEscapingScheme       string            `yaml:"metric_name_escaping_scheme,omitempty"`
	ScrapeNativeHistograms         *bool             `yaml:"scrape_native_histograms,omitempty"`
	ConvertClassicHistogramsToNHCB *bool             `yaml:"convert_classic_histograms_to_nhcb,omitempty"`
	AlwaysScrapeClassicHistograms  *bool             `yaml:"always_scrape_classic_histograms,omitempty"`
	QueryLogFile                   string            `yaml:"query_log_file,omitempty"`
	ScrapeFailureLogFile           string            `yaml:"scrape_failure_log_file,omitempty"`
}

// document is the whole prometheus.yaml this package writes. Generate assembles it from a
// globalDocument and per-monitor pieces; tests read it back with this type.
type document struct {
	Global        *globalConfig `yaml:"global"`
	ScrapeConfigs []*scrapeJob  `yaml:"scrape_configs"`
}

type globalDocument struct {
	Global    *globalConfig  `yaml:"global"`
	Runtime   *runtimeConfig `yaml:"runtime,omitempty"`
	RuleFiles []string       `yaml:"rule_files,omitempty"`
	Storage   *storageConfig `yaml:"storage,omitempty"`
	Tracing   *tracingConfig `yaml:"tracing,omitempty"`
	OTLP      *otlpConfig    `yaml:"otlp,omitempty"`
}

// limits holds the Prometheus's two values for one per-scrape limit. A monitor's own value is
// capped by the enforced one; a monitor without one inherits the global value, which the
// enforced one caps too. A Prometheus too old for the global key (inGlobal false) gets the
// enforced value in the job instead, as with the existing operator.
type limits struct {
	global, enforced int64 // 0 = unset
	inGlobal         bool
}

func (l limits) apply(monitor *int64) uint64 {
	var v int64
	if monitor != nil {
		v = *monitor
	}
	if v <= 0 {
		if l.enforced > 0 && !l.inGlobal {
			return uint64(l.enforced)
		}
		return 0
	}
	if l.enforced > 0 && v > l.enforced {
		return uint64(l.enforced)
	}
	return uint64(v)
}

// generator holds what every job of one Prometheus shares.
type generator struct {
	prom       *monitoringv1.Prometheus
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
	// reads collects the Secrets and ConfigMaps the monitor being built reads, for the Cache.
	reads *[]string
	// dropped collects what the jobs of the monitor being built leave out for the version.
	dropped *[]string

	// version is spec.version's (see promVersion); versionKnown is false when it does not parse.
	version      workload.Version
	versionKnown bool
	// warnings are what the global section leaves out for the version (Result.Warnings).
	warnings []string

	global         *globalConfig
	globalYAML     []byte // "global:" and its section, the start of every document
	scrapeInterval model.Duration
	role           string
	// apiServer starts every kubernetes_sd_configs entry for monitors and alertmanagers
	// (spec.apiserverConfig; zero when unset).
	apiServer     kubernetesSDConfig
	apiServerYAML []byte
	shards        uint64
	nameScheme    model.ValidationScheme
	nodeLocal     bool

	classes      map[string]*monitoringv1.ScrapeClass
	defaultClass *monitoringv1.ScrapeClass

	sampleLimit, targetLimit, labelLimit                  limits
	labelNameLengthLimit, labelValueLengthLimit, keepDrop limits
	globalBodySize, enforcedBodySize                      units.Base2Bytes
	enforcedBodySizeText                                  string
}

func newGenerator(in Input) (*generator, error) {
	p := in.Prometheus
	spec := &p.Spec
	g := &generator{
		prom:       p,
		secrets:    in.Secrets,
		configMaps: in.ConfigMaps,
		nameScheme: model.UTF8Validation,
		nodeLocal:  in.NodeLocal,
		shards:     1,
		role:       roleEndpoints,
		classes:    map[string]*monitoringv1.ScrapeClass{},
	}
	gc := &globalConfig{}
	g.global = gc
	g.version, g.versionKnown = promVersion(p)

	var err error
	gc.ScrapeInterval = string(spec.ScrapeInterval)
	if gc.ScrapeInterval == "" {
		gc.ScrapeInterval = defaultScrapeInterval
	}
	if g.scrapeInterval, err = parseDuration(gc.ScrapeInterval); err != nil {
		return nil, fmt.Errorf("spec.scrapeInterval: %w", err)
	}
	if g.scrapeInterval == 0 {
		return nil, errors.New("spec.scrapeInterval: must be greater than zero")
	}
	if spec.ScrapeTimeout != "" {
		gc.ScrapeTimeout = string(spec.ScrapeTimeout)
		timeout, err := parseDuration(gc.ScrapeTimeout)
		if err != nil {
			return nil, fmt.Errorf("spec.scrapeTimeout: %w", err)
		}
		if timeout > g.scrapeInterval {
			return nil, fmt.Errorf("spec.scrapeTimeout: %s is greater than the scrape interval %s", gc.ScrapeTimeout, gc.ScrapeInterval)
		}
	}
	gc.EvaluationInterval = string(spec.EvaluationInterval)
	if gc.EvaluationInterval == "" {
		gc.EvaluationInterval = defaultEvaluationInterval
	}
	if _, err := parseDuration(gc.EvaluationInterval); err != nil {
		return nil, fmt.Errorf("spec.evaluationInterval: %w", err)
	}
	if spec.RuleQueryOffset != nil && *spec.RuleQueryOffset != "" {
		gc.RuleQueryOffset = string(*spec.RuleQueryOffset)
		if _, err := parseDuration(gc.RuleQueryOffset); err != nil {
			return nil, fmt.Errorf("spec.ruleQueryOffset: %w", err)
		}
	}
	for i, sp := range spec.ScrapeProtocols {
		if !validScrapeProtocol(sp) {
			return nil, fmt.Errorf("spec.scrapeProtocols[%d]: unknown scrape protocol %q", i, sp)
		}
		gc.ScrapeProtocols = append(gc.ScrapeProtocols, string(sp))
	}
	gc.ExternalLabels = externalLabels(p)

	if spec.NameValidationScheme != nil {
		if g.nameScheme, err = nameValidationScheme(*spec.NameValidationScheme); err != nil {
			return nil, fmt.Errorf("spec.nameValidationScheme: %w", err)
		}
		gc.MetricNameValidationScheme = g.nameScheme.String()
	}
	if spec.NameEscapingScheme != nil {
		if gc.MetricNameEscapingScheme, err = nameEscapingScheme(*spec.NameEscapingScheme); err != nil {
			return nil, fmt.Errorf("spec.nameEscapingScheme: %w", err)
		}
	}
	gc.ScrapeNativeHistograms = spec.ScrapeNativeHistograms
	gc.ConvertClassicHistogramsToNHCB = spec.ConvertClassicHistogramsToNHCB
	gc.AlwaysScrapeClassicHistograms = spec.ScrapeClassicHistograms

	// Global limits apply to jobs without their own; enforced ones cap every job. As with the
	// existing operator, the global value itself is capped by the enforced one, or is the
	// enforced one when unset: the jobs of additionalScrapeConfigs inherit it too.
	for _, l := range []struct {
		field, enforcedField string
		global, enforced     *int64
		out                  *uint64
		into                 *limits
		globalMinor          int // the v2 minor from which global holds the key (gateGlobal)
	}{
		{"sampleLimit", "enforcedSampleLimit", spec.SampleLimit, spec.EnforcedSampleLimit, &gc.SampleLimit, &g.sampleLimit, 45},
		{"targetLimit", "enforcedTargetLimit", spec.TargetLimit, spec.EnforcedTargetLimit, &gc.TargetLimit, &g.targetLimit, 45},
		{"labelLimit", "enforcedLabelLimit", spec.LabelLimit, spec.EnforcedLabelLimit, &gc.LabelLimit, &g.labelLimit, 45},
		{"labelNameLengthLimit", "enforcedLabelNameLengthLimit", spec.LabelNameLengthLimit, spec.EnforcedLabelNameLengthLimit, &gc.LabelNameLengthLimit, &g.labelNameLengthLimit, 45},
		{"labelValueLengthLimit", "enforcedLabelValueLengthLimit", spec.LabelValueLengthLimit, spec.EnforcedLabelValueLengthLimit, &gc.LabelValueLengthLimit, &g.labelValueLengthLimit, 45},
		{"keepDroppedTargets", "enforcedKeepDroppedTargets", spec.KeepDroppedTargets, spec.EnforcedKeepDroppedTargets, &gc.KeepDroppedTargets, &g.keepDrop, 47},
	} {
		if l.global != nil {
			if *l.global < 0 {
				return nil, fmt.Errorf("spec.%s: must not be negative", l.field)
			}
			*l.out = uint64(*l.global)
			l.into.global = *l.global
		}
		if l.enforced != nil {
			if *l.enforced < 0 {
				return nil, fmt.Errorf("spec.%s: must not be negative", l.enforcedField)
			}
			l.into.enforced = *l.enforced
		}
		if e := l.into.enforced; e > 0 && (l.into.global <= 0 || l.into.global > e) {
			*l.out = uint64(e)
		}
		l.into.inGlobal = !g.versionKnown || g.version.AtLeast(2, l.globalMinor)
	}
	if spec.BodySizeLimit != nil && *spec.BodySizeLimit != "" {
		gc.BodySizeLimit = string(*spec.BodySizeLimit)
		if g.globalBodySize, err = units.ParseBase2Bytes(gc.BodySizeLimit); err != nil {
			return nil, fmt.Errorf("spec.bodySizeLimit: invalid size %q: %w", gc.BodySizeLimit, err)
		}
	}
	if spec.EnforcedBodySizeLimit != "" {
		g.enforcedBodySizeText = string(spec.EnforcedBodySizeLimit)
		if g.enforcedBodySize, err = units.ParseBase2Bytes(g.enforcedBodySizeText); err != nil {
			return nil, fmt.Errorf("spec.enforcedBodySizeLimit: invalid size %q: %w", g.enforcedBodySizeText, err)
		}
		if gc.BodySizeLimit == "" {
			// The existing operator's global fallback (it does not cap a global value that
			// is set: the jobs it generates are capped one by one).
			gc.BodySizeLimit = g.enforcedBodySizeText
		}
	}

	if spec.ServiceDiscoveryRole != nil {
		if g.role, err = sdRole(*spec.ServiceDiscoveryRole); err != nil {
			return nil, fmt.Errorf("spec.serviceDiscoveryRole: %w", err)
		}
	}
	if spec.Shards != nil && *spec.Shards > 1 {
		g.shards = uint64(*spec.Shards)
	}
	if l := spec.EnforcedNamespaceLabel; l != "" && !g.nameScheme.IsValidLabelName(l) {
		return nil, fmt.Errorf("spec.enforcedNamespaceLabel: %q is not a valid label name", l)
	}

	for i := range spec.ScrapeClasses {
		sc := &spec.ScrapeClasses[i]
		if _, dup := g.classes[sc.Name]; dup {
			return nil, fmt.Errorf("spec.scrapeClasses[%d]: duplicate scrape class name %q", i, sc.Name)
		}
		g.classes[sc.Name] = sc
		if sc.Default != nil && *sc.Default {
			if g.defaultClass != nil {
				return nil, fmt.Errorf("spec.scrapeClasses[%d]: scrape classes %q and %q are both marked default", i, g.defaultClass.Name, sc.Name)
			}
			g.defaultClass = sc
		}
	}

	doc := &globalDocument{Global: gc, RuleFiles: in.RuleFiles}
	if se := g.sections(doc, gc); se != nil {
		return nil, se
	}
	if se := g.apiServerFrom(); se != nil {
		return nil, se
	}
	g.gateGlobal(gc)
	// The global section alone must load; otherwise nothing can ship.
	if g.globalYAML, err = yaml.Marshal(doc); err != nil {
		return nil, fmt.Errorf("marshal global section: %w", err)
	}
	if _, err := config.Load(string(g.globalYAML), discardLogger); err != nil {
		return nil, fmt.Errorf("global section refused by Prometheus: %w", err)
	}
	return g, nil
}

// externalLabels returns spec.externalLabels plus the two labels that identify the Prometheus
// and its replica; those two win over user labels of the same name. An explicit empty name
// leaves a label out.
func externalLabels(p *monitoringv1.Prometheus) map[string]string {
	out := make(map[string]string, len(p.Spec.ExternalLabels)+2)
	for k, v := range p.Spec.ExternalLabels {
		out[k] = v
	}
	promLabel := defaultPrometheusLabelName
	if n := p.Spec.PrometheusExternalLabelName; n != nil {
		promLabel = *n
	}
	if promLabel != "" {
		out[promLabel] = p.Namespace + "/" + p.Name
	}
	replicaLabel := defaultReplicaLabelName
	if n := p.Spec.ReplicaExternalLabelName; n != nil {
		replicaLabel = *n
	}
	if replicaLabel != "" {
		out[replicaLabel] = podNamePlaceholder
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func parseDuration(s string) (model.Duration, error) {
	d, err := model.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: %w", s, err)
	}
	return d, nil
}

// nameValidationScheme is the label and metric name validation the API's option o stands for.
func nameValidationScheme(o monitoringv1.NameValidationSchemeOptions) (model.ValidationScheme, error) {
	switch o {
	case monitoringv1.LegacyNameValidationScheme:
		return model.LegacyValidation, nil
	case monitoringv1.UTF8NameValidationScheme:
		return model.UTF8Validation, nil
	}
	return model.UnsetValidation, fmt.Errorf("unknown value %q", o)
}

// nameEscapingScheme is the metric_name_escaping_scheme value Prometheus spells o as.
func nameEscapingScheme(o monitoringv1.NameEscapingSchemeOptions) (string, error) {
	switch o {
	case monitoringv1.AllowUTF8NameEscapingScheme:
		return model.AllowUTF8, nil
	case monitoringv1.UnderscoresNameEscapingScheme:
		return model.EscapeUnderscores, nil
	case monitoringv1.DotsNameEscapingScheme:
		return model.EscapeDots, nil
	case monitoringv1.ValuesNameEscapingScheme:
		return model.EscapeValues, nil
	}
	return "", fmt.Errorf("unknown value %q", o)
}

func validScrapeProtocol(sp monitoringv1.ScrapeProtocol) bool {
	switch sp {
	case monitoringv1.PrometheusProto, monitoringv1.PrometheusText0_0_4, monitoringv1.PrometheusText1_0_0,
		monitoringv1.OpenMetricsText0_0_1, monitoringv1.OpenMetricsText1_0_0:
		return true
	}
	return false
}

const (
	roleEndpoints     = "endpoints"
	roleEndpointSlice = "endpointslice"
)

func sdRole(r monitoringv1.ServiceDiscoveryRole) (string, error) {
	switch r {
	case monitoringv1.EndpointsRole:
		return roleEndpoints, nil
	case monitoringv1.EndpointSliceRole:
		return roleEndpointSlice, nil
	}
	return "", fmt.Errorf("unknown role %q (want %q or %q)", r, monitoringv1.EndpointsRole, monitoringv1.EndpointSliceRole)
}
