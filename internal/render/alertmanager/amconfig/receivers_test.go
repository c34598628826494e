package amconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	amcfg "github.com/prometheus/alertmanager/config"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

func equal[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// document is a minimal config around one receiver named x.
func document(g *globalConfig, rcv *receiver) yaml.MapSlice {
	var doc yaml.MapSlice
	if g != nil {
		doc = append(doc, yaml.MapItem{Key: "global", Value: g})
	}
	doc = append(doc,
		yaml.MapItem{Key: "route", Value: yaml.MapSlice{{Key: "receiver", Value: "x"}}},
		yaml.MapItem{Key: "receivers", Value: []*receiver{rcv}})
	return doc
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "receivers", name+".golden.yaml")
	if *updateReceivers {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-receivers to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run with -update-receivers to accept):\n%s", path, got)
	}
}

func TestReceiverGolden(t *testing.T) {
	for _, tc := range receiverCases() {
		t.Run(tc.name, func(t *testing.T) {
			out, err := convertReceiver(testRefs(amLatest), "spec.receivers[0]", &tc.rc)
			if err != nil {
				t.Fatal(err)
			}
			out.Name = "x"
			b, err := yaml.Marshal(document(nil, out))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, b)
			cfg, err := amcfg.Load(string(b))
			if err != nil {
				t.Fatalf("Alertmanager refuses the config: %v\n%s", err, b)
			}
			tc.check(t, &cfg.Receivers[0])
		})
	}
}

// fieldsSetIn fails for each field of T that is the zero value in every item: the
// fixtures must set every field of the API types, so that a field added to them is
// either converted or refused.
func fieldsSetIn[T any](t *testing.T, items ...T) {
	t.Helper()
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		if !slices.ContainsFunc(items, func(it T) bool { return !reflect.ValueOf(it).Field(i).IsZero() }) {
			t.Errorf("%s.%s is set in no fixture: convert it and set it in the fixtures, or refuse it", typ.Name(), typ.Field(i).Name)
		}
	}
}

// allReceiver has every config of every fixture.
func allReceiver() monitoringv1alpha1.Receiver {
	var all monitoringv1alpha1.Receiver
	dst := reflect.ValueOf(&all).Elem()
	for _, tc := range receiverCases() {
		src := reflect.ValueOf(tc.rc)
		for i := range src.NumField() {
			if src.Field(i).Kind() == reflect.Slice {
				dst.Field(i).Set(reflect.AppendSlice(dst.Field(i), src.Field(i)))
			}
		}
	}
	return all
}

func TestReceiverFixturesSetEveryField(t *testing.T) {
	all := allReceiver()
	v := reflect.ValueOf(all)
	for i := range v.NumField() {
		if v.Type().Field(i).Name != "Name" && v.Field(i).Len() == 0 {
			t.Errorf("Receiver.%s has no fixture", v.Type().Field(i).Name)
		}
	}
	fieldsSetIn(t, all.DiscordConfigs...)
	fieldsSetIn(t, all.EmailConfigs...)
	fieldsSetIn(t, all.MSTeamsConfigs...)
	fieldsSetIn(t, all.MSTeamsV2Configs...)
	fieldsSetIn(t, all.OpsGenieConfigs...)
	fieldsSetIn(t, all.PagerDutyConfigs...)
	fieldsSetIn(t, all.PushoverConfigs...)
	fieldsSetIn(t, all.RocketChatConfigs...)
	fieldsSetIn(t, all.SlackConfigs...)
	fieldsSetIn(t, all.SNSConfigs...)
	fieldsSetIn(t, all.TelegramConfigs...)
	fieldsSetIn(t, all.VictorOpsConfigs...)
	fieldsSetIn(t, all.WebexConfigs...)
	fieldsSetIn(t, all.WebhookConfigs...)
	fieldsSetIn(t, all.WeChatConfigs...)

	fieldsSetIn(t, all.SlackConfigs[0].Actions...)
	fieldsSetIn(t, *all.SlackConfigs[0].Actions[1].ConfirmField)
	fieldsSetIn(t, all.SlackConfigs[0].Fields...)
	fieldsSetIn(t, all.PagerDutyConfigs[0].PagerDutyImageConfigs...)
	fieldsSetIn(t, all.PagerDutyConfigs[0].PagerDutyLinkConfigs...)
	fieldsSetIn(t, all.OpsGenieConfigs[0].Responders...)
	fieldsSetIn(t, all.RocketChatConfigs[0].Fields...)
	fieldsSetIn(t, all.RocketChatConfigs[0].Actions...)
	fieldsSetIn(t, *all.SNSConfigs[0].Sigv4)
	fieldsSetIn(t, *all.EmailConfigs[0].Threading)
	fieldsSetIn(t, *tlsFull())

	https := []monitoringv1alpha1.HTTPConfig{*httpAuthorization(), *httpBasicAuth(), *httpOAuth2(), *httpBearer()}
	fieldsSetIn(t, https...)
	var proxies []monitoringv1.ProxyConfig
	for _, h := range https {
		proxies = append(proxies, h.ProxyConfig)
		if h.OAuth2 != nil {
			fieldsSetIn(t, *h.OAuth2)
			proxies = append(proxies, h.OAuth2.ProxyConfig)
		}
	}
	fieldsSetIn(t, proxies...)
}

