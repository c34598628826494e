package install

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/controlplane"
)

// alertCase is one rule unit test of a shipped alert, in Prometheus's
// rule-test format: input series, and the alerts expected at evalTime
// (none: the alert stays quiet).
type alertCase struct {
	name     string
	alert    string
	series   map[string]string // series → values in promtool's expanding notation
	evalTime string
	fires    []map[string]string // the labels of each expected alert, the rule's own included
}

const ns = `namespace="lookout-system"`

var alertCases = []alertCase{
	{name: "reconcile errors keep rising", alert: "LookoutReconcileErrors", evalTime: "30m",
		series: map[string]string{`lookout_reconcile_errors_total{` + ns + `,kind="Prometheus",reason="InvalidAlerting",pod="lookout-0"}`: "0+1x40"},
		fires:  []map[string]string{{"namespace": "lookout-system", "kind": "Prometheus", "reason": "InvalidAlerting", "severity": "warning"}}},
	{name: "no reconcile error since the start", alert: "LookoutReconcileErrors", evalTime: "30m",
		series: map[string]string{`lookout_reconcile_errors_total{` + ns + `,kind="Prometheus",reason="InvalidAlerting",pod="lookout-0"}`: "3x40"}},

	{name: "a workload controller keeps failing", alert: "LookoutControllerErrors", evalTime: "30m",
		series: map[string]string{`controller_runtime_reconcile_errors_total{` + ns + `,controller="alertmanager",pod="lookout-0"}`: "0+2x40"},
		fires:  []map[string]string{{"namespace": "lookout-system", "controller": "alertmanager", "severity": "warning"}}},
	{name: "only a controller that is not a workload's fails", alert: "LookoutControllerErrors", evalTime: "30m",
		series: map[string]string{
			`controller_runtime_reconcile_errors_total{` + ns + `,controller="prometheus",pod="lookout-0"}`: "1x40",
			`controller_runtime_reconcile_errors_total{` + ns + `,controller="other",pod="lookout-0"}`:      "0+2x40",
		}},

	{name: "objects are newly rejected", alert: "LookoutRejectedObjectsRising", evalTime: "20m",
		series: map[string]string{`lookout_rejected_objects_total{` + ns + `,kind="ServiceMonitor",reason="InvalidRegex",pod="lookout-0"}`: "0+1x30"},
		fires:  []map[string]string{{"namespace": "lookout-system", "kind": "ServiceMonitor", "reason": "InvalidRegex", "severity": "info"}}},
	{name: "rejections that happened long ago", alert: "LookoutRejectedObjectsRising", evalTime: "60m",
		series: map[string]string{`lookout_rejected_objects_total{` + ns + `,kind="ServiceMonitor",reason="InvalidRegex",pod="lookout-0"}`: "0+1x5 5x60"}},

	{name: "a reloader's last reload failed", alert: "LookoutConfigNotReloaded", evalTime: "20m",
		series: map[string]string{`lookout_reloader_last_reload_successful{namespace="team-a",pod="prom-agent-edge-0"}`: "0x30"},
		fires:  []map[string]string{{"namespace": "team-a", "pod": "prom-agent-edge-0", "severity": "warning"}}},
	{name: "every reloader loaded its configuration", alert: "LookoutConfigNotReloaded", evalTime: "20m",
		series: map[string]string{`lookout_reloader_last_reload_successful{namespace="team-a",pod="prom-agent-edge-0"}`: "1x30"}},

	// time() at 2h is 7200 s: the certificate expires 3 days, or 30 days, later.
	{name: "the webhook certificate expires in 3 days", alert: "LookoutWebhookCertificateExpiring", evalTime: "2h",
		series: map[string]string{`lookout_webhook_certificate_expiry_timestamp_seconds{` + ns + `,pod="lookout-0"}`: fmt.Sprintf("%dx150", 7200+3*86400)},
		fires:  []map[string]string{{"namespace": "lookout-system", "pod": "lookout-0", "severity": "warning"}}},
	{name: "the webhook certificate expires in 30 days", alert: "LookoutWebhookCertificateExpiring", evalTime: "2h",
		series: map[string]string{`lookout_webhook_certificate_expiry_timestamp_seconds{` + ns + `,pod="lookout-0"}`: fmt.Sprintf("%dx150", 7200+30*86400)}},

	{name: "the webhook certificate cannot be read", alert: "LookoutWebhookCertificateUnreadable", evalTime: "20m",
		series: map[string]string{`lookout_webhook_certificate_expiry_timestamp_seconds{` + ns + `,pod="lookout-0"}`: "0x30"},
		fires:  []map[string]string{{"namespace": "lookout-system", "pod": "lookout-0", "severity": "warning"}}},
	{name: "the webhook certificate is read", alert: "LookoutWebhookCertificateUnreadable", evalTime: "20m",
		series: map[string]string{`lookout_webhook_certificate_expiry_timestamp_seconds{` + ns + `,pod="lookout-0"}`: "2000000000x30"}},

	{name: "replicas run and none exports the leader gauge", alert: "LookoutNoLeader", evalTime: "10m",
		series: map[string]string{
			`up{job="lookout-metrics",` + ns + `,pod="lookout-0"}`: "1x20",
			`up{job="lookout-metrics",` + ns + `,pod="lookout-1"}`: "1x20",
		},
		fires: []map[string]string{{"namespace": "lookout-system", "severity": "critical"}}},
	{name: "the replica that led released the lease", alert: "LookoutNoLeader", evalTime: "10m",
		series: map[string]string{
			`up{job="lookout-metrics",` + ns + `,pod="lookout-0"}`:                                     "1x20",
			`leader_election_master_status{` + ns + `,pod="lookout-0",name="lookout-operator-leader"}`: "0x20",
		},
		fires: []map[string]string{{"namespace": "lookout-system", "severity": "critical"}}},
	{name: "one replica leads", alert: "LookoutNoLeader", evalTime: "10m",
		series: map[string]string{
			`up{job="lookout-metrics",` + ns + `,pod="lookout-0"}`:                                     "1x20",
			`up{job="lookout-metrics",` + ns + `,pod="lookout-1"}`:                                     "1x20",
			`leader_election_master_status{` + ns + `,pod="lookout-1",name="lookout-operator-leader"}`: "1x20",
		}},
	{name: "no replica runs at all (a down target is another alert's)", alert: "LookoutNoLeader", evalTime: "10m",
		series: map[string]string{`up{job="lookout-metrics",` + ns + `,pod="lookout-0"}`: "0x20"}},
}

