package rules

import (
	"fmt"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// sizedRule returns a PrometheusRule whose rule file, with its name, takes exactly size bytes of
// a ConfigMap: a recording rule padded with a long label value.
func sizedRule(t testing.TB, ns, name string, size int) *monitoringv1.PrometheusRule {
	t.Helper()
	build := func(pad int) *monitoringv1.PrometheusRule {
		return newRule(ns, name, withGroups(group("g", record("r", "up", ruleLabels("pad", strings.Repeat("x", pad))))))
	}
	measure := func(pr *monitoringv1.PrometheusRule) int {
		content, rej := mustRenderer(t).renderFile(pr)
		if rej != nil {
			t.Fatalf("render %s/%s: %s", ns, name, rej.message)
		}
		return len(FileName(pr)) + len(content)
	}
	pad := 1
	pad += size - measure(build(pad))
	if pad < 1 {
		t.Fatalf("%d bytes is too small for a rule file", size)
	}
	pr := build(pad)
	if got := measure(pr); got != size {
		t.Fatalf("sized rule takes %d bytes, want %d", got, size)
	}
	return pr
}

func mustRenderer(t testing.TB) *renderer {
	t.Helper()
	r, err := newRenderer(newPrometheus())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGeneratePacking(t *testing.T) {
	const half = MaxConfigMapBytes / 2

	tests := []struct {
		name  string
		rules func(t *testing.T) []*monitoringv1.PrometheusRule
		want  []wantVerdict
		// placement is the ConfigMap index of each rule, by name; -1 when left out.
		placement map[string]int
		cms       int
	}{
		{
			name: "fills a ConfigMap up to exactly MaxConfigMapBytes",
			rules: func(t *testing.T) []*monitoringv1.PrometheusRule {
				return rules(sizedRule(t, "ns", "a", half), sizedRule(t, "ns", "b", half))
			},
			want:      []wantVerdict{{key: "ns/a"}, {key: "ns/b"}},
			placement: map[string]int{"a": 0, "b": 0},
			cms:       1,
		},
		{
			name: "packs files into a second ConfigMap when the first is full",
			rules: func(t *testing.T) []*monitoringv1.PrometheusRule {
				return rules(sizedRule(t, "ns", "c", 1000), sizedRule(t, "ns", "a", half), sizedRule(t, "ns", "b", half+1))
			},
			want:      []wantVerdict{{key: "ns/a"}, {key: "ns/b"}, {key: "ns/c"}},
			placement: map[string]int{"a": 0, "b": 1, "c": 1},
			cms:       2,
		},
		{
			name: "rejects a single rule file larger than half a MiB",
			rules: func(t *testing.T) []*monitoringv1.PrometheusRule {
				return rules(sizedRule(t, "ns", "big", MaxConfigMapBytes+1), sizedRule(t, "ns", "full", MaxConfigMapBytes), newRule("ns", "small"))
			},
			want: []wantVerdict{
				{key: "ns/big", reason: ReasonTooLarge, message: "the rule file is 524289 bytes with its name, more than the 524288 one rule ConfigMap holds; split the PrometheusRule"},
				{key: "ns/full"},
				{key: "ns/small"},
			},
			placement: map[string]int{"big": -1, "full": 0, "small": 1},
			cms:       2,
		},
		{
			name: "rejects rules beyond MaxConfigMaps ConfigMaps with TooManyRules",
			rules: func(t *testing.T) []*monitoringv1.PrometheusRule {
				var prs []*monitoringv1.PrometheusRule
				for i := range 2 * MaxConfigMaps {
					prs = append(prs, sizedRule(t, "ns", fmt.Sprintf("r%02d", i), half))
				}
				// Both sort after the others; the small one would fit nowhere either.
				return append(prs, sizedRule(t, "ns", "x-big", half), newRule("ns", "y-small"))
			},
			want: func() []wantVerdict {
				var w []wantVerdict
				for i := range 2 * MaxConfigMaps {
					w = append(w, wantVerdict{key: fmt.Sprintf("ns/r%02d", i)})
				}
				return append(w,
					wantVerdict{key: "ns/x-big", reason: ReasonTooManyRules, message: `all 8 rule ConfigMaps are full (524288 bytes each) before rule file "ns-x-big-uid-x-big.yaml"; rule files are packed in file name order`},
					wantVerdict{key: "ns/y-small", reason: ReasonTooManyRules, msgContains: []string{`before rule file "ns-y-small-uid-y-small.yaml"`}},
				)
			}(),
			placement: map[string]int{"r00": 0, "r01": 0, "r02": 1, "r15": 7, "x-big": -1, "y-small": -1},
			cms:       MaxConfigMaps,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prs := tt.rules(t)
			p := newPrometheus()
			res, err := Generate(newInput(p, prs))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			checkVerdicts(t, res.Verdicts, tt.want)
			mustParseAll(t, p, res)
			if len(res.ConfigMaps) != tt.cms {
				t.Errorf("got %d ConfigMaps, want %d", len(res.ConfigMaps), tt.cms)
			}
			byName := map[string]*monitoringv1.PrometheusRule{}
			for _, pr := range prs {
				byName[pr.Name] = pr
			}
			for name, want := range tt.placement {
				if got := configMapOf(res, byName[name]); got != want {
					t.Errorf("%s is in ConfigMap %d, want %d", name, got, want)
				}
			}
		})
	}
}
