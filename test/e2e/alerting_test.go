package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// The timing of the notifications: short waits so the test is quick, a long
// repeat so that a second notification of the same group can only be a
// duplicate, and the time a replica other than the first holds a
// notification back before it looks in the notification log the replicas
// share by gossip (Alertmanager's peer timeout, 15s by default).
const (
	amGroupWait      = time.Second
	amGroupInterval  = time.Second
	amRepeatInterval = time.Hour
	amPeerTimeout    = 3 * time.Second
)

func TestAlertingNotifiesOnceThroughPeeredAlertmanagersThenANewReceiverThenTheResolution(t *testing.T) {
	if err := devenv.CheckPortsFree(9090, 8080); err != nil {
		t.Fatal(err)
	}
	ns := "e2e-alerting"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})

	// The Alertmanager replicas each get a network namespace on one
	// bridge; the receiver listens on the host's address on that bridge.
	network, err := testhost.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(network.Close)
	recv, err := devenv.StartReceiver(network)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(recv.Close)

	mustCreate(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
		StringData: map[string]string{"url": recv.URL("/slack/T0/B0/e2e")},
	})
	amc := &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-e2e", Labels: map[string]string{"team": "e2e"}},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route:     amRoute("slack"),
			Receivers: []monitoringv1alpha1.Receiver{slackReceiver()},
		},
	}
	mustCreate(t, amc)
	mustCreate(t, &monitoringv1.Alertmanager{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.AlertmanagerSpec{
			Replicas:                   ptr.To[int32](2),
			AlertmanagerConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e"}},
			ClusterPeerTimeout:         monitoringv1.GoDuration(amPeerTimeout.String()),
			LogLevel:                   "debug",
		},
	})
	am := runAlertmanagerPods(t, network, ns, "main")

	// Both replicas see each other and have settled before any alert
	// arrives: a replica still settling holds notifications back, and two
	// replicas that do not know each other would both notify.
	for i := range am.IPs() {
		waitFor(t, fmt.Sprintf("replica %d is in a settled cluster of 2 and has the Slack receiver", i), func() bool {
			st, err := amStatus(am.URL(i, "/api/v2/status"))
			return err == nil && st.Cluster.Status == "ready" && len(st.Cluster.Peers) == 2 &&
				strings.Contains(st.Config.Original, "slack_configs")
		})
	}

	mustCreate(t, rule(ns, "page", monitoringv1.RuleGroup{Name: "lookout-e2e-alerting", Interval: ptrDuration("1s"), Rules: []monitoringv1.Rule{{
		Alert: "LookoutE2EPage",
		Expr:  intstr.FromString("vector(1)"),
		// The AlertmanagerConfig's routes match the alerts of its own
		// namespace only (the default matcher strategy).
		Labels: map[string]string{"severity": "page", "namespace": ns},
		Annotations: map[string]string{
			"summary":     "Lookout e2e page",
			"description": "Always firing, for the end-to-end test",
		},
	}}}))
	mustCreate(t, &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{ServiceMonitorSelector: selectsNoMonitor,
				ScrapeInterval:       "1s",
				ServiceDiscoveryRole: ptr.To(monitoringv1.EndpointSliceRole),
			},
			EvaluationInterval: "1s",
			RuleSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e"}},
			Alerting: &monitoringv1.AlertingSpec{Alertmanagers: []monitoringv1.AlertmanagerEndpoints{{
				Name: "alertmanager-operated",
				Port: intstr.FromString("web"),
			}}},
			// A deleted rule's alert is resolved by Alertmanager once it is
			// not resent: 4 × max(resend delay, evaluation interval).
			Rules: monitoringv1.Rules{Alert: monitoringv1.RulesAlert{ResendDelay: "1s"}},
		},
	})
	runPrometheusPod(t, ns, "main")

	// Prometheus discovers both replicas through the governing Service's
	// EndpointSlice and sends the alert to each.
	for i := range am.IPs() {
		waitFor(t, fmt.Sprintf("replica %d has the alert from Prometheus", i), func() bool {
			n, err := amAlerts(am.URL(i, "/api/v2/alerts"), "LookoutE2EPage")
			return err == nil && n == 1
		})
	}

	// The Slack notification, in Slack's format, with the templates
	// rendered.
	isSlack := func(r devenv.Request) bool { return strings.HasPrefix(r.Path, "/slack/") }
	slack := waitRequest(t, recv, "the Slack notification", isSlack)
	if ct := slack.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Slack notification Content-Type %q", ct)
	}
	var msg struct {
		Channel     string `json:"channel"`
		Attachments []struct {
			Title string `json:"title"`
			Text  string `json:"text"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(slack.Body, &msg); err != nil {
		t.Fatalf("Slack notification is not JSON: %v\n%s", err, slack.Body)
	}
	if len(msg.Attachments) != 1 || msg.Channel != "#e2e" ||
		msg.Attachments[0].Title != "[FIRING] Lookout e2e page" ||
		msg.Attachments[0].Text != "Always firing, for the end-to-end test (severity page)" {
		t.Errorf("Slack notification: %s", slack.Body)
	}
	t.Logf("Slack notification at %s: %s", slack.Time.Format(time.RFC3339Nano), slack.Body)

	// Exactly one notification for the group across the two replicas. The
	// first replica sends at once; the other waits for the peer timeout,
	// then finds the first one's entry in the gossiped notification log.
	// Every flush of the group (one per group interval) looks the group up in
	// the log before it sends; a flush's POST is done before the next flush
	// starts. So once every replica has looked it up twice, each has finished
	// the flush that could have sent a duplicate: no sleep needed for absence.
	waitFor(t, "every replica has flushed the group twice", func() bool {
		for i := range am.IPs() {
			if n, err := amMetric(am.URL(i, "/metrics"), "alertmanager_nflog_queries_total", ""); err != nil || n < 2 {
				return false
			}
		}
		return true
	})
	if n := recv.Count(isSlack); n != 1 {
		t.Errorf("%d Slack notifications, want 1", n)
	}
	var sent float64
	for i := range am.IPs() {
		n, err := amMetric(am.URL(i, "/metrics"), "alertmanager_notifications_total", `integration="slack"`)
		if err != nil {
			t.Fatal(err)
		}
		failed, err := amMetric(am.URL(i, "/metrics"), "alertmanager_notifications_failed_total", `integration="slack"`)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("replica %d: %v Slack notifications sent, %v failed", i, n, failed)
		sent += n
	}
	if sent != 1 {
		t.Errorf("the replicas sent %v Slack notifications together, want 1", sent)
	}

	// The team switches to a webhook receiver that also hears about
	// resolution. The operator regenerates the config, the reloader
	// reloads both replicas, and the new route notifies.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(amc), amc); err != nil {
			return err
		}
		amc.Spec.Route = amRoute("webhook")
		amc.Spec.Receivers = []monitoringv1alpha1.Receiver{{
			Name:           "webhook",
			WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{URL: ptr.To(recv.URL("/webhook")), SendResolved: ptr.To(true)}},
		}}
		return k8s.Update(testCtx, amc)
	})
	if err != nil {
		t.Fatal(err)
	}
	webhook := func(status string) func(devenv.Request) bool {
		return func(r devenv.Request) bool {
			if r.Path != "/webhook" {
				return false
			}
			var m webhookMessage
			return json.Unmarshal(r.Body, &m) == nil && m.Status == status && m.CommonLabels["alertname"] == "LookoutE2EPage"
		}
	}
	firing := waitRequest(t, recv, "the webhook's firing notification", webhook("firing"))
	t.Logf("webhook firing at %s: %s", firing.Time.Format(time.RFC3339Nano), firing.Body)
	var fm webhookMessage
	_ = json.Unmarshal(firing.Body, &fm)
	if len(fm.Alerts) != 1 || fm.Alerts[0].Annotations["summary"] != "Lookout e2e page" || fm.CommonLabels["severity"] != "page" {
		t.Errorf("webhook notification: %s", firing.Body)
	}

	// The rule goes away: Prometheus stops sending the alert, Alertmanager
	// resolves it when its end time passes and tells the webhook.
	if err := k8s.Delete(testCtx, rule(ns, "page")); err != nil {
		t.Fatal(err)
	}
	resolved := waitRequest(t, recv, "the webhook's resolved notification", webhook("resolved"))
	t.Logf("webhook resolved at %s: %s", resolved.Time.Format(time.RFC3339Nano), resolved.Body)
	var rm webhookMessage
	_ = json.Unmarshal(resolved.Body, &rm)
	if len(rm.Alerts) != 1 || rm.Alerts[0].Status != "resolved" || rm.Alerts[0].EndsAt.IsZero() {
		t.Errorf("resolved notification: %s", resolved.Body)
	}
	if n := recv.Count(isSlack); n != 1 {
		t.Errorf("%d Slack notifications by the end, want 1: the old receiver is still notified", n)
	}
}

func amRoute(receiver string) *monitoringv1alpha1.Route {
	d := func(x time.Duration) *monitoringv1.NonEmptyDuration {
		v := monitoringv1.NonEmptyDuration(x.String())
		return &v
	}
	return &monitoringv1alpha1.Route{
		Receiver:       receiver,
		GroupBy:        []string{"alertname"},
		GroupWait:      d(amGroupWait),
		GroupInterval:  d(amGroupInterval),
		RepeatInterval: d(amRepeatInterval),
		Matchers:       []monitoringv1alpha1.Matcher{{Name: "severity", Value: "page", MatchType: monitoringv1alpha1.MatchEqual}},
	}
}

func slackReceiver() monitoringv1alpha1.Receiver {
	return monitoringv1alpha1.Receiver{
		Name: "slack",
		SlackConfigs: []monitoringv1alpha1.SlackConfig{{
			APIURL:       &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "slack"}, Key: "url"},
			Channel:      ptr.To("#e2e"),
			SendResolved: ptr.To(false),
			Title:        ptr.To(`[{{ .Status | toUpper }}] {{ .CommonAnnotations.summary }}`),
			Text:         ptr.To(`{{ .CommonAnnotations.description }} (severity {{ .CommonLabels.severity }})`),
		}},
	}
}

// webhookMessage is Alertmanager's webhook payload, the parts the test reads.
type webhookMessage struct {
	Status       string            `json:"status"`
	Receiver     string            `json:"receiver"`
	CommonLabels map[string]string `json:"commonLabels"`
	Alerts       []struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		EndsAt      time.Time         `json:"endsAt"`
	} `json:"alerts"`
}

// runAlertmanagerPods runs the generated Alertmanager pods, with the binaries of
// with (one set at most) instead of the usual ones.
func runAlertmanagerPods(t *testing.T, network *testhost.Network, ns, name string, with ...devenv.Binaries) *devenv.AlertmanagerPods {
	t.Helper()
	b := bins
	if len(with) > 0 {
		b = with[0]
	}
	pods, err := devenv.RunAlertmanagerPods(testCtx, k8s, cp, b, network, ns, name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- Alertmanager logs ---\n%s", pods.Logs(3000))
		}
		pods.Stop()
	})
	return pods
}

func waitRequest(t *testing.T, recv *devenv.Receiver, what string, match func(devenv.Request) bool) devenv.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx, 90*time.Second)
	defer cancel()
	r, err := recv.WaitFor(ctx, match)
	if err != nil {
		var got []string
		for _, r := range recv.Requests() {
			got = append(got, r.Path+" "+devenv.LastBytes(r.Body, 300))
		}
		t.Fatalf("waiting for %s: %v; received:\n%s", what, err, strings.Join(got, "\n"))
	}
	return r
}

type amStatusData struct {
	Cluster struct {
		Status string `json:"status"`
		Peers  []struct {
			Name    string `json:"name"`
			Address string `json:"address"`
		} `json:"peers"`
	} `json:"cluster"`
	Config struct {
		Original string `json:"original"`
	} `json:"config"`
}

func amStatus(u string) (amStatusData, error) {
	var st amStatusData
	return st, tryJSON(u, &st)
}

// amAlerts is the number of alerts named alertname the Alertmanager holds.
func amAlerts(u, alertname string) (int, error) {
	var alerts []json.RawMessage
	err := tryJSON(u+"?filter="+url.QueryEscape(`alertname="`+alertname+`"`), &alerts)
	return len(alerts), err
}

// amMetric sums the samples of metric whose labels contain labels.
func amMetric(u, metric, labels string) (float64, error) {
	resp, err := http.Get(u) //nolint:noctx // test
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, metric)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue // another metric, or a longer name
		}
		value := rest
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 || !strings.Contains(rest[:end], labels) {
				continue
			}
			value = rest[end+1:]
		} else if labels != "" {
			continue
		}
		f := strings.Fields(value) // value [timestamp]
		if len(f) == 0 {
			return 0, fmt.Errorf("%s: %q has no value", u, line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", u, line, err)
		}
		sum += v
		found = true
	}
	if !found {
		return 0, fmt.Errorf("%s: no sample of %s{%s}", u, metric, labels)
	}
	return sum, sc.Err()
}

func tryJSON(u string, v any) error {
	resp, err := http.Get(u) //nolint:noctx // test
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, v)
}
