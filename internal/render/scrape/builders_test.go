package scrape

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Small option-function builders for the objects the tests feed the generator.

type promOpt func(*monitoringv1.Prometheus)

func newPrometheus(opts ...promOpt) *monitoringv1.Prometheus {
	p := &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main"},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withPromSpec(f func(*monitoringv1.PrometheusSpec)) promOpt {
	return func(p *monitoringv1.Prometheus) { f(&p.Spec) }
}

func withShards(n int32) promOpt {
	return withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.Shards = &n })
}

func withPromRole(r monitoringv1.ServiceDiscoveryRole) promOpt {
	return withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.ServiceDiscoveryRole = &r })
}

func withScrapeClass(sc monitoringv1.ScrapeClass) promOpt {
	return withPromSpec(func(s *monitoringv1.PrometheusSpec) { s.ScrapeClasses = append(s.ScrapeClasses, sc) })
}

type smOpt func(*monitoringv1.ServiceMonitor)

// newServiceMonitor selects Services labelled app=<name> and scrapes their port "web".
func newServiceMonitor(ns, name string, opts ...smOpt) *monitoringv1.ServiceMonitor {
	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Endpoints: []monitoringv1.Endpoint{endpoint()},
		},
	}
	for _, o := range opts {
		o(sm)
	}
	return sm
}

func withSMSpec(f func(*monitoringv1.ServiceMonitorSpec)) smOpt {
	return func(sm *monitoringv1.ServiceMonitor) { f(&sm.Spec) }
}

func withGeneration(g int64) smOpt {
	return func(sm *monitoringv1.ServiceMonitor) { sm.Generation = g }
}

func withEndpoints(eps ...monitoringv1.Endpoint) smOpt {
	return withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) { s.Endpoints = eps })
}

func withSelector(sel metav1.LabelSelector) smOpt {
	return withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) { s.Selector = sel })
}

func withNamespaceSelector(nsSel monitoringv1.NamespaceSelector) smOpt {
	return withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) { s.NamespaceSelector = nsSel })
}

type epOpt func(*monitoringv1.Endpoint)

// endpoint scrapes the Service port "web" unless told otherwise.
func endpoint(opts ...epOpt) monitoringv1.Endpoint {
	ep := monitoringv1.Endpoint{Port: "web"}
	for _, o := range opts {
		o(&ep)
	}
	return ep
}

func port(name string) epOpt { return func(ep *monitoringv1.Endpoint) { ep.Port = name } }

func targetPortNumber(n int) epOpt {
	return func(ep *monitoringv1.Endpoint) {
		ep.Port = ""
		tp := intstr.FromInt(n)
		ep.TargetPort = &tp
	}
}

func targetPortName(name string) epOpt {
	return func(ep *monitoringv1.Endpoint) {
		ep.Port = ""
		tp := intstr.FromString(name)
		ep.TargetPort = &tp
	}
}

func interval(d string) epOpt {
	return func(ep *monitoringv1.Endpoint) { ep.Interval = monitoringv1.Duration(d) }
}

func scrapeTimeout(d string) epOpt {
	return func(ep *monitoringv1.Endpoint) { ep.ScrapeTimeout = monitoringv1.Duration(d) }
}

func relabelings(rcs ...monitoringv1.RelabelConfig) epOpt {
	return func(ep *monitoringv1.Endpoint) { ep.RelabelConfigs = append(ep.RelabelConfigs, rcs...) }
}

func metricRelabelings(rcs ...monitoringv1.RelabelConfig) epOpt {
	return func(ep *monitoringv1.Endpoint) { ep.MetricRelabelConfigs = append(ep.MetricRelabelConfigs, rcs...) }
}

func withEP(f func(*monitoringv1.Endpoint)) epOpt { return f }

func secretRef(name, key string) corev1.SecretKeySelector {
	return corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func basicAuthFrom(secret, userKey, passKey string) epOpt {
	return func(ep *monitoringv1.Endpoint) {
		ep.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef(secret, userKey), Password: secretRef(secret, passKey)}
	}
}

