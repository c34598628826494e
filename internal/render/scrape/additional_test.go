package scrape

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v2"
)

const additionalNodeExporter = `# Hand-written jobs, kept as they are.
- job_name: node-exporter
  scrape_interval: 15s
  static_configs:
  - targets: ['10.0.0.1:9100', '10.0.0.2:9100']
    labels:
      dc: eu-1
  basic_auth:
    username: prom
    password: "s3cret"
  relabel_configs:
  - source_labels: [__address__]
    regex: '([^:]+):\d+'
    target_label: host
- job_name: kubelet
  scheme: https
  kubernetes_sd_configs:
  - role: node
  bearer_token_file: /var/run/secrets/kubernetes.io/serviceaccount/token
`

func withAdditional(in Input, raw string) Input {
	in.AdditionalScrapeConfigs = []byte(raw)
	return in
}

func additionalGoldenCases() map[string]Input {
	return map[string]Input{
		"additional_scrape_configs": withAdditional(withScrapeConfigs(newInput(newPrometheus(withShards(2)), monitors(newServiceMonitor("default", "app"))),
			newScrapeConfig("default", "nodes")), additionalNodeExporter),
	}
}

func TestGenerateAppendsAdditionalScrapeConfigsAsGiven(t *testing.T) {
	for _, shards := range []int32{1, 2} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) {
			in := withAdditional(withScrapeConfigs(newInput(newPrometheus(withShards(shards), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.EnforcedNamespaceLabel = "tenant"
				s.EnforcedSampleLimit = ptr(int64(100))
			})), monitors(newServiceMonitor("default", "app"))), newScrapeConfig("default", "nodes")), additionalNodeExporter+additionalSelfSharded)
			res, err := Generate(in)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			cfg := mustLoad(t, res.Config())
			var names []string
			for _, sc := range cfg.ScrapeConfigs {
				names = append(names, sc.JobName)
			}
			if want := []string{"serviceMonitor/default/app/0", "scrapeConfig/default/nodes", "node-exporter", "kubelet", "self-sharded"}; !slices.Equal(names, want) {
				t.Fatalf("jobs = %v, want %v", names, want)
			}

			// The additional jobs are what was given: same keys and values; with several
			// shards, the sharding rules are appended to the relabelings of the jobs that do
			// not shard themselves, and nothing else is added.
			var doc struct {
				ScrapeConfigs []yaml.MapSlice `yaml:"scrape_configs"`
			}
			if err := yaml.Unmarshal(res.Config(), &doc); err != nil {
				t.Fatal(err)
			}
			var given []yaml.MapSlice
			if err := yaml.Unmarshal([]byte(additionalNodeExporter+additionalSelfSharded), &given); err != nil {
				t.Fatal(err)
			}
			got := doc.ScrapeConfigs[2:]
			if shards > 1 {
				for i := range given[:2] {
					given[i] = withSharding(given[i], uint64(shards))
				}
			}
			gotYAML, _ := yaml.Marshal(got)
			givenYAML, _ := yaml.Marshal(given)
			if !bytes.Equal(gotYAML, givenYAML) {
				t.Errorf("additional jobs changed:\n--- got\n%s--- given\n%s", gotYAML, givenYAML)
			}
			wantRelabel := map[int32]int{1: 1, 2: 4}[shards]
			// Nothing is added to the job itself, but it inherits the enforced sample limit
			// from global, as with the existing operator.
			if ne := cfg.ScrapeConfigs[2]; len(ne.RelabelConfigs) != wantRelabel || len(ne.MetricRelabelConfigs) != 0 || ne.SampleLimit != 100 {
				t.Errorf("node-exporter: %d relabelings (want %d), %d metric relabelings, sample_limit %d (want the enforced 100)",
					len(ne.RelabelConfigs), wantRelabel, len(ne.MetricRelabelConfigs), ne.SampleLimit)
			}
			if self := cfg.ScrapeConfigs[4]; len(self.RelabelConfigs) != 2 {
				t.Errorf("a job that shards itself got %d relabelings, want its own 2", len(self.RelabelConfigs))
			}
			if string(cfg.ScrapeConfigs[2].HTTPClientConfig.BasicAuth.Password) != "s3cret" {
				t.Error("the additional job's password was not kept")
			}
		})
	}
}

