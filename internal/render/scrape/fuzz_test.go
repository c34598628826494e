package scrape

import (
	"errors"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// FuzzGenerate feeds random monitor fields, as a ServiceMonitor, a PodMonitor, a Probe and a
// ScrapeConfig, next to a known-good object of each kind. Whatever the input, Generate must not fail or panic,
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
		{"", "Pod", "https://sd.example.com/targets", "/metrics", "job", "web", "", "30s", "", "app=web", 0},
		{"", "Node", "http://", "", "", "", "", "", "", "a in (", 0},
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

		fuzzedSC := newScrapeConfig("fuzz", "fuzzed", withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			if label != "" {
				s.JobName = &label
			}
			if targetPortName != "" {
				s.MetricsPath = &targetPortName
			}
			d := monitoringv1.Duration(interval)
			s.ScrapeInterval = &d
			s.RelabelConfigs = []monitoringv1.RelabelConfig{rc}
			s.MetricRelabelConfigs = []monitoringv1.RelabelConfig{rc}
			if selKey == "" {
				// Kubernetes discovery with the action as the role and a label selector.
				s.StaticConfigs = nil
				s.KubernetesSDConfigs = []monitoringv1alpha1.KubernetesSDConfig{{
					Role:       monitoringv1alpha1.KubernetesRole(action),
					Namespaces: &monitoringv1alpha1.NamespaceDiscovery{Names: []string{target}},
					Selectors:  []monitoringv1alpha1.K8SSelectorConfig{{Role: monitoringv1alpha1.KubernetesRole(action), Label: &selValue}},
				}}
				s.HTTPSDConfigs = []monitoringv1alpha1.HTTPSDConfig{{URL: monitoringv1alpha1.URL(port)}}
				return
			}
			s.StaticConfigs = []monitoringv1alpha1.StaticConfig{{
				Targets: []monitoringv1alpha1.Target{monitoringv1alpha1.Target(regex), monitoringv1alpha1.Target(replacement)},
				Labels:  map[string]string{selKey: selValue},
			}}
		}))

		res, err := Generate(withScrapeConfigs(newMixedInput(newPrometheus(),
			monitors(fuzzed, newServiceMonitor("fuzz", "good")),
			podMonitors(fuzzedPM, newPodMonitor("fuzz", "good")),
			probes(fuzzedProbe, newProbe("fuzz", "good")),
		), fuzzedSC, newScrapeConfig("fuzz", "good")))
		if err != nil {
			t.Fatalf("Generate failed on a bad monitor instead of rejecting it: %v", err)
		}
		if len(res.Verdicts) != 8 {
			t.Fatalf("got %d verdicts, want 8", len(res.Verdicts))
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
		cfg := mustLoad(t, res.Config())
		for _, prefix := range []string{"serviceMonitor/fuzz/good/", "podMonitor/fuzz/good/", "probe/fuzz/good", "scrapeConfig/fuzz/good"} {
			if !slices.ContainsFunc(cfg.ScrapeConfigs, func(sc *config.ScrapeConfig) bool { return strings.HasPrefix(sc.JobName, prefix) }) {
				t.Errorf("the good monitor's job %s... is missing", prefix)
			}
		}
	})
}

// FuzzAdditionalScrapeConfigs feeds random additional scrape configs next to a good monitor:
// Generate must either ship a config Prometheus loads, with the monitor's job first, or refuse
// them with an *AdditionalConfigError; never fail otherwise or panic.
func FuzzAdditionalScrapeConfigs(f *testing.F) {
	f.Add(additionalNodeExporter)
	f.Add("- job_name: a\n  ec2_sd_configs:\n  - region: eu-west-1\n")
	f.Add("- job_name: serviceMonitor/fuzz/good/0\n")
	f.Add("job_name: a\n")
	f.Add("- {job_name: a, static_configs: [{targets: ['$(SHARD):1']}]}\n- null\n")
	f.Add("- job_name: a\n  relabel_configs: [{regex: '(', action: keep}]\n")
	f.Add("--- \n- job_name: a\n...\n")
	f.Fuzz(func(t *testing.T, raw string) {
		res, err := Generate(withAdditional(newInput(newPrometheus(), monitors(newServiceMonitor("fuzz", "good"))), raw))
		if err != nil {
			var ae *AdditionalConfigError
			if !errors.As(err, &ae) || ae.Message == "" {
				t.Fatalf("Generate failed with %T: %v", err, err)
			}
			return
		}
		cfg := loadIgnoringUnlinkedSD(t, res.Config())
		if len(cfg.ScrapeConfigs) == 0 || cfg.ScrapeConfigs[0].JobName != "serviceMonitor/fuzz/good/0" || !res.Verdicts[0].Accepted {
			t.Fatalf("the good monitor's job is missing:\n%s", res.Config())
		}
	})
}

// loadIgnoringUnlinkedSD loads a generated config without the discovery configs of mechanisms
// this binary's loader does not know, as Generate checks additional scrape and alertmanager
// configs.
func loadIgnoringUnlinkedSD(t *testing.T, cfg []byte) *config.Config {
	t.Helper()
	var doc yaml.MapSlice
	if err := yaml.Unmarshal(cfg, &doc); err != nil {
		t.Fatalf("parse generated config: %v\n%s", err, cfg)
	}
	strip := func(items any) any {
		list, _ := items.([]any)
		for j, item := range list {
			list[j] = checkable(item.(yaml.MapSlice))
		}
		return list
	}
	for i, item := range doc {
		switch item.Key {
		case "scrape_configs":
			doc[i].Value = strip(item.Value)
		case "alerting":
			for k, sub := range item.Value.(yaml.MapSlice) {
				if sub.Key == "alertmanagers" {
					item.Value.(yaml.MapSlice)[k].Value = strip(sub.Value)
				}
			}
		}
	}
	stripped, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return mustLoad(t, stripped)
}

// FuzzAdditionalAlertingConfigs feeds random additional alertmanager and alert relabel configs
// to kube-prometheus's Prometheus: Generate must either ship a config Prometheus loads, with
// the generated alertmanager and the replica label drop first, or refuse them with an
// *AlertingError; never fail otherwise or panic.
func FuzzAdditionalAlertingConfigs(f *testing.F) {
	f.Add(additionalAlertmanagers, additionalAlertRelabel)
	f.Add("- ec2_sd_configs:\n  - region: eu-west-1\n", "")
	f.Add("- timeout: banana\n", "- action: explode\n")
	f.Add("static_configs: []\n", "- null\n")
	f.Add("- {static_configs: [{targets: ['$(POD_NAME):1']}]}\n", "- {source_labels: [a], regex: '('}\n")
	f.Add("--- \n- scheme: https\n...\n", "[]")
	f.Fuzz(func(t *testing.T, alertmanagers, relabel string) {
		res, err := Generate(withAdditionalAlerting(newInput(kubePrometheus(), monitors(newServiceMonitor("fuzz", "good"))), alertmanagers, relabel))
		if err != nil {
			var ae *AlertingError
			if !errors.As(err, &ae) || ae.Message == "" || ae.Reason == "" {
				t.Fatalf("Generate failed with %T: %v", err, err)
			}
			return
		}
		cfg := loadIgnoringUnlinkedSD(t, res.Config())
		a := cfg.AlertingConfig
		if len(a.AlertmanagerConfigs) == 0 || len(a.AlertRelabelConfigs) == 0 || a.AlertRelabelConfigs[0].Action != "labeldrop" {
			t.Fatalf("the generated alerting config is missing:\n%s", res.Config())
		}
	})
}
