package amconfig

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	amcfg "github.com/prometheus/alertmanager/config"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A base config whose values YAML 1.1 reads as booleans or numbers when they are not
// decoded into a string: each must reach Alertmanager as written.
const yaml11Base = `global:
  slack_api_url: https://hooks.slack.com/services/T0/B0/X
route:
  receiver: default
  routes:
  - receiver: pager
    match: {paging: yes}
  - receiver: pager
    match:
      code: 0755
      version: 1.10
      size: 1e3
      window: on
receivers:
- name: default
- name: pager
  slack_configs:
  - channel: off
    send_resolved: yes
`

func baseInput(base string, configs ...*monitoringv1alpha1.AlertmanagerConfig) Input {
	return Input{
		Alertmanager: &monitoringv1.Alertmanager{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main"}},
		Base:         map[string][]byte{"alertmanager.yaml": []byte(base)},
		Configs:      configs,
	}
}

func TestTheUsersBaseConfigKeepsItsMeaning(t *testing.T) {
	want, err := amcfg.Load(yaml11Base)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]Input{
		"alone": baseInput(yaml11Base),
		"with an AlertmanagerConfig merged in": baseInput(yaml11Base, &monitoringv1alpha1.AlertmanagerConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a"},
			Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
				Route:     &monitoringv1alpha1.Route{Receiver: "x"},
				Receivers: []monitoringv1alpha1.Receiver{{Name: "x"}},
			},
		}),
	} {
		t.Run(name, func(t *testing.T) {
			res, err := Generate(in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := amcfg.Load(string(res.Config))
			if err != nil {
				t.Fatalf("%v\n%s", err, res.Config)
			}
			routes := got.Route.Routes
			if len(in.Configs) > 0 {
				routes = routes[1:] // the AlertmanagerConfig's sub-route goes first
			}
			if len(routes) != 2 {
				t.Fatalf("routes: %v", got.Route.Routes)
			}
			equal(t, "match paging", routes[0].Match["paging"], "yes")
			for k, v := range map[string]string{"code": "0755", "version": "1.10", "size": "1e3", "window": "on"} {
				equal(t, "match "+k, routes[1].Match[k], v)
			}
			slack := got.Receivers[1].SlackConfigs[0]
			equal(t, "slack channel", slack.Channel, "off")
			equal(t, "send_resolved", slack.SendResolved(), true)
			if len(in.Configs) == 0 && got.String() != want.String() {
				t.Errorf("the generated config means something else than the user's:\n%s\nwant:\n%s", got, want)
			}
			if !strings.Contains(string(res.Config), "match: {paging: yes}") {
				t.Errorf("the user's text is rewritten:\n%s", res.Config)
			}
		})
	}
}

// The global AlertmanagerConfig is the base; an alertmanagerConfigSelector that
// matches it too does not merge it a second time, nor give it a verdict.
func TestTheGlobalAlertmanagerConfigIsMergedOnce(t *testing.T) {
	global := &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "global"},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route:     &monitoringv1alpha1.Route{Receiver: "x"},
			Receivers: []monitoringv1alpha1.Receiver{{Name: "x"}},
		},
	}
	other := global.DeepCopy()
	other.Namespace = "team"
	in := baseInput("", global, other)
	in.Alertmanager.Spec.AlertmanagerConfiguration = &monitoringv1.AlertmanagerConfiguration{Name: "global"}
	in.Global = global
	res, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Verdicts) != 1 || res.Verdicts[0].Namespace != "team" || !res.Verdicts[0].Accepted {
		t.Errorf("verdicts: %+v, want team/global accepted and none for the global one", res.Verdicts)
	}
	if n := strings.Count(string(res.Config), "name: monitoring/global/x"); n != 1 {
		t.Errorf("the global receiver is written %d times:\n%s", n, res.Config)
	}
}

func amc(ns, name string, spec monitoringv1alpha1.AlertmanagerConfigSpec) *monitoringv1alpha1.AlertmanagerConfig {
	return &monitoringv1alpha1.AlertmanagerConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

// An AlertmanagerConfig without a route contributes its inhibit rules only: its
// receivers could never be reached, and one Alertmanager would refuse (a Slack
// receiver without an API URL) no longer takes the inhibit rules down with it.
func TestARoutelessAlertmanagerConfigAddsItsInhibitRulesOnly(t *testing.T) {
	res, err := Generate(baseInput("", amc("team", "inhibit", monitoringv1alpha1.AlertmanagerConfigSpec{
		Receivers: []monitoringv1alpha1.Receiver{{Name: "s", SlackConfigs: []monitoringv1alpha1.SlackConfig{{Channel: ptrTo("#x")}}}},
		InhibitRules: []monitoringv1alpha1.InhibitRule{{
			SourceMatch: []monitoringv1alpha1.Matcher{{Name: "severity", Value: "critical"}},
			TargetMatch: []monitoringv1alpha1.Matcher{{Name: "severity", Value: "warning"}, {Name: "namespace", Value: "team"}},
		}},
	})))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verdicts[0].Accepted {
		t.Fatalf("verdict %+v", res.Verdicts[0])
	}
	cfg, err := amcfg.Load(string(res.Config))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Receivers) != 1 || len(cfg.InhibitRules) != 1 {
		t.Errorf("want the base receiver only and the inhibit rule:\n%s", res.Config)
	}
	if n := strings.Count(string(res.Config), `namespace="team"`); n != 2 {
		t.Errorf("the namespace matcher is written %d times, want once on each side:\n%s", n, res.Config)
	}
}

