package rules

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the current output")

// goldenCase is one Prometheus and one PrometheusRule whose rendered rule file is kept in testdata.
type goldenCase struct {
	prometheus *monitoringv1.Prometheus
	rule       *monitoringv1.PrometheusRule
}

func goldenCases() map[string]goldenCase {
	return map[string]goldenCase{
		"alerting_and_recording": {newPrometheus(), newRule("monitoring", "node", withGroups(
			groupWith("node.rules", func(g *monitoringv1.RuleGroup) { g.Interval = ptr(monitoringv1.Duration("30s")) },
				record("instance:node_cpu_utilisation:rate5m", `1 - avg without (cpu) (sum without (mode) (rate(node_cpu_seconds_total{job="node-exporter", mode=~"idle|iowait|steal"}[5m])))`),
				record("instance:node_load1_per_cpu:ratio", "node_load1 / instance:node_num_cpu:sum"),
			),
			group("node.alerts",
				alert("NodeFilesystemAlmostOutOfSpace", `(node_filesystem_avail_bytes{job="node-exporter",fstype!=""} / node_filesystem_size_bytes{job="node-exporter",fstype!=""} * 100 < 5 and node_filesystem_readonly{job="node-exporter",fstype!=""} == 0)`,
					forDuration("30m"),
					ruleLabels("severity", "warning"),
					annotations(
						"summary", "Filesystem has less than 5% space left.",
						"description", "Filesystem on {{ $labels.device }}, mounted on {{ $labels.mountpoint }}, at {{ $labels.instance }}\nhas only {{ printf \"%.2f\" $value }}% available space left.",
						"runbook_url", "https://runbooks.example.com/node/nodefilesystemalmostoutofspace",
					)),
				alert("Watchdog", "vector(1)", ruleLabels("severity", "none"), annotations("summary", "An alert that should always be firing.")),
			),
		))},

		"all_group_fields": {newPrometheus(), newRule("team-a", "slo", withGroups(
			groupWith("slo", func(g *monitoringv1.RuleGroup) {
				g.Interval = ptr(monitoringv1.Duration("1m"))
				g.QueryOffset = ptr(monitoringv1.Duration("30s"))
				g.Limit = ptr(100)
				g.Labels = pairs("team", "a", "service", "checkout")
				g.PartialResponseStrategy = "abort"
			},
				record("slo:request_errors:ratio_rate5m", "sum(rate(http_requests_total{code=~\"5..\"}[5m]))\n/\nsum(rate(http_requests_total[5m]))\n"),
				alert("ErrorBudgetBurn", "slo:request_errors:ratio_rate5m > 14.4 * 0.001", forDuration("2m"), keepFiringFor("15m"), ruleLabels("severity", "critical")),
				monitoringv1.Rule{Alert: "AlwaysOn", Expr: intstr.FromInt32(1)},
			),
			group("empty"),
		))},

		"enforced_namespace_label": {newPrometheus(withEnforcedNamespaceLabel("namespace")), newRule("team-b", "app", withGroups(
			group("app",
				record("job:http_requests:rate5m", `sum by (job) (rate(http_requests_total{namespace="somewhere-else"}[5m]))`),
				alert("HighLatency", `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m]))) > 0.5 unless on() absent(up{job="app"} offset 5m)`,
					forDuration("10m"), ruleLabels("severity", "warning", "namespace", "spoofed"),
					annotations("summary", "p99 latency of {{ $labels.namespace }} is {{ $value | humanizeDuration }}")),
				alert("Flapping", `changes(max_over_time(up[5m])[1h:1m]) > 10`),
			),
		))},

		"utf8_names": {newPrometheus(), newRule("default", "otel", withGroups(
			group("otel",
				record("http.server.request.duration:rate5m", `sum by ("service.name") (rate({"http.server.request.duration_count"}[5m]))`),
				alert("ServiceDown", `{"service.name"="checkout", __name__="up"} == 0`, ruleLabels("k8s.namespace.name", "default")),
			),
		))},
	}
}

func TestGolden(t *testing.T) {
	for name, c := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			res, err := Generate(newInput(c.prometheus, rules(c.rule)))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			checkVerdicts(t, res.Verdicts, []wantVerdict{{key: c.rule.Namespace + "/" + c.rule.Name}})
			got := []byte(fileOf(t, res, c.rule))
			path := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rule file differs from %s (run with -update to accept):\n--- got\n%s", path, got)
			}
			// The file on disk, not only the fresh output, must be something Prometheus loads.
			mustParse(t, path, string(want))
		})
	}
}

// TestGoldenFilesHaveCases catches a golden file left behind by a removed or renamed case.
func TestGoldenFilesHaveCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := goldenCases()
	for _, f := range files {
		name := filepath.Base(f)
		name = name[:len(name)-len(".golden.yaml")]
		if _, ok := cases[name]; !ok {
			t.Errorf("%s has no golden case", f)
		}
	}
}
