package webhook

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"strconv"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	monitoringv1beta1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/webhook"
)

func TestAnInvalidPrometheusRuleIsRefusedWithTheFieldAndTheParserText(t *testing.T) {
	ns := newNamespace(t)
	err := k8s.Create(testCtx, invalidRule(ns, "broken"))
	refused(t, err, "prometheusrule.lookout.dev",
		`PrometheusRule.monitoring.coreos.com "broken" is invalid`,
		`spec.groups[0].rules[0].expr: Invalid value: "up ==": 1:6: parse error: unexpected end of input`)
}

func TestAValidPrometheusRuleIsAccepted(t *testing.T) {
	ns := newNamespace(t)
	if err := k8s.Create(testCtx, prometheusRule(ns, "fine", `up{job="api"} == 0`)); err != nil {
		t.Fatal(err)
	}
}

func TestAnUpdateThatBreaksAPrometheusRuleIsRefused(t *testing.T) {
	ns := newNamespace(t)
	r := prometheusRule(ns, "fine", "up == 0")
	if err := k8s.Create(testCtx, r); err != nil {
		t.Fatal(err)
	}
	r.Spec.Groups[0].Rules[0].Expr.StrVal = "sum(rate(x[5m])"
	refused(t, k8s.Update(testCtx, r), "prometheusrule.lookout.dev", "spec.groups[0].rules[0].expr", "parse error")
}

func TestAServiceMonitorWithARegexThatDoesNotCompileIsRefused(t *testing.T) {
	ns := newNamespace(t)
	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Endpoints: []monitoringv1.Endpoint{{
				Port: "metrics",
				MetricRelabelConfigs: []monitoringv1.RelabelConfig{
					{Action: "drop", SourceLabels: []monitoringv1.LabelName{"__name__"}, Regex: "go_(gc|memstats"},
				},
			}},
		},
	}
	refused(t, k8s.Create(testCtx, sm), "servicemonitor.lookout.dev",
		`spec.endpoints[0].metricRelabelings[0].regex: Invalid value: "go_(gc|memstats": not a valid regular expression: missing closing )`)

	sm.Spec.Endpoints[0].MetricRelabelConfigs[0].Regex = "go_(gc|memstats)_.*"
	if err := k8s.Create(testCtx, sm); err != nil {
		t.Fatalf("the fixed ServiceMonitor was refused: %v", err)
	}
}

func TestAnAlertmanagerConfigWhoseRouteNamesAnUnknownReceiverIsRefused(t *testing.T) {
	ns := newNamespace(t)
	child, _ := json.Marshal(monitoringv1alpha1.Route{Receiver: "pagr"})
	cfg := &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route:     &monitoringv1alpha1.Route{Receiver: "default", Routes: []apiextensionsv1.JSON{{Raw: child}}},
			Receivers: []monitoringv1alpha1.Receiver{{Name: "default"}, {Name: "pager"}},
		},
	}
	refused(t, k8s.Create(testCtx, cfg), "alertmanagerconfig.lookout.dev",
		`spec.route.routes[0].receiver: Not found: "pagr": no receiver of this name in spec.receivers (defined: default, pager)`)
}

func TestAV1beta1AlertmanagerConfigIsValidatedInItsOwnVersion(t *testing.T) {
	ns := newNamespace(t)
	cfg := &monitoringv1beta1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
		Spec: monitoringv1beta1.AlertmanagerConfigSpec{
			Route:     &monitoringv1beta1.Route{Receiver: "default", MuteTimeIntervals: []string{"weekends"}},
			Receivers: []monitoringv1beta1.Receiver{{Name: "default"}},
		},
	}
	refused(t, k8s.Create(testCtx, cfg), "alertmanagerconfig.lookout.dev",
		`spec.route.muteTimeIntervals[0]: Not found: "weekends": no time interval of this name in spec.timeIntervals`)

	cfg.Spec.TimeIntervals = []monitoringv1beta1.TimeInterval{{Name: "weekends"}}
	if err := k8s.Create(testCtx, cfg); err != nil {
		t.Fatalf("the fixed AlertmanagerConfig was refused: %v", err)
	}
}