func authorizationFrom(typ, secret, key string) epOpt {
	return func(ep *monitoringv1.Endpoint) {
		ref := secretRef(secret, key)
		ep.Authorization = &monitoringv1.SafeAuthorization{Type: typ, Credentials: &ref}
	}
}

// relabelCfg builds a RelabelConfig; empty strings mean "not set".
func relabelCfg(action string, sources []string, target, regex string) monitoringv1.RelabelConfig {
	rc := monitoringv1.RelabelConfig{Action: action, TargetLabel: target, Regex: regex}
	for _, s := range sources {
		rc.SourceLabels = append(rc.SourceLabels, monitoringv1.LabelName(s))
	}
	return rc
}

func newSecret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func newInput(p *monitoringv1.Prometheus, sms []*monitoringv1.ServiceMonitor, secrets ...*corev1.Secret) Input {
	in := Input{Prometheus: p, ServiceMonitors: sms, Secrets: map[string]*corev1.Secret{}}
	for _, s := range secrets {
		in.Secrets[s.Namespace+"/"+s.Name] = s
	}
	return in
}

func monitors(sms ...*monitoringv1.ServiceMonitor) []*monitoringv1.ServiceMonitor { return sms }

// mustLoad loads a generated prometheus.yaml with Prometheus's own loader.
func mustLoad(t testing.TB, cfg []byte) *config.Config {
	t.Helper()
	c, err := config.Load(string(cfg), discardLogger)
	if err != nil {
		t.Fatalf("Prometheus refuses the generated config: %v\n%s", err, cfg)
	}
	return c
}

// parse reads a generated prometheus.yaml back into this package's own types, which keep
// "unset" apart from Prometheus's defaults.
func parse(t testing.TB, cfg []byte) *document {
	t.Helper()
	var d document
	if err := yaml.UnmarshalStrict(cfg, &d); err != nil {
		t.Fatalf("parse generated config: %v\n%s", err, cfg)
	}
	return &d
}

func jobNamed(t testing.TB, d *document, name string) *scrapeJob {
	t.Helper()
	for _, j := range d.ScrapeConfigs {
		if j.JobName == name {
			return j
		}
	}
	t.Fatalf("no job %q in the generated config", name)
	return nil
}

type pmOpt func(*monitoringv1.PodMonitor)

// newPodMonitor selects Pods labelled app=<name> and scrapes their container port "metrics".
func newPodMonitor(ns, name string, opts ...pmOpt) *monitoringv1.PodMonitor {
	pm := &monitoringv1.PodMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec: monitoringv1.PodMonitorSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{podEndpoint()},
		},
	}
	for _, o := range opts {
		o(pm)
	}
	return pm
}

func withPMSpec(f func(*monitoringv1.PodMonitorSpec)) pmOpt {
	return func(pm *monitoringv1.PodMonitor) { f(&pm.Spec) }
}

func withPodEndpoints(eps ...monitoringv1.PodMetricsEndpoint) pmOpt {
	return withPMSpec(func(s *monitoringv1.PodMonitorSpec) { s.PodMetricsEndpoints = eps })
}

type pepOpt func(*monitoringv1.PodMetricsEndpoint)

// podEndpoint scrapes the container port "metrics" unless told otherwise.
func podEndpoint(opts ...pepOpt) monitoringv1.PodMetricsEndpoint {
	ep := monitoringv1.PodMetricsEndpoint{Port: ptr("metrics")}
	for _, o := range opts {
		o(&ep)
	}
	return ep
}

func podPort(name string) pepOpt {
	return func(ep *monitoringv1.PodMetricsEndpoint) { ep.Port = ptr(name) }
}

func podPortNumber(n int32) pepOpt {
	return func(ep *monitoringv1.PodMetricsEndpoint) {
		ep.Port = nil
		ep.PortNumber = &n
	}
}

func podRelabelings(rcs ...monitoringv1.RelabelConfig) pepOpt {
	return func(ep *monitoringv1.PodMetricsEndpoint) { ep.RelabelConfigs = append(ep.RelabelConfigs, rcs...) }
}