// referenced lists the "ns/name" of every Secret and ConfigMap selector in v.
func referenced(v any) (secrets, configMaps []string) {
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k))
			}
		case reflect.Struct:
			switch s := v.Interface().(type) {
			case corev1.SecretKeySelector:
				if s.Name != "" {
					secrets = append(secrets, "ns/"+s.Name)
				}
				return
			case corev1.ConfigMapKeySelector:
				configMaps = append(configMaps, "ns/"+s.Name)
				return
			}
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(v))
	slices.Sort(secrets)
	slices.Sort(configMaps)
	return slices.Compact(secrets), slices.Compact(configMaps)
}

func collectRefs() *refs {
	return &refs{ns: "ns", collect: true, secretKeys: map[string]struct{}{}, configMapKeys: map[string]struct{}{},
		version: workload.Version{Major: 1 << 20}}
}

func sortedKeys(m map[string]struct{}) []string {
	var l []string
	for k := range m {
		l = append(l, k)
	}
	slices.Sort(l)
	return l
}

func TestCollectVisitsEveryReference(t *testing.T) {
	all := allReceiver()
	// A broken config first: the references after it must still be visited.
	all.DiscordConfigs = append([]monitoringv1alpha1.DiscordConfig{{APIURL: sel("discord", "url"), AvatarURL: amURL("not a url")}}, all.DiscordConfigs...)
	r := collectRefs()
	if _, err := convertReceiver(r, "spec.receivers[0]", &all); err == nil {
		t.Fatal("the broken Discord config converted")
	}
	wantS, wantC := referenced(all)
	if got := sortedKeys(r.secretKeys); !slices.Equal(got, wantS) {
		t.Errorf("Secrets recorded:\n got %v\nwant %v", got, wantS)
	}
	if got := sortedKeys(r.configMapKeys); !slices.Equal(got, wantC) {
		t.Errorf("ConfigMaps recorded:\n got %v\nwant %v", got, wantC)
	}
	if len(wantS) < 15 {
		t.Errorf("the fixtures reference only %d Secrets", len(wantS))
	}

	g := globalFixture()
	r = collectRefs()
	if _, err := convertGlobal(r, "", g); err != nil {
		t.Fatal(err)
	}
	wantS, wantC = referenced(g)
	if got := sortedKeys(r.secretKeys); !slices.Equal(got, wantS) {
		t.Errorf("global: Secrets recorded:\n got %v\nwant %v", got, wantS)
	}
	if got := sortedKeys(r.configMapKeys); !slices.Equal(got, wantC) {
		t.Errorf("global: ConfigMaps recorded:\n got %v\nwant %v", got, wantC)
	}
}

func wantRejection(t *testing.T, err error, reason, field string) {
	t.Helper()
	var rj *rejection
	if !errors.As(err, &rj) {
		t.Fatalf("got %v, want a rejection %s naming %s", err, reason, field)
	}
	if rj.Reason != reason || !strings.Contains(rj.Message, field) {
		t.Errorf("got %s: %q, want %s naming %s", rj.Reason, rj.Message, reason, field)
	}
}

