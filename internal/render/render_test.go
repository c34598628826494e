package render

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/config"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestTheWholeRenderedConfigLoadsAndRulesLandInTheirConfigMap(t *testing.T) {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "k8s", UID: "p-uid"}}
	p.Spec.ServiceMonitorSelector = &metav1.LabelSelector{}
	p.Spec.RuleSelector = &metav1.LabelSelector{}
	sm := &monitoringv1.ServiceMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "app"},
		Spec: monitoringv1.ServiceMonitorSpec{Endpoints: []monitoringv1.Endpoint{{Port: "web"}}}}
	good := &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "good", UID: "g"},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "g",
			Rules: []monitoringv1.Rule{{Record: "job:up:sum", Expr: intstr.FromString("sum by (job) (up)")}}}}}}
	bad := &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "bad", UID: "b"},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "b",
			Rules: []monitoringv1.Rule{{Alert: "Broken", Expr: intstr.FromString("up ==")}}}}}}

	d, err := Prometheus(Inputs{Prometheus: p, ServiceMonitors: []*monitoringv1.ServiceMonitor{sm},
		Rules: []*monitoringv1.PrometheusRule{good, bad}, ReloaderImage: "reloader:test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(string(d.Config()), nil); err != nil {
		t.Fatalf("Prometheus refuses the rendered config: %v\n%s", err, d.Config())
	}
	var secret *corev1.Secret
	var rulesCM *corev1.ConfigMap
	for _, o := range d.Objects {
		switch x := o.(type) {
		case *corev1.Secret:
			if x.Name == "prometheus-k8s" {
				secret = x
			}
		case *corev1.ConfigMap:
			if x.Name == "prometheus-k8s-rulefiles-0" {
				rulesCM = x
			}
		}
	}
	zr, err := gzip.NewReader(bytes.NewReader(secret.Data["prometheus.yaml.gz"]))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); !bytes.Equal(b, d.Config()) {
		t.Error("the config Secret does not hold the rendered config")
	}
	if rulesCM == nil || rulesCM.Data["mon-good-g.yaml"] == "" || rulesCM.Data["mon-bad-b.yaml"] != "" {
		t.Errorf("rule ConfigMap = %+v, want the good rule only", rulesCM)
	}
	accepted := map[string]bool{}
	for _, v := range d.Verdicts {
		accepted[v.Kind+"/"+v.Name] = v.Accepted
	}
	if !accepted["ServiceMonitor/app"] || !accepted["PrometheusRule/good"] || accepted["PrometheusRule/bad"] {
		t.Errorf("verdicts = %+v", d.Verdicts)
	}
}