func TestTheConfigurationTrustsTheCAInTheSecretAndTheServerServesTheSecretsCertificate(t *testing.T) {
	var secret corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: operatorNamespace, Name: webhook.DefaultSecretName}, &secret); err != nil {
		t.Fatal(err)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := k8s.Get(testCtx, client.ObjectKey{Name: webhook.DefaultConfigurationName}, &vwc); err != nil {
		t.Fatal(err)
	}
	if len(vwc.Webhooks) != 6 {
		t.Errorf("%d webhooks, want 6", len(vwc.Webhooks))
	}
	for _, wh := range vwc.Webhooks {
		if !bytes.Equal(wh.ClientConfig.CABundle, secret.Data["ca.crt"]) {
			t.Errorf("%s: the caBundle is not the Secret's ca.crt", wh.Name)
		}
		if *wh.FailurePolicy != admissionregistrationv1.Ignore || *wh.TimeoutSeconds != 5 {
			t.Errorf("%s: failurePolicy %s, timeout %ds", wh.Name, *wh.FailurePolicy, *wh.TimeoutSeconds)
		}
	}
	managers := map[string]bool{}
	for _, mf := range vwc.ManagedFields {
		managers[mf.Manager+"/"+string(mf.Operation)] = true
	}
	if !managers["lookout/Apply"] {
		t.Errorf("the configuration is not server-side applied by lookout: %v", managers)
	}

	// What the server presents verifies against the bundle and is the
	// Secret's certificate.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		t.Fatal("ca.crt holds no certificate")
	}
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookOpts.Port)), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS to the webhook with the Secret's CA: %v", err)
	}
	defer conn.Close()
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil || !bytes.Equal(conn.ConnectionState().PeerCertificates[0].Raw, block.Bytes) {
		t.Error("the webhook serves another certificate than the Secret's tls.crt")
	}
}

// The webhook fails open: when it is down (connection refused) or hanging
// (no answer within timeoutSeconds), the apiserver admits the object and
// the controller rejects it on status instead. Self-contained: it stops the
// shared webhook and starts it again, which also shows that a restarted
// operator keeps the certificate in the Secret.
func TestWhenTheWebhookIsDownOrHangingTheClusterIsNotBlocked(t *testing.T) {
	ns := newNamespace(t)
	var before corev1.Secret
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: operatorNamespace, Name: webhook.DefaultSecretName}, &before); err != nil {
		t.Fatal(err)
	}

	stopWebhook()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			stop, err := startWebhook(webhookOpts)
			if err != nil {
				t.Fatalf("restart the webhook: %v", err)
			}
			stopWebhook = stop
		}
	})

	t.Run("down: an invalid rule is admitted", func(t *testing.T) {
		if err := k8s.Create(testCtx, invalidRule(ns, "while-down")); err != nil {
			t.Fatalf("the apiserver refused a write while the webhook was down: %v", err)
		}
	})

	t.Run("hanging: an invalid rule is admitted after the timeout", func(t *testing.T) {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookOpts.Port)))
		if err != nil {
			t.Fatalf("take over the webhook port: %v", err)
		}
		var conns []net.Conn
		accepted := make(chan struct{})
		go func() {
			defer close(accepted)
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				conns = append(conns, c) // accept, then never answer
			}
		}()
		defer func() {
			l.Close()
			<-accepted
			for _, c := range conns {
				c.Close()
			}
		}()
		start := time.Now()
		if err := k8s.Create(testCtx, invalidRule(ns, "while-hanging")); err != nil {
			t.Fatalf("the apiserver refused a write while the webhook hung: %v", err)
		}
		took := time.Since(start)
		if took < 4*time.Second || took > 15*time.Second {
			t.Errorf("the write took %v; want about the 5s webhook timeout", took)
		}
		t.Logf("admitted after %v", took.Round(100*time.Millisecond))
	})

	stop, err := startWebhook(webhookOpts)
	if err != nil {
		t.Fatalf("restart the webhook: %v", err)
	}
	stopWebhook, restarted = stop, true
	if err := waitUntilRefusing(testCtx, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	t.Run("restarted: the certificate in the Secret is kept", func(t *testing.T) {
		var after corev1.Secret
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: operatorNamespace, Name: webhook.DefaultSecretName}, &after); err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion || !bytes.Equal(after.Data["tls.crt"], before.Data["tls.crt"]) {
			t.Error("the restarted operator replaced a valid certificate")
		}
	})

	t.Run("restarted: a rule admitted while the webhook was down can still be labelled", func(t *testing.T) {
		var r monitoringv1.PrometheusRule
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "while-down"}, &r); err != nil {
			t.Fatal(err)
		}
		r.Labels = map[string]string{"team": "db"}
		if err := k8s.Update(testCtx, &r); err != nil {
			t.Fatalf("a metadata-only update of an invalid rule was refused: %v", err)
		}
		r.Spec.Groups[0].Rules[0].Expr.StrVal = "up !="
		refused(t, k8s.Update(testCtx, &r), "prometheusrule.lookout.dev", "spec.groups[0].rules[0].expr")
	})
}