func TestTheGlobalRouteCannotContinue(t *testing.T) {
	global := amc("monitoring", "global", monitoringv1alpha1.AlertmanagerConfigSpec{
		Route: &monitoringv1alpha1.Route{Receiver: "x", Continue: true}, Receivers: []monitoringv1alpha1.Receiver{{Name: "x"}},
	})
	in := baseInput("")
	in.Alertmanager.Spec.AlertmanagerConfiguration = &monitoringv1.AlertmanagerConfiguration{Name: "global"}
	in.Global = global
	_, err := Generate(in)
	if be, ok := err.(*BaseConfigError); !ok || !strings.Contains(be.Message, "spec.route.continue") {
		t.Errorf("Generate = %v, want the global route's continue refused by name", err)
	}
}

func TestTheFirstTemplateOfAFileNameWins(t *testing.T) {
	global := amc("monitoring", "global", monitoringv1alpha1.AlertmanagerConfigSpec{
		Route: &monitoringv1alpha1.Route{Receiver: "x"}, Receivers: []monitoringv1alpha1.Receiver{{Name: "x"}},
	})
	in := baseInput("")
	tmpl := func(cm string) monitoringv1.SecretOrConfigMap {
		return monitoringv1.SecretOrConfigMap{ConfigMap: cmSel(cm, "slack.tmpl")}
	}
	in.Alertmanager.Spec.AlertmanagerConfiguration = &monitoringv1.AlertmanagerConfiguration{Name: "global",
		Templates: []monitoringv1.SecretOrConfigMap{tmpl("first"), tmpl("second")}}
	in.Global = global
	in.ConfigMaps = map[string]*corev1.ConfigMap{
		"monitoring/first":  {Data: map[string]string{"slack.tmpl": "first"}},
		"monitoring/second": {Data: map[string]string{"slack.tmpl": "second"}},
	}
	res, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Files["slack.tmpl"]) != "first" {
		t.Errorf("slack.tmpl = %q, want the first template's", res.Files["slack.tmpl"])
	}
}

// The existing operator orders AlertmanagerConfigs by "namespace/name" as one string.
func TestAlertmanagerConfigsAreMergedInTheExistingOperatorsOrder(t *testing.T) {
	spec := monitoringv1alpha1.AlertmanagerConfigSpec{Route: &monitoringv1alpha1.Route{Receiver: "x"}, Receivers: []monitoringv1alpha1.Receiver{{Name: "x"}}}
	res, err := Generate(baseInput("", amc("team-a", "x", spec), amc("team", "x", spec)))
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(string(res.Config), "receiver: team-a/x/x"), strings.Index(string(res.Config), "receiver: team/x/x"); i < 0 || j < 0 || i > j {
		t.Errorf("want team-a/x before team/x ('-' < '/'):\n%s", res.Config)
	}
}

// Before v0.22 Alertmanager reads no matchers lists: an AlertmanagerConfig's matchers
// become match and match_re, and a negative one, which has no such form, is refused.
func TestMatchersBecomeMatchMapsBeforeV022(t *testing.T) {
	spec := func(mt monitoringv1alpha1.MatchType) monitoringv1alpha1.AlertmanagerConfigSpec {
		return monitoringv1alpha1.AlertmanagerConfigSpec{
			Route: &monitoringv1alpha1.Route{Receiver: "x", Matchers: []monitoringv1alpha1.Matcher{
				{Name: "severity", Value: "page", MatchType: mt}, {Name: "service", Value: "api|web", MatchType: monitoringv1alpha1.MatchRegexp}}},
			Receivers: []monitoringv1alpha1.Receiver{{Name: "x"}},
			InhibitRules: []monitoringv1alpha1.InhibitRule{{
				SourceMatch: []monitoringv1alpha1.Matcher{{Name: "severity", Value: "critical"}},
				TargetMatch: []monitoringv1alpha1.Matcher{{Name: "severity", Value: "warning"}},
			}},
		}
	}
	in := baseInput("", amc("team", "a", spec(monitoringv1alpha1.MatchEqual)), amc("team", "b", spec(monitoringv1alpha1.MatchNotEqual)))
	in.Alertmanager.Spec.Version = "v0.21.0"
	res, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Verdicts[0].Accepted || res.Verdicts[1].Accepted || res.Verdicts[1].Reason != ReasonUnsupportedVersion {
		t.Errorf("verdicts %+v, want team/a accepted and team/b (severity!=page) refused", res.Verdicts)
	}
	cfg, err := amcfg.Load(string(res.Config))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Route.Routes[0]
	if r.Match["severity"] != "page" || r.Match["namespace"] != "team" || r.MatchRE["service"].String() != "^(?:api|web)$" || strings.Contains(string(res.Config), "matchers") {
		t.Errorf("want match/match_re only:\n%s", res.Config)
	}
	if ir := cfg.InhibitRules[0]; ir.SourceMatch["severity"] != "critical" || ir.TargetMatch["namespace"] != "team" {
		t.Errorf("inhibit rule: %+v", ir)
	}
}
