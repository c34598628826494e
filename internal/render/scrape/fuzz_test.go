package scrape

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/config"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// FuzzGenerate feeds random monitor fields, as a ServiceMonitor, a PodMonitor and a Probe, next
// to a known-good monitor of each kind. Whatever the input, Generate must not fail or panic,
// must reject a bad monitor with a reason and a message, and must always ship a config
// Prometheus loads with the good monitors in it.
func FuzzGenerate(f *testing.F) {
	for _, seed := range []struct {
		regex, action, port, targetPortName, label, target, replacement, interval, selKey, selValue string
		targetPort                                                                                  int
	}{
		{"(.*)", "replace", "web", "", "__address__", "instance", "$1", "30s", "app", "x", 0},
		{"(foo", "keep", "web", "", "a", "", "", "", "app", "x", 0},
		{"", "Explode", "", "metrics", "b", "c", "", "1m", "tier", "", 0},
		{"a)|(b", "drop", "", "", "", "", "", "5s", "", "", 70000},
		{"x", "labelmap", "Web_Port", "", "", "", "${1}", "10", "bad key!", "v", 0},
		{"x", "hashmod", "", "", "__address__", "__tmp", "", "0s", "app", "(", 8080},
		{"x", "keepequal", "metrics", "", "a", "b", "", "", "app.kubernetes.io/name", "v", 0},
		{"\xff", "lowercase", "web", "", "\xfe", "\xfd", "", "-1s", "app", "v", 0},
		{"$(SHARD)", "uppercase", "", "http-metrics", "a", "b", "", "1h", "a", "b", 0},
		{".*", "labeldrop", "p", "", "", "", "", "", "a", "b", -5},
	} {
		f.Add(seed.regex, seed.action, seed.port, seed.targetPortName, seed.label, seed.target, seed.replacement, seed.interval, seed.selKey, seed.selValue, seed.targetPort)
	}

	f.Fuzz(func(t *testing.T, regex, action, port, targetPortName, label, target, replacement, interval, selKey, selValue string, targetPort int) {
		ep := monitoringv1.Endpoint{Port: port, Interval: monitoringv1.Duration(interval)}
		switch {
		case targetPortName != "":
			tp := intstr.FromString(targetPortName)
			ep.TargetPort = &tp
		case targetPort != 0:
			tp := intstr.FromInt32(int32(targetPort))
			ep.TargetPort = &tp
		}
		rc := monitoringv1.RelabelConfig{Action: action, Regex: regex, TargetLabel: target}
		if label != "" {
			rc.SourceLabels = []monitoringv1.LabelName{monitoringv1.LabelName(label)}
		}
		if replacement != "" {
			rc.Replacement = &replacement
		}
		ep.RelabelConfigs = []monitoringv1.RelabelConfig{rc}
		ep.MetricRelabelConfigs = []monitoringv1.RelabelConfig{rc}

		fuzzed := newServiceMonitor("fuzz", "fuzzed", withEndpoints(ep), withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
			s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{selKey: selValue}}
			s.JobLabel = label
			if target != "" {
				s.TargetLabels = []string{target}
				s.PodTargetLabels = []string{target}
			}
		}))
		pep := monitoringv1.PodMetricsEndpoint{Port: &port, TargetPort: ep.TargetPort, Interval: ep.Interval}
		if targetPort != 0 {
			n := int32(targetPort)
			pep.PortNumber = &n
		}
		pep.RelabelConfigs, pep.MetricRelabelConfigs = ep.RelabelConfigs, ep.MetricRelabelConfigs
		fuzzedPM := newPodMonitor("fuzz", "fuzzed", withPodEndpoints(pep), withPMSpec(func(s *monitoringv1.PodMonitorSpec) {
			s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{selKey: selValue}}
			s.JobLabel = label
			if target != "" {
				s.PodTargetLabels = []string{target}
			}
		}))
		fuzzedProbe := newProbe("fuzz", "fuzzed", withProbeSpec(func(s *monitoringv1.ProbeSpec) {
			s.ProberSpec.URL = port
			s.ProberSpec.Path = targetPortName
			s.Module = selValue
			s.JobName = label
			s.Interval = monitoringv1.Duration(interval)
			s.MetricRelabelConfigs = []monitoringv1.RelabelConfig{rc}
			if selKey == "" {
				s.Targets = monitoringv1.ProbeTargets{Ingress: &monitoringv1.ProbeTargetIngress{
					Selector:       metav1.LabelSelector{MatchLabels: map[string]string{target: selValue}},
					RelabelConfigs: []monitoringv1.RelabelConfig{rc},
				}}
				return
			}
			s.Targets.StaticConfig = &monitoringv1.ProbeTargetStaticConfig{
				Targets:        []string{regex, replacement},
				Labels:         map[string]string{selKey: selValue},
				RelabelConfigs: []monitoringv1.RelabelConfig{rc},
			}
		}))

		res, err := Generate(newMixedInput(newPrometheus(),
			monitors(fuzzed, newServiceMonitor("fuzz", "good")),
			podMonitors(fuzzedPM, newPodMonitor("fuzz", "good")),
			probes(fuzzedProbe, newProbe("fuzz", "good")),
		))
		if err != nil {
			t.Fatalf("Generate failed on a bad monitor instead of rejecting it: %v", err)
		}
		if len(res.Verdicts) != 6 {
			t.Fatalf("got %d verdicts, want 6", len(res.Verdicts))
		}
		for _, v := range res.Verdicts {
			if v.Accepted {
				if v.Reason != "" {
					t.Errorf("%s accepted with reason %q", v.Name, v.Reason)
				}
				continue
			}
			if v.Reason == "" || v.Message == "" {
				t.Errorf("%s rejected without reason or message: %+v", v.Name, v)
			}
			if v.Name == "good" {
				t.Errorf("the good %s was rejected: %s", v.Kind, v.Message)
			}
		}
		cfg := mustLoad(t, res.Config)
		for _, prefix := range []string{"serviceMonitor/fuzz/good/", "podMonitor/fuzz/good/", "probe/fuzz/good"} {
			if !slices.ContainsFunc(cfg.ScrapeConfigs, func(sc *config.ScrapeConfig) bool { return strings.HasPrefix(sc.JobName, prefix) }) {
				t.Errorf("the good monitor's job %s... is missing", prefix)
			}
		}
	})
}
