package rules

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// FuzzGenerate feeds random rule fields next to a known-good PrometheusRule. Whatever the
// input, Generate must not fail or panic, must reject a bad PrometheusRule with a reason and a
// message, must keep the good one, and every file it ships must be one Prometheus loads.
func FuzzGenerate(f *testing.F) {
	for _, seed := range []struct {
		expr, forDur, interval, groupName, alertName, recordName, labelKey, labelValue, annotation, enforced string
	}{
		{"up == 0", "5m", "30s", "g", "A", "", "severity", "page", "{{ $value }}", ""},
		{"up == == 0", "", "", "g", "A", "", "", "", "", ""},
		{"sum(rate(x[5m]))", "", "1m", "g", "", "job:x:rate5m", "team", "sre", "", "namespace"},
		{"", "5x", "-1s", "", "", "", "", "", "", ""},
		{`{"service.name"="a"}`, "0", "0", "ü", "Ä", "", "k8s.pod", "\xff", "{{", "tenant"},
		{"rate(x[5m] @ 1 offset -1m)[1h:]", "1h30m", "1y", "g", "A", "r", "__name__", "v", "a", "__name__"},
		{"x{namespace=\"other\"} unless on() y", "", "", "g", "", "r{", "a", "b", "", "namespace"},
		{"1", "", "", "g", "A", "", "", "", "{{ $labels.x | nope }}", "\xfe"},
		{"foo\n  + bar", "1d", "5m", "g", "", "a:b", "x", "y\nz", "", "ns"},
	} {
		f.Add(seed.expr, seed.forDur, seed.interval, seed.groupName, seed.alertName, seed.recordName, seed.labelKey, seed.labelValue, seed.annotation, seed.enforced)
	}

	f.Fuzz(func(t *testing.T, expr, forDur, interval, groupName, alertName, recordName, labelKey, labelValue, annotation, enforced string) {
		r := monitoringv1.Rule{Alert: alertName, Record: recordName, Expr: intstr.FromString(expr)}
		if forDur != "" {
			r.For = ptr(monitoringv1.Duration(forDur))
			r.KeepFiringFor = ptr(monitoringv1.NonEmptyDuration(forDur))
		}
		if labelKey != "" {
			r.Labels = pairs(labelKey, labelValue)
		}
		if annotation != "" {
			r.Annotations = pairs("summary", annotation)
		}
		g := monitoringv1.RuleGroup{Name: groupName, Rules: []monitoringv1.Rule{r}}
		if interval != "" {
			g.Interval = ptr(monitoringv1.Duration(interval))
		}
		if labelKey != "" {
			g.Labels = pairs(labelKey, labelValue)
		}
		fuzzed := newRule("fuzz", "fuzzed", withGroups(g, group(groupName+"-2", record("r", expr))))
		good := newRule("fuzz", "good")

		p := newPrometheus(withEnforcedNamespaceLabel(enforced))
		res, err := Generate(newInput(p, rules(fuzzed, good)))
		if err != nil {
			// Only the Prometheus-level setting may fail the whole run.
			if _, rerr := newRenderer(p); rerr == nil {
				t.Fatalf("Generate failed on a bad PrometheusRule instead of rejecting it: %v", err)
			}
			return
		}
		if len(res.Verdicts) != 2 {
			t.Fatalf("got %d verdicts, want 2", len(res.Verdicts))
		}
		for _, v := range res.Verdicts {
			if v.Accepted {
				if v.Reason != "" || v.Message != "" {
					t.Errorf("%s accepted with reason %q", v.Name, v.Reason)
				}
				continue
			}
			if v.Reason == "" || v.Message == "" {
				t.Errorf("%s rejected without reason or message: %+v", v.Name, v)
			}
			if v.Name == "good" {
				t.Errorf("the good PrometheusRule was rejected: %s", v.Message)
			}
		}
		mustParseAll(t, p, res)
		fileOf(t, res, good)
		if res.Verdicts[0].Accepted {
			fileOf(t, res, fuzzed)
		} else if configMapOf(res, fuzzed) >= 0 {
			t.Error("a rejected PrometheusRule's file was shipped")
		}
	})
}
