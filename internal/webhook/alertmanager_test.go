package webhook

import (
	"encoding/json"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	monitoringv1beta1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func amConfig(route *monitoringv1alpha1.Route, receivers ...string) *monitoringv1alpha1.AlertmanagerConfig {
	c := &monitoringv1alpha1.AlertmanagerConfig{}
	c.Name, c.Namespace = "team", "default"
	c.Spec.Route = route
	for _, r := range receivers {
		c.Spec.Receivers = append(c.Spec.Receivers, monitoringv1alpha1.Receiver{Name: r})
	}
	return c
}

func childRoutes(t *testing.T, routes ...monitoringv1alpha1.Route) []apiextensionsv1.JSON {
	t.Helper()
	out := make([]apiextensionsv1.JSON, len(routes))
	for i, r := range routes {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = apiextensionsv1.JSON{Raw: raw}
	}
	return out
}

func TestValidateAlertmanagerConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) *monitoringv1alpha1.AlertmanagerConfig
		want []string
	}{
		{
			name: "accepts a route tree whose receivers and time intervals exist",
			cfg: func(t *testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				c := amConfig(&monitoringv1alpha1.Route{
					Receiver:  "default",
					GroupWait: ptrTo(monitoringv1.NonEmptyDuration("30s")),
					Matchers:  []monitoringv1alpha1.Matcher{{Name: "severity", Value: "critical|warning", MatchType: "=~"}},
					Routes: childRoutes(t,
						monitoringv1alpha1.Route{Receiver: "pager", MuteTimeIntervals: []string{"weekend"}},
						monitoringv1alpha1.Route{Matchers: []monitoringv1alpha1.Matcher{{Name: "team", Value: "db"}}},
					),
				}, "default", "pager")
				c.Spec.MuteTimeIntervals = []monitoringv1alpha1.MuteTimeInterval{{Name: "weekend", TimeIntervals: []monitoringv1alpha1.TimeInterval{
					{Weekdays: []monitoringv1alpha1.WeekdayRange{"monday:friday"}},
				}}}
				return c
			},
		},
		{
			name: "accepts a config without a route",
			cfg:  func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig { return amConfig(nil, "default") },
		},
		{
			name: "rejects a route that names an unknown receiver",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				return amConfig(&monitoringv1alpha1.Route{Receiver: "nobody"}, "default", "pager")
			},
			want: []string{`spec.route.receiver: Not found: "nobody": no receiver of this name in spec.receivers (defined: default, pager)`},
		},
		{
			name: "rejects a child route that names an unknown receiver",
			cfg: func(t *testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				return amConfig(&monitoringv1alpha1.Route{Receiver: "default", Routes: childRoutes(t,
					monitoringv1alpha1.Route{Receiver: "default"},
					monitoringv1alpha1.Route{Routes: childRoutes(t, monitoringv1alpha1.Route{Receiver: "typo"})},
				)}, "default")
			},
			want: []string{`spec.route.routes[1].routes[0].receiver: Not found: "typo"`},
		},
		{
			name: "rejects a top-level route without a receiver",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				return amConfig(&monitoringv1alpha1.Route{}, "default")
			},
			want: []string{"spec.route.receiver: Required value: the top-level route needs a receiver"},
		},
		{
			name: "rejects two receivers of the same name",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				return amConfig(&monitoringv1alpha1.Route{Receiver: "a"}, "a", "b", "a")
			},
			want: []string{`spec.receivers[2].name: Duplicate value: "a"`},
		},
		{
			name: "rejects a matcher regex that does not compile and an unknown match type",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				return amConfig(&monitoringv1alpha1.Route{Receiver: "a", Matchers: []monitoringv1alpha1.Matcher{
					{Name: "severity", Value: "crit(", MatchType: "=~"},
					{Name: "team", Value: "x", MatchType: "=="},
					{Name: "", Value: "x"},
				}}, "a")
			},
			want: []string{
				`spec.route.matchers[0].value: Invalid value: "crit(": not a valid regular expression: missing closing )`,
				`spec.route.matchers[1].matchType: Unsupported value: "=="`,
				"spec.route.matchers[2].name: Required value",
			},
		},
		{
			name: "rejects a deprecated regex matcher that does not compile",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				return amConfig(&monitoringv1alpha1.Route{Receiver: "a", Matchers: []monitoringv1alpha1.Matcher{{Name: "x", Value: "[", Regex: true}}}, "a")
			},
			want: []string{`spec.route.matchers[0].value: Invalid value: "["`},
		},
		{
			name: "rejects a route duration that is not a Prometheus duration",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				return amConfig(&monitoringv1alpha1.Route{Receiver: "a", RepeatInterval: ptrTo(monitoringv1.NonEmptyDuration("4 hours"))}, "a")
			},
			want: []string{`spec.route.repeatInterval: Invalid value: "4 hours"`},
		},
		{
			name: "rejects a route that mutes by an undefined time interval",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				return amConfig(&monitoringv1alpha1.Route{Receiver: "a", ActiveTimeIntervals: []string{"office-hours"}}, "a")
			},
			want: []string{`spec.route.activeTimeIntervals[0]: Not found: "office-hours": no time interval of this name in spec.muteTimeIntervals (none are defined)`},
		},
		{
			name: "rejects a child route that is not a route",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				return amConfig(&monitoringv1alpha1.Route{Receiver: "a", Routes: []apiextensionsv1.JSON{{Raw: []byte(`"just a string"`)}}}, "a")
			},
			want: []string{"spec.route.routes[0]: Invalid value: not a route: json: cannot unmarshal string"},
		},
		{
			name: "rejects a webhook receiver without a URL",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				c := amConfig(&monitoringv1alpha1.Route{Receiver: "hook"}, "hook")
				c.Spec.Receivers[0].WebhookConfigs = []monitoringv1alpha1.WebhookConfig{{}}
				return c
			},
			want: []string{"spec.receivers[0].webhookConfigs[0].url: Required value: one of url or urlSecret"},
		},
		{
			name: "rejects a receiver whose settings the API type refuses",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				c := amConfig(&monitoringv1alpha1.Route{Receiver: "slack"}, "slack")
				c.Spec.Receivers[0].SlackConfigs = []monitoringv1alpha1.SlackConfig{{Actions: []monitoringv1alpha1.SlackAction{{Type: "button"}}}}
				return c
			},
			want: []string{"spec.receivers[0].slackConfigs[0]: Invalid value: missing 'text' in Slack action configuration"},
		},
		{
			name: "rejects a receiver Secret reference without a key",
			cfg: func(*testing.T) *monitoringv1alpha1.AlertmanagerConfig {
				c := amConfig(&monitoringv1alpha1.Route{Receiver: "pd"}, "pd")
				c.Spec.Receivers[0].PagerDutyConfigs = []monitoringv1alpha1.PagerDutyConfig{{RoutingKey: secretRef("pagerduty", "")}}
				return c
			},
			want: []string{"spec.receivers[0].pagerdutyConfigs[0].routingKey.key: Required value"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateAlertmanagerConfig(tc.cfg(t)), tc.want)
		})
	}
}

