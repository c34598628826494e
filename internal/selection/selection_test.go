package selection

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type promOption func(*monitoringv1.Prometheus)

func prometheus(opts ...promOption) *monitoringv1.Prometheus {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Name: "k8s", Namespace: "monitoring"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func selecting(sel *metav1.LabelSelector) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.ServiceMonitorSelector = sel }
}

func inNamespaces(sel *metav1.LabelSelector) promOption {
	return func(p *monitoringv1.Prometheus) { p.Spec.ServiceMonitorNamespaceSelector = sel }
}

func TestServiceMonitorSelection(t *testing.T) {
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "platform"}}
	cases := []struct {
		name        string
		prom        *monitoringv1.Prometheus
		namespace   string
		labels      map[string]string
		nsLabels    map[string]string
		want        bool
		wantReason  string
		wantMessage string
	}{
		{name: "a nil selector selects nothing", prom: prometheus(), namespace: "monitoring",
			want: false, wantReason: ReasonNoSelector, wantMessage: "selects nothing"},
		{name: "an empty selector selects every monitor in the own namespace", prom: prometheus(selecting(&metav1.LabelSelector{})),
			namespace: "monitoring", want: true, wantReason: ReasonSelected},
		{name: "a nil namespace selector leaves out other namespaces", prom: prometheus(selecting(&metav1.LabelSelector{})),
			namespace: "apps", want: false, wantReason: ReasonNamespaceNotSelected, wantMessage: `only the Prometheus's own namespace "monitoring"`},
		{name: "an empty namespace selector selects every namespace", prom: prometheus(selecting(&metav1.LabelSelector{}), inNamespaces(&metav1.LabelSelector{})),
			namespace: "apps", want: true, wantReason: ReasonSelected},
		{name: "matchLabels names the missing label", prom: prometheus(selecting(team)), namespace: "monitoring",
			labels: map[string]string{"app": "x"}, want: false, wantReason: ReasonLabelsMismatch,
			wantMessage: "serviceMonitorSelector: label team=platform is required but the label is missing"},
		{name: "matchLabels names the wrong value", prom: prometheus(selecting(team)), namespace: "monitoring",
			labels: map[string]string{"team": "apps"}, want: false, wantMessage: `the value is "apps"`},
		{name: "matchExpressions In matches", prom: prometheus(selecting(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}})),
			namespace: "monitoring", labels: map[string]string{"tier": "b"}, want: true},
		{name: "matchExpressions DoesNotExist explains the present label", prom: prometheus(selecting(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}})),
			namespace: "monitoring", labels: map[string]string{"skip": "yes"}, want: false, wantMessage: `label skip must not exist but is "yes"`},
		{name: "a namespace selector by label explains the namespace", prom: prometheus(selecting(&metav1.LabelSelector{}),
			inNamespaces(&metav1.LabelSelector{MatchLabels: map[string]string{"monitored": "true"}})),
			namespace: "apps", nsLabels: map[string]string{}, want: false, wantReason: ReasonNamespaceNotSelected,
			wantMessage: `namespace "apps" is not selected by serviceMonitorNamespaceSelector: label monitored=true is required`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ServiceMonitors(tc.prom)
			if err != nil {
				t.Fatal(err)
			}
			v := s.Match(tc.namespace, tc.labels, tc.nsLabels)
			if v.Selected != tc.want {
				t.Errorf("Selected = %v, want %v (%s)", v.Selected, tc.want, v.Message)
			}
			if tc.wantReason != "" && v.Reason != tc.wantReason {
				t.Errorf("Reason = %s, want %s", v.Reason, tc.wantReason)
			}
			if !strings.Contains(v.Message, tc.wantMessage) {
				t.Errorf("Message = %q, want it to contain %q", v.Message, tc.wantMessage)
			}
		})
	}
}

func TestAnInvalidSelectorIsAnErrorNamingTheField(t *testing.T) {
	p := prometheus(selecting(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "a", Operator: "Near", Values: []string{"b"}}}}))
	_, err := ServiceMonitors(p)
	if err == nil || !strings.Contains(err.Error(), "invalid serviceMonitorSelector") {
		t.Fatalf("err = %v, want invalid serviceMonitorSelector", err)
	}
}