// additionalSelfSharded is a job that shards its targets itself.
const additionalSelfSharded = `- job_name: self-sharded
  static_configs:
  - targets: ['10.0.0.3:9100']
  relabel_configs:
  - source_labels: [__address__]
    modulus: 4
    target_label: __tmp_hash
    action: hashmod
  - source_labels: [__tmp_hash]
    regex: $(SHARD)
    action: keep
`

func TestGenerateWithoutAdditionalScrapeConfigs(t *testing.T) {
	base := newInput(newPrometheus(), monitors(newServiceMonitor("default", "app")))
	want, err := Generate(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"", "  \n", "[]", "# only a comment\n", "---\n", "[]\n...\n", "[]\n---\n"} {
		res, err := Generate(withAdditional(base, raw))
		if err != nil {
			t.Fatalf("%q: Generate: %v", raw, err)
		}
		if !bytes.Equal(res.Config(), want.Config()) {
			t.Errorf("%q changes the config:\n%s", raw, res.Config())
		}
	}

	res, err := Generate(withAdditional(newInput(newPrometheus(), nil), "---\n- job_name: only\n  static_configs: [{targets: ['a:1']}]\n...\n"))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if cfg := mustLoad(t, res.Config()); len(cfg.ScrapeConfigs) != 1 || cfg.ScrapeConfigs[0].JobName != "only" {
		t.Errorf("config = %s", res.Config())
	}
}

// Discovery mechanisms Prometheus has but this binary does not link cannot be checked here; they
// ship as given rather than refusing a config Prometheus takes.
func TestGenerateShipsAdditionalDiscoveryItCannotCheck(t *testing.T) {
	// Marathon is a mechanism Prometheus knows and the operator does not
	// link (no ScrapeConfig field renders it): shipped unchecked.
	if sdLinked("marathon") {
		t.Fatal("Marathon discovery is linked in: pick a mechanism the operator does not link")
	}
	raw := "- job_name: marathon\n  marathon_sd_configs:\n  - servers:\n    - http://marathon.example:8080\n"
	res, err := Generate(withAdditional(newInput(newPrometheus(), nil), raw))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if out := string(res.Config()); !strings.Contains(out, "marathon_sd_configs:") || !strings.Contains(out, "http://marathon.example:8080") {
		t.Errorf("the Marathon discovery was not shipped:\n%s", out)
	}
	// A misspelt key is no discovery mechanism Prometheus knows: still refused.
	_, err = Generate(withAdditional(newInput(newPrometheus(), nil), "- job_name: ec3\n  ec3_sd_configs: []\n"))
	var ae *AdditionalConfigError
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "ec3_sd_configs") {
		t.Errorf("err = %v", err)
	}
}

