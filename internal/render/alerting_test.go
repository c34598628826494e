package render

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/config"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lookout-operator/lookout/internal/render/prometheus"
)

// withAlerting sends the alerts of in's Prometheus to monitoring/alertmanager-main, port web,
// and to the additional alertmanagers given.
func withAlerting(in Inputs, additional string) Inputs {
	in.Prometheus.Spec.Alerting = &monitoringv1.AlertingSpec{Alertmanagers: []monitoringv1.AlertmanagerEndpoints{{
		Namespace: ptrTo("monitoring"), Name: "alertmanager-main", Port: intstr.FromString("web"),
	}}}
	in.AdditionalAlertManagerConfigs = []byte(additional)
	return in
}

func ptrTo[T any](v T) *T { return &v }

// configSecrets is the data of the config Secret and of the piece Secrets, by name.
func configSecrets(t *testing.T, d *Desired) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, o := range d.Objects {
		if s, ok := o.(*corev1.Secret); ok && strings.HasPrefix(s.Name, "prometheus-main") && !strings.HasSuffix(s.Name, "web-config") {
			for k, v := range s.Data {
				out[s.Name+"/"+k] = v
			}
		}
	}
	return out
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTheAlertingSectionSurvivesTheSplitAndTheCache(t *testing.T) {
	in := withAlerting(benchInputs(300), "- static_configs: [{targets: ['am.example.com:9093']}]\n")
	in.Cache = NewCache()
	for step, additional := range []string{
		"- static_configs: [{targets: ['am.example.com:9093']}]\n",
		"- static_configs: [{targets: ['am.example.com:9093', 'am2.example.com:9093']}]\n",
	} {
		in.AdditionalAlertManagerConfigs = []byte(additional)
		cached, err := Prometheus(in)
		if err != nil {
			t.Fatal(err)
		}
		fresh := in
		fresh.Cache = nil
		want, err := Prometheus(fresh)
		if err != nil {
			t.Fatal(err)
		}
		got := configSecrets(t, cached)
		if !reflect.DeepEqual(got, configSecrets(t, want)) || !bytes.Equal(cached.Config(), want.Config()) {
			t.Fatalf("step %d: the config Secrets with the cache differ from those without", step)
		}
		main := gunzip(t, got[prometheus.ConfigSecretName("main")+"/"+prometheus.ConfigSecretKey])
		if !bytes.Contains(main, []byte("scrape_config_files:")) {
			t.Fatalf("step %d: the config was not split (%d bytes); the test needs a larger one", step, len(cached.Config()))
		}
		var pieces [][]byte
		for i := range prometheus.ConfigPieceSlots {
			if gz, ok := got[prometheus.ConfigPieceSecretName("main", i)+"/"+prometheus.ConfigPieceKey]; ok {
				pieces = append(pieces, gz)
			}
		}
		c := loadPieces(t, main, pieces)
		if len(c.AlertingConfig.AlertmanagerConfigs) != 2 || len(c.AlertingConfig.AlertRelabelConfigs) != 1 {
			t.Fatalf("step %d: the split config lost its alerting section:\n%s", step, main)
		}
		if !strings.Contains(string(main), strings.Split(additional, "'")[1]) {
			t.Fatalf("step %d: the main config lacks the additional alertmanagers", step)
		}
		whole, err := config.Load(string(cached.Config()), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(whole.AlertingConfig.AlertmanagerConfigs[1].ServiceDiscoveryConfigs, c.AlertingConfig.AlertmanagerConfigs[1].ServiceDiscoveryConfigs) {
			t.Fatalf("step %d: the split and the whole config send alerts to different places", step)
		}
	}
}

func TestAlertingProblemsAreSpecErrorsNamingTheField(t *testing.T) {
	base := func() Inputs {
		p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main"}}
		return withAlerting(Inputs{Prometheus: p, ReloaderImage: "reloader:test"}, "")
	}
	cases := []struct {
		name   string
		in     func() Inputs
		reason string
		field  string
	}{
		{"refuses additional alertmanager configs that do not parse", func() Inputs {
			in := base()
			in.AdditionalAlertManagerConfigs = []byte("- static_configs: [\n")
			return in
		}, "InvalidAdditionalAlertManagerConfigs", "spec.additionalAlertManagerConfigs: not a YAML list"},
		{"refuses additional alert relabel configs Prometheus refuses", func() Inputs {
			in := base()
			in.AdditionalAlertRelabelConfigs = []byte("- action: hashmod\n  source_labels: [a]\n  target_label: b\n")
			return in
		}, "InvalidAdditionalAlertRelabelConfigs", "spec.additionalAlertRelabelConfigs: item 0"},
		{"refuses a bad regex in alertRelabelings", func() Inputs {
			in := base()
			in.Prometheus.Spec.Alerting.Alertmanagers[0].AlertRelabelConfigs = []monitoringv1.RelabelConfig{{Action: "drop", Regex: "(unclosed"}}
			return in
		}, "InvalidAlerting", "spec.alerting.alertmanagers[0].alertRelabelings[0].regex"},
		{"refuses a missing TLS Secret", func() Inputs {
			in := base()
			in.Prometheus.Spec.Alerting.Alertmanagers[0].TLSConfig = &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{
				CA: monitoringv1.SecretOrConfigMap{Secret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "am-tls"}, Key: "ca.crt"}},
			}}
			return in
		}, "InvalidAlerting", "spec.alerting.alertmanagers[0].tlsConfig.ca.secret: Secret monitoring/am-tls not found"},
		{"refuses an alert resend delay that is not a duration", func() Inputs {
			in := base()
			in.Prometheus.Spec.Rules.Alert.ResendDelay = "soon"
			return in
		}, "InvalidSpec", "spec.rules.alert.resendDelay"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Prometheus(tc.in())
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Prometheus = %v, want a *SpecError", err)
			}
			if se.Reason != tc.reason || !strings.Contains(se.Message, tc.field) {
				t.Errorf("SpecError %s: %q; want %s naming %q", se.Reason, se.Message, tc.reason, tc.field)
			}
		})
	}
}