// labelRef is a template reference to a label in an annotation.
var labelRef = regexp.MustCompile(`\{\{ \$labels\.([a-z_]+) \}\}`)

// Every alert of the operator's PrometheusRule has a rule unit test in which
// it fires and one in which it stays quiet, run by Prometheus's own promtool
// on the rules as the install ships them, annotations expanded.
func TestTheOperatorsAlertsFireAndStayQuietAsTheirRuleUnitTestsSay(t *testing.T) {
	pr := PrometheusRule(Options{})
	var alerts []string
	annotations := map[string]map[string]string{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			annotations[r.Alert] = r.Annotations
		}
	}
	for _, a := range alerts {
		var fires, quiet bool
		for _, c := range alertCases {
			if c.alert == a {
				fires = fires || len(c.fires) > 0
				quiet = quiet || len(c.fires) == 0
			}
		}
		if !fires || !quiet {
			t.Errorf("alert %s needs a rule unit test where it fires and one where it stays quiet (fires: %v, quiet: %v)", a, fires, quiet)
		}
	}

	dir := t.TempDir()
	rules, err := yaml.Marshal(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lookout.rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	var tests []any
	for _, c := range alertCases {
		if !slices.Contains(alerts, c.alert) {
			t.Errorf("case %q tests %s, which the PrometheusRule does not ship", c.name, c.alert)
			continue
		}
		var series []any
		for s, v := range c.series {
			series = append(series, map[string]any{"series": s, "values": v})
		}
		exp := []any{}
		for _, labels := range c.fires {
			ann := map[string]string{}
			for k, v := range annotations[c.alert] {
				ann[k] = labelRef.ReplaceAllStringFunc(v, func(ref string) string { return labels[labelRef.FindStringSubmatch(ref)[1]] })
			}
			exp = append(exp, map[string]any{"exp_labels": labels, "exp_annotations": ann})
		}
		tests = append(tests, map[string]any{
			"name":         c.name,
			"interval":     "1m",
			"input_series": series,
			"alert_rule_test": []any{map[string]any{
				"eval_time": c.evalTime, "alertname": c.alert, "exp_alerts": exp,
			}},
		})
	}
	file, err := yaml.Marshal(map[string]any{
		"rule_files":          []string{"lookout.rules.yaml"},
		"evaluation_interval": "1m",
		"tests":               tests,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lookout.test.yaml"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	promtool, err := controlplane.Promtool.Ensure(t.Context(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), promtool, "test", "rules", "lookout.test.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n--- rule tests:\n%s", err, out, file)
	}
}