func TestGenerateRefusesBadAdditionalScrapeConfigs(t *testing.T) {
	tests := []struct {
		name    string
		in      Input
		wantMsg []string
	}{
		{
			name:    "refuses additional scrape configs that are not YAML",
			in:      withAdditional(newInput(newPrometheus(), nil), "- job_name: [unclosed\n"),
			wantMsg: []string{"additionalScrapeConfigs: not a YAML list of scrape configs: yaml: line"},
		},
		{
			name:    "refuses a single scrape config that is not in a list",
			in:      withAdditional(newInput(newPrometheus(), nil), "job_name: alone\n"),
			wantMsg: []string{"additionalScrapeConfigs: not a YAML list of scrape configs: got a mapping"},
		},
		{
			name:    "refuses a list item that is not a scrape config",
			in:      withAdditional(newInput(newPrometheus(), nil), "- job_name: a\n-\n"),
			wantMsg: []string{"additionalScrapeConfigs: item 1 is not a scrape config"},
		},
		{
			name:    "refuses a second YAML document rather than dropping it",
			in:      withAdditional(newInput(newPrometheus(), nil), "- job_name: a\n---\n- job_name: b\n"),
			wantMsg: []string{"additionalScrapeConfigs: more than one YAML document"},
		},
		{
			name:    "refuses a list item that is a string",
			in:      withAdditional(newInput(newPrometheus(), nil), "- job_name: a\n- just-a-string\n"),
			wantMsg: []string{"additionalScrapeConfigs: not a YAML list of scrape configs: line 2: cannot unmarshal !!str"},
		},
		{
			name:    "refuses a key given twice, naming the job",
			in:      withAdditional(newInput(newPrometheus(), nil), "- job_name: a\n- job_name: b\n  scrape_interval: 1m\n  scrape_interval: 2m\n"),
			wantMsg: []string{`additionalScrapeConfigs: item 1 (job "b"): Prometheus refuses it: field scrape_interval already set`},
		},
		{
			name:    "refuses a field Prometheus does not know",
			in:      withAdditional(newInput(newPrometheus(), nil), "- job_name: a\n  scrape_intervall: 10s\n"),
			wantMsg: []string{`additionalScrapeConfigs: item 0 (job "a"): Prometheus refuses it: field scrape_intervall not found in type config.ScrapeConfig`},
		},
		{
			name:    "refuses a relabeling regex that does not compile",
			in:      withAdditional(newInput(newPrometheus(), nil), "- job_name: a\n  relabel_configs:\n  - source_labels: [x]\n    regex: '(foo'\n    action: keep\n"),
			wantMsg: []string{`additionalScrapeConfigs: item 0 (job "a"): Prometheus refuses it: error parsing regexp`, "(foo"},
		},
		{
			name:    "refuses two additional jobs with the same name",
			in:      withAdditional(newInput(newPrometheus(), nil), "- job_name: x\n- job_name: x\n"),
			wantMsg: []string{`additionalScrapeConfigs: Prometheus refuses the configuration with them: found multiple scrape configs with job name "x"`},
		},
		{
			name:    "refuses a job named like a generated one",
			in:      withAdditional(newInput(newPrometheus(), monitors(newServiceMonitor("default", "app"))), "- job_name: serviceMonitor/default/app/0\n"),
			wantMsg: []string{"additionalScrapeConfigs: Prometheus refuses the configuration with them", `found multiple scrape configs with job name "serviceMonitor/default/app/0"`},
		},
		{
			name: "refuses bad additional scrape configs next to a rejected monitor",
			in: withAdditional(newInput(newPrometheus(), monitors(
				newServiceMonitor("default", "app", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
					s.ScrapeProtocols = []monitoringv1.ScrapeProtocol{monitoringv1.PrometheusProto, monitoringv1.PrometheusProto}
				})),
			)), "- job_name: a\n  scrape_timeout: 1m\n  scrape_interval: 10s\n"),
			wantMsg: []string{`additionalScrapeConfigs: item 0 (job "a"): Prometheus refuses it:`, "scrape timeout greater than scrape interval"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Generate(tc.in)
			if err == nil {
				t.Fatalf("Generate succeeded:\n%s", res.Config())
			}
			ae, ok := err.(*AdditionalConfigError)
			if !ok {
				t.Fatalf("err is a %T, want *AdditionalConfigError: %v", err, err)
			}
			for _, s := range tc.wantMsg {
				if !strings.Contains(ae.Message, s) {
					t.Errorf("message %q does not contain %q", ae.Message, s)
				}
			}
			if ae.Error() != ae.Message {
				t.Errorf("Error() = %q", ae.Error())
			}
			if strings.Contains(ae.Message, "\n") {
				t.Errorf("message spans several lines: %q", ae.Message)
			}
		})
	}
}

// A monitor only Prometheus's loader refuses is rejected alone; the additional jobs still ship.
func TestGenerateRejectsABadMonitorAndKeepsAdditionalScrapeConfigs(t *testing.T) {
	in := withAdditional(newInput(newPrometheus(), monitors(
		newServiceMonitor("default", "bad", withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
			s.ScrapeProtocols = []monitoringv1.ScrapeProtocol{monitoringv1.PrometheusProto, monitoringv1.PrometheusProto}
		})),
		newServiceMonitor("default", "good"),
	)), "- job_name: extra\n")
	res, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if res.Verdicts[0].Accepted || res.Verdicts[0].Reason != ReasonInvalidConfig || !res.Verdicts[1].Accepted {
		t.Errorf("verdicts = %+v", res.Verdicts)
	}
	var names []string
	for _, sc := range mustLoad(t, res.Config()).ScrapeConfigs {
		names = append(names, sc.JobName)
	}
	if want := []string{"serviceMonitor/default/good/0", "extra"}; !slices.Equal(names, want) {
		t.Errorf("jobs = %v, want %v", names, want)
	}
}