func TestValidateAlertmanagerConfigV1beta1(t *testing.T) {
	route := func(r monitoringv1beta1.Route) []apiextensionsv1.JSON {
		raw, _ := json.Marshal(r)
		return []apiextensionsv1.JSON{{Raw: raw}}
	}
	cfg := func(mutate func(*monitoringv1beta1.AlertmanagerConfigSpec)) *monitoringv1beta1.AlertmanagerConfig {
		c := &monitoringv1beta1.AlertmanagerConfig{}
		c.Spec.Route = &monitoringv1beta1.Route{Receiver: "default"}
		c.Spec.Receivers = []monitoringv1beta1.Receiver{{Name: "default"}}
		mutate(&c.Spec)
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  *monitoringv1beta1.AlertmanagerConfig
		want []string
	}{
		{
			name: "accepts a route that uses a defined time interval",
			cfg: cfg(func(s *monitoringv1beta1.AlertmanagerConfigSpec) {
				s.TimeIntervals = []monitoringv1beta1.TimeInterval{{Name: "nights"}}
				s.Route.Routes = route(monitoringv1beta1.Route{Receiver: "default", MuteTimeIntervals: []string{"nights"}})
			}),
		},
		{
			name: "rejects a child route that names an unknown receiver",
			cfg: cfg(func(s *monitoringv1beta1.AlertmanagerConfigSpec) {
				s.Route.Routes = route(monitoringv1beta1.Route{Receiver: "ops"})
			}),
			want: []string{`spec.route.routes[0].receiver: Not found: "ops": no receiver of this name in spec.receivers (defined: default)`},
		},
		{
			name: "rejects a route that mutes by an undefined time interval, naming timeIntervals",
			cfg: cfg(func(s *monitoringv1beta1.AlertmanagerConfigSpec) {
				s.Route.MuteTimeIntervals = []string{"nights"}
			}),
			want: []string{`spec.route.muteTimeIntervals[0]: Not found: "nights": no time interval of this name in spec.timeIntervals`},
		},
		{
			name: "rejects a receiver Secret reference without a name",
			cfg: cfg(func(s *monitoringv1beta1.AlertmanagerConfigSpec) {
				s.Receivers[0].WebhookConfigs = []monitoringv1beta1.WebhookConfig{{URLSecret: &monitoringv1beta1.SecretKeySelector{Key: "url"}}}
			}),
			want: []string{"spec.receivers[0].webhookConfigs[0].urlSecret.name: Required value: the name of the Secret"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateAlertmanagerConfigV1beta1(tc.cfg), tc.want)
		})
	}
}