func TestReceiverReferenceErrors(t *testing.T) {
	optional := func(s corev1.SecretKeySelector) *corev1.SecretKeySelector {
		s.Optional = ptrTo(true)
		return &s
	}
	for _, tc := range []struct {
		name   string
		rc     monitoringv1alpha1.Receiver
		reason string // "" for no error
		field  string
	}{
		{"missing Secret", monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{APIURL: selp("nope", "url")}}},
			ReasonSecretNotFound, "spec.receivers[3].slackConfigs[0].apiURL: Secret ns/nope not found"},
		{"missing key", monitoringv1alpha1.Receiver{PagerDutyConfigs: []monitoringv1alpha1.PagerDutyConfig{{RoutingKey: selp("pagerduty", "nope")}}},
			ReasonSecretKeyNotFound, "spec.receivers[3].pagerdutyConfigs[0].routingKey"},
		{"missing key deep in httpConfig", monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL:        ptrTo("https://example.com"),
			HTTPConfig: &monitoringv1alpha1.HTTPConfig{BasicAuth: &monitoringv1.BasicAuth{Username: sel("http", "user"), Password: sel("http", "nope")}},
		}}}, ReasonSecretKeyNotFound, "spec.receivers[3].webhookConfigs[0].httpConfig.basicAuth.password"},
		{"missing ConfigMap", monitoringv1alpha1.Receiver{OpsGenieConfigs: []monitoringv1alpha1.OpsGenieConfig{{
			HTTPConfig: &monitoringv1alpha1.HTTPConfig{OAuth2: &monitoringv1.OAuth2{
				ClientID: monitoringv1.SecretOrConfigMap{ConfigMap: cmSel("nope", "id")}, ClientSecret: sel("http", "client-secret"), TokenURL: "https://auth.example.com/"}},
		}}}, ReasonConfigMapNotFound, "spec.receivers[3].opsgenieConfigs[0].httpConfig.oauth2.clientId.configMap"},
		{"optional missing Secret", monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), URLSecret: optional(sel("nope", "url")),
		}}}, "", ""},
		{"optional missing key", monitoringv1alpha1.Receiver{OpsGenieConfigs: []monitoringv1alpha1.OpsGenieConfig{{APIKey: optional(sel("opsgenie", "nope"))}}},
			"", ""},
		{"optional missing value still needed", monitoringv1alpha1.Receiver{DiscordConfigs: []monitoringv1alpha1.DiscordConfig{{APIURL: *optional(sel("nope", "url"))}}},
			ReasonInvalidReceiver, "spec.receivers[3].discordConfigs[0].apiURL"},
		{"selector without key", monitoringv1alpha1.Receiver{TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{ChatID: 1, BotToken: selp("telegram", "")}}},
			ReasonInvalidReceiver, "spec.receivers[3].telegramConfigs[0].botToken"},
		{"a Secret's bad URL is not shown", monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{APIURL: selp("pagerduty", "routing")}}},
			ReasonInvalidReceiver, `spec.receivers[3].slackConfigs[0].apiURL: the value of key "routing" of Secret ns/pagerduty is not an http(s) URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convertReceiver(testRefs(amLatest), "spec.receivers[3]", &tc.rc)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantRejection(t, err, tc.reason, tc.field)
		})
	}
}

func TestOptionalWebhookSecretFallsBackToURL(t *testing.T) {
	rc := monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
		URL: ptrTo("https://example.com/hook"), URLSecret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "url", Optional: ptrTo(true)},
	}}}
	out, err := convertReceiver(testRefs(amLatest), "spec.receivers[0]", &rc)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "url", out.WebhookConfigs[0].URL, "https://example.com/hook")
}

func TestReceiverValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version workload.Version
		rc      monitoringv1alpha1.Receiver
		reason  string
		field   string
	}{
		// Fields newer than the default Alertmanager, v0.31.1.
		{"slack updateMessage", amDefault, monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{
			APIURL: selp("slack", "bot-url"), UpdateMessage: ptrTo(true)}}},
			ReasonUnsupportedVersion, "spec.receivers[0].slackConfigs[0].updateMessage: requires Alertmanager v0.32.0 or later, the Alertmanager runs v0.31.1"},
		{"webhook payload", amDefault, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), Payload: ptrTo("{}")}}},
			ReasonUnsupportedVersion, "webhookConfigs[0].payload: requires Alertmanager v0.32.0"},
		{"sns useAWSHTTPClient", amDefault, monitoringv1alpha1.Receiver{SNSConfigs: []monitoringv1alpha1.SNSConfig{{
			TopicARN: ptrTo("arn"), UseAWSHTTPClient: ptrTo(false)}}},
			ReasonUnsupportedVersion, "snsConfigs[0].useAWSHTTPClient: requires Alertmanager v0.33.0"},
		{"sigv4 externalId", amDefault, monitoringv1alpha1.Receiver{SNSConfigs: []monitoringv1alpha1.SNSConfig{{
			TopicARN: ptrTo("arn"), Sigv4: &monitoringv1.Sigv4{RoleArn: "arn:role", ExternalID: "x"}}}},
			ReasonUnsupportedVersion, "snsConfigs[0].sigv4.externalId: requires Alertmanager v0.34.0"},
		// Older Alertmanagers.
		{"msteamsv2", workload.Version{Minor: 27}, monitoringv1alpha1.Receiver{MSTeamsV2Configs: []monitoringv1alpha1.MSTeamsV2Config{{
			WebhookURL: selp("msteamsv2", "url")}}},
			ReasonUnsupportedVersion, "msteamsv2Configs[0]: requires Alertmanager v0.28.0"},
		{"rocketchat", workload.Version{Minor: 27}, monitoringv1alpha1.Receiver{RocketChatConfigs: []monitoringv1alpha1.RocketChatConfig{{}}},
			ReasonUnsupportedVersion, "rocketchatConfigs[0]: requires Alertmanager v0.28.0"},
		{"telegram messageThreadID", workload.Version{Minor: 27}, monitoringv1alpha1.Receiver{TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{
			ChatID: 1, BotToken: selp("telegram", "token"), MessageThreadID: ptrTo(int64(2))}}},
			ReasonUnsupportedVersion, "telegramConfigs[0].messageThreadID: requires Alertmanager v0.28.0"},
		{"discord content", workload.Version{Minor: 27}, monitoringv1alpha1.Receiver{DiscordConfigs: []monitoringv1alpha1.DiscordConfig{{
			APIURL: sel("discord", "url"), Content: ptrTo("x")}}},
			ReasonUnsupportedVersion, "discordConfigs[0].content: requires Alertmanager v0.28.0"},
		{"pagerduty timeout", workload.Version{Minor: 29}, monitoringv1alpha1.Receiver{PagerDutyConfigs: []monitoringv1alpha1.PagerDutyConfig{{
			RoutingKey: selp("pagerduty", "routing"), Timeout: dur("10s")}}},
			ReasonUnsupportedVersion, "pagerdutyConfigs[0].timeout: requires Alertmanager v0.30.0"},
		{"templated webhook URL", workload.Version{Minor: 30}, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com/{{ .Receiver }}")}}},
			ReasonUnsupportedVersion, "webhookConfigs[0].url (a templated URL): requires Alertmanager v0.31.0"},
		{"inline TLS CA", workload.Version{Minor: 25}, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), HTTPConfig: &monitoringv1alpha1.HTTPConfig{TLSConfig: &monitoringv1.SafeTLSConfig{CA: monitoringv1.SecretOrConfigMap{Secret: selp("tls", "ca")}}}}}},
			ReasonUnsupportedVersion, "webhookConfigs[0].httpConfig.tlsConfig.ca: requires Alertmanager v0.26.0"},
		{"noProxy", workload.Version{Minor: 25}, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), HTTPConfig: &monitoringv1alpha1.HTTPConfig{ProxyConfig: monitoringv1.ProxyConfig{ProxyURL: ptrTo("http://p:1"), NoProxy: ptrTo("x")}}}}},
			ReasonUnsupportedVersion, "webhookConfigs[0].httpConfig.noProxy: requires Alertmanager v0.26.0"},

		// Invalid values.
		{"slack action without name or url", amLatest, monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{
			Actions: []monitoringv1alpha1.SlackAction{{Type: "button", Text: "x"}}}}},
			ReasonInvalidReceiver, "slackConfigs[0].actions[0]: missing 'name' or 'url'"},
		{"slack updateMessage with a webhook URL", amLatest, monitoringv1alpha1.Receiver{SlackConfigs: []monitoringv1alpha1.SlackConfig{{
			APIURL: selp("slack", "url"), UpdateMessage: ptrTo(true)}}},
			ReasonInvalidReceiver, "slackConfigs[0].updateMessage"},
		{"opsgenie responder type", amLatest, monitoringv1alpha1.Receiver{OpsGenieConfigs: []monitoringv1alpha1.OpsGenieConfig{{
			Responders: []monitoringv1alpha1.OpsGenieConfigResponder{{Name: ptrTo("x"), Type: "robot"}}}}},
			ReasonInvalidReceiver, "opsgenieConfigs[0].responders[0]"},
		{"two authentications", amLatest, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), HTTPConfig: &monitoringv1alpha1.HTTPConfig{
				BasicAuth: &monitoringv1.BasicAuth{Username: sel("http", "user")}, BearerTokenSecret: selp("http", "bearer")}}}},
			ReasonInvalidReceiver, "webhookConfigs[0].httpConfig: at most one of"},
		{"pushover userKey and userKeyFile", amLatest, monitoringv1alpha1.Receiver{PushoverConfigs: []monitoringv1alpha1.PushoverConfig{{
			UserKey: selp("pushover", "user"), UserKeyFile: ptrTo("/f"), Token: selp("pushover", "token")}}},
			ReasonInvalidReceiver, "pushoverConfigs[0]: userKey and userKeyFile are mutually exclusive"},
		{"pushover without token", amLatest, monitoringv1alpha1.Receiver{PushoverConfigs: []monitoringv1alpha1.PushoverConfig{{
			UserKey: selp("pushover", "user")}}},
			ReasonInvalidReceiver, "pushoverConfigs[0]: one of token and tokenFile must be set"},
		{"telegram without chatID", amLatest, monitoringv1alpha1.Receiver{TelegramConfigs: []monitoringv1alpha1.TelegramConfig{{
			BotToken: selp("telegram", "token")}}},
			ReasonInvalidReceiver, "telegramConfigs[0].chatID: must be set"},
		{"webhook without URL", amLatest, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{}}},
			ReasonInvalidReceiver, "webhookConfigs[0]: one of url and urlSecret must be set"},
		{"bad duration", amLatest, monitoringv1alpha1.Receiver{WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
			URL: ptrTo("https://example.com"), Timeout: dur("5 minutes")}}},
			ReasonInvalidReceiver, "webhookConfigs[0].timeout"},
		{"duplicate detail", amLatest, monitoringv1alpha1.Receiver{PagerDutyConfigs: []monitoringv1alpha1.PagerDutyConfig{{
			RoutingKey: selp("pagerduty", "routing"), Details: []monitoringv1alpha1.KeyValue{{Key: "a", Value: "1"}, {Key: "a", Value: "2"}}}}},
			ReasonInvalidReceiver, "pagerdutyConfigs[0].details[1].key"},
		{"duplicate email header", amLatest, monitoringv1alpha1.Receiver{EmailConfigs: []monitoringv1alpha1.EmailConfig{{
			To: ptrTo("a@example.com"), Headers: []monitoringv1alpha1.KeyValue{{Key: "subject", Value: "1"}, {Key: "Subject", Value: "2"}}}}},
			ReasonInvalidReceiver, "emailConfigs[0].headers[1].key"},
		{"email threading and References", amLatest, monitoringv1alpha1.Receiver{EmailConfigs: []monitoringv1alpha1.EmailConfig{{
			To: ptrTo("a@example.com"), Headers: []monitoringv1alpha1.KeyValue{{Key: "references", Value: "x"}},
			Threading: &monitoringv1alpha1.EmailThreadingConfig{ThreadByDate: "None"}}}},
			ReasonInvalidReceiver, "emailConfigs[0].headers[0].key: threading sets the References header"},
		{"email without to", amLatest, monitoringv1alpha1.Receiver{EmailConfigs: []monitoringv1alpha1.EmailConfig{{}}},
			ReasonInvalidReceiver, "emailConfigs[0].to: must be set"},
		{"victorops reserved field", amLatest, monitoringv1alpha1.Receiver{VictorOpsConfigs: []monitoringv1alpha1.VictorOpsConfig{{
			RoutingKey: "x", CustomFields: []monitoringv1alpha1.KeyValue{{Key: "entity_state", Value: "x"}}}}},
			ReasonInvalidReceiver, "victoropsConfigs[0].customFields[0].key"},
		{"webex without authorization", amLatest, monitoringv1alpha1.Receiver{WebexConfigs: []monitoringv1alpha1.WebexConfig{{RoomID: "r"}}},
			ReasonInvalidReceiver, "webexConfigs[0].httpConfig.authorization: must be set"},
		{"sns without target", amLatest, monitoringv1alpha1.Receiver{SNSConfigs: []monitoringv1alpha1.SNSConfig{{}}},
			ReasonInvalidReceiver, "snsConfigs[0]: one of topicARN, phoneNumber and targetARN must be set"},
		{"tls cert without key", amLatest, monitoringv1alpha1.Receiver{EmailConfigs: []monitoringv1alpha1.EmailConfig{{
			To: ptrTo("a@example.com"), TLSConfig: &monitoringv1.SafeTLSConfig{Cert: monitoringv1.SecretOrConfigMap{ConfigMap: cmSel("tls", "cert")}}}}},
			ReasonInvalidReceiver, "emailConfigs[0].tlsConfig: client cert specified without client key"},
		{"the first problem wins", amLatest, monitoringv1alpha1.Receiver{
			EmailConfigs:   []monitoringv1alpha1.EmailConfig{{}},
			WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{}}},
			ReasonInvalidReceiver, "emailConfigs[0].to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := convertReceiver(testRefs(tc.version), "spec.receivers[0]", &tc.rc)
			wantRejection(t, err, tc.reason, tc.field)
		})
	}
}