func podMetricRelabelings(rcs ...monitoringv1.RelabelConfig) pepOpt {
	return func(ep *monitoringv1.PodMetricsEndpoint) {
		ep.MetricRelabelConfigs = append(ep.MetricRelabelConfigs, rcs...)
	}
}

func withPEP(f func(*monitoringv1.PodMetricsEndpoint)) pepOpt { return f }

func podMonitors(pms ...*monitoringv1.PodMonitor) []*monitoringv1.PodMonitor { return pms }

type probeOpt func(*monitoringv1.Probe)

// newProbe probes https://example.com with module http_2xx through a blackbox exporter.
func newProbe(ns, name string, opts ...probeOpt) *monitoringv1.Probe {
	p := &monitoringv1.Probe{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec: monitoringv1.ProbeSpec{
			ProberSpec: monitoringv1.ProberSpec{URL: "blackbox-exporter.monitoring.svc:9115"},
			Module:     "http_2xx",
			Targets: monitoringv1.ProbeTargets{StaticConfig: &monitoringv1.ProbeTargetStaticConfig{
				Targets: []string{"https://example.com"},
			}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withProbeSpec(f func(*monitoringv1.ProbeSpec)) probeOpt {
	return func(p *monitoringv1.Probe) { f(&p.Spec) }
}

func withStaticTargets(targets []string, labels map[string]string, rcs ...monitoringv1.RelabelConfig) probeOpt {
	return withProbeSpec(func(s *monitoringv1.ProbeSpec) {
		s.Targets = monitoringv1.ProbeTargets{StaticConfig: &monitoringv1.ProbeTargetStaticConfig{
			Targets: targets, Labels: labels, RelabelConfigs: rcs,
		}}
	})
}

func withIngressTargets(ing monitoringv1.ProbeTargetIngress) probeOpt {
	return withProbeSpec(func(s *monitoringv1.ProbeSpec) {
		s.Targets = monitoringv1.ProbeTargets{Ingress: &ing}
	})
}

func probes(ps ...*monitoringv1.Probe) []*monitoringv1.Probe { return ps }

// newMixedInput is newInput for monitors of every kind.
func newMixedInput(p *monitoringv1.Prometheus, sms []*monitoringv1.ServiceMonitor, pms []*monitoringv1.PodMonitor, ps []*monitoringv1.Probe, secrets ...*corev1.Secret) Input {
	in := newInput(p, sms, secrets...)
	in.PodMonitors, in.Probes = pms, ps
	return in
}

type scOpt func(*monitoringv1alpha1.ScrapeConfig)

// newScrapeConfig scrapes the static target node-1.example.com:9100 unless told otherwise.
func newScrapeConfig(ns, name string, opts ...scOpt) *monitoringv1alpha1.ScrapeConfig {
	sc := &monitoringv1alpha1.ScrapeConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec: monitoringv1alpha1.ScrapeConfigSpec{
			StaticConfigs: []monitoringv1alpha1.StaticConfig{{Targets: []monitoringv1alpha1.Target{"node-1.example.com:9100"}}},
		},
	}
	for _, o := range opts {
		o(sc)
	}
	return sc
}

func withSCSpec(f func(*monitoringv1alpha1.ScrapeConfigSpec)) scOpt {
	return func(sc *monitoringv1alpha1.ScrapeConfig) { f(&sc.Spec) }
}

// withKubernetesSD replaces the static targets with Kubernetes discovery.
func withKubernetesSD(kcs ...monitoringv1alpha1.KubernetesSDConfig) scOpt {
	return withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
		s.StaticConfigs = nil
		s.KubernetesSDConfigs = kcs
	})
}

func scrapeConfigs(scs ...*monitoringv1alpha1.ScrapeConfig) []*monitoringv1alpha1.ScrapeConfig {
	return scs
}

// withScrapeConfigs adds ScrapeConfigs to an input built by newInput or newMixedInput.
func withScrapeConfigs(in Input, scs ...*monitoringv1alpha1.ScrapeConfig) Input {
	in.ScrapeConfigs = append(in.ScrapeConfigs, scs...)
	return in
}
