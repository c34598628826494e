package e2e

import (
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/devenv"
)

func rule(ns, name string, groups ...monitoringv1.RuleGroup) *monitoringv1.PrometheusRule {
	return &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "e2e"}},
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: groups},
	}
}

func TestRulesAreLoadedAlertsFireAndAnInvalidRuleIsRefusedOrRejectedAlone(t *testing.T) {
	if err := devenv.CheckPortsFree(9090, 8080); err != nil {
		t.Fatal(err)
	}
	ns := "e2e-rules"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	always := rule(ns, "always", monitoringv1.RuleGroup{Name: "lookout-e2e", Interval: ptrDuration("1s"), Rules: []monitoringv1.Rule{
		{Alert: "AlwaysFiring", Expr: intstr.FromString("vector(1)"), Labels: map[string]string{"severity": "none"}},
		{Record: "lookout_e2e:one", Expr: intstr.FromString("vector(1)")},
	}})
	mustCreate(t, always)
	mustCreate(t, &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{ServiceMonitorSelector: selectsNoMonitor, ScrapeInterval: "1s"},
			EvaluationInterval:     "1s",
			RuleSelector:           &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e"}},
		},
	})
	pod := runPrometheusPod(t, ns, "main")

	waitQuery(t, `lookout_e2e:one == 1`, "the recorded series exists")
	waitFor(t, "the alert fires", func() bool { return alertStates(t)["AlwaysFiring"] == "firing" })
	if groups := ruleGroups(t); !contains(groups, "lookout-e2e") {
		t.Fatalf("rule groups %v, want lookout-e2e", groups)
	}
	before := runtimeInfo(t)
	reloadsBefore := reloaderReloads(t)
	pid := pod.Containers["prometheus"].Pid()

	// Change the rule: the ConfigMap changes, the kubelet-like volume sync
	// updates the file, the reloader sees the directory change and reloads.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(always), always); err != nil {
			return err
		}
		always.Spec.Groups[0].Rules = append(always.Spec.Groups[0].Rules,
			monitoringv1.Rule{Record: "lookout_e2e:two", Expr: intstr.FromString("vector(2)")})
		return k8s.Update(testCtx, always)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitQuery(t, `lookout_e2e:two == 2`, "the changed rule is evaluated")
	after := runtimeInfo(t)
	if got := pod.Containers["prometheus"].Pid(); got != pid || after.StartTime != before.StartTime {
		t.Errorf("Prometheus restarted: PID %d → %d, start %s → %s", pid, got, before.StartTime, after.StartTime)
	}
	if reloadsAfter := reloaderReloads(t); reloadsAfter <= reloadsBefore {
		t.Errorf("no reload recorded: reloads %v → %v", reloadsBefore, reloadsAfter)
	}

	// The webhook refuses an invalid rule with a readable message.
	broken := rule(ns, "broken", monitoringv1.RuleGroup{Name: "broken", Rules: []monitoringv1.Rule{
		{Record: "lookout_e2e:broken", Expr: intstr.FromString("sum(up")},
	}})
	err = k8s.Create(testCtx, broken.DeepCopy())
	if err == nil || !strings.Contains(err.Error(), "denied the request") || !strings.Contains(err.Error(), "expr") {
		t.Fatalf("creating an invalid rule: err = %v, want the webhook to deny it naming the expr", err)
	}
	t.Logf("webhook answer: %v", err)

	// With the webhook off (its configuration deleted) the rule gets in; the
	// operator rejects it on its status and every other rule keeps working.
	if err := k8s.Delete(testCtx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "lookout"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the apiserver admits the invalid rule without the webhook", func() bool {
		return k8s.Create(testCtx, broken.DeepCopy()) == nil
	})
	waitFor(t, "the invalid rule is Accepted=False on its status", func() bool {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(broken), broken); err != nil {
			return false
		}
		for _, b := range broken.Status.Bindings {
			if b.Name == "main" && len(b.Conditions) > 0 && b.Conditions[0].Status == monitoringv1.ConditionFalse {
				t.Logf("status: %s: %s", b.Conditions[0].Reason, b.Conditions[0].Message)
				return strings.Contains(b.Conditions[0].Message, "parse error")
			}
		}
		return false
	})
	waitQuery(t, `lookout_e2e:two == 2`, "the other rules still evaluate")
	if groups := ruleGroups(t); contains(groups, "broken") || !contains(groups, "lookout-e2e") {
		t.Errorf("rule groups %v, want lookout-e2e and not broken", groups)
	}
	if info := runtimeInfo(t); !info.ReloadConfigSuccess {
		t.Error("Prometheus reports a failed reload")
	}
}

func ruleGroups(t *testing.T) []string {
	t.Helper()
	var out struct {
		Data struct {
			Groups []struct {
				Name string `json:"name"`
			} `json:"groups"`
		} `json:"data"`
	}
	getJSON(t, promURL+"/api/v1/rules", &out)
	var names []string
	for _, g := range out.Data.Groups {
		names = append(names, g.Name)
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func ptrDuration(d string) *monitoringv1.Duration {
	x := monitoringv1.Duration(d)
	return &x
}

// alertStates is the state of every alert Prometheus holds, by alert name.
func alertStates(t *testing.T) map[string]string {
	t.Helper()
	var out struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	getJSON(t, promURL+"/api/v1/alerts", &out)
	states := map[string]string{}
	for _, a := range out.Data.Alerts {
		states[a.Labels["alertname"]] = a.State
	}
	return states
}
