package webhook

import (
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

func rendered(t *testing.T, o Options, caBundle []byte) admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	b, err := json.Marshal(desiredConfiguration(o, caBundle))
	if err != nil {
		t.Fatal(err)
	}
	var out admissionregistrationv1.ValidatingWebhookConfiguration
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTheConfigurationHasOneFailOpenWebhookPerKind(t *testing.T) {
	o := Options{Namespace: "monitoring", CertDir: "/certs", ManageCerts: true}
	o.setDefaults()
	vwc := rendered(t, o, []byte("CA"))
	if vwc.Name != "lookout" {
		t.Errorf("name = %q", vwc.Name)
	}
	var paths []string
	for i, wh := range vwc.Webhooks {
		k := kinds[i]
		if wh.Name != strings.ToLower(k.kind)+".lookout.dev" {
			t.Errorf("webhook %d name = %q", i, wh.Name)
		}
		svc := wh.ClientConfig.Service
		if svc == nil || svc.Namespace != "monitoring" || svc.Name != "lookout-webhook" || *svc.Port != 443 || wh.ClientConfig.URL != nil {
			t.Errorf("%s: clientConfig = %+v", wh.Name, wh.ClientConfig)
		} else {
			paths = append(paths, *svc.Path)
		}
		if string(wh.ClientConfig.CABundle) != "CA" {
			t.Errorf("%s: caBundle = %q", wh.Name, wh.ClientConfig.CABundle)
		}
		if *wh.FailurePolicy != admissionregistrationv1.Ignore || *wh.TimeoutSeconds != 5 ||
			*wh.SideEffects != admissionregistrationv1.SideEffectClassNone || *wh.MatchPolicy != admissionregistrationv1.Equivalent ||
			!slices.Equal(wh.AdmissionReviewVersions, []string{"v1"}) {
			t.Errorf("%s: failurePolicy %s, timeout %d, sideEffects %s, matchPolicy %s, versions %v", wh.Name,
				*wh.FailurePolicy, *wh.TimeoutSeconds, *wh.SideEffects, *wh.MatchPolicy, wh.AdmissionReviewVersions)
		}
		if len(wh.Rules) != 1 || !slices.Equal(wh.Rules[0].Operations, []admissionregistrationv1.OperationType{"CREATE", "UPDATE"}) ||
			!slices.Equal(wh.Rules[0].APIGroups, []string{"monitoring.coreos.com"}) ||
			!slices.Equal(wh.Rules[0].Resources, []string{k.resource}) || !slices.Equal(wh.Rules[0].APIVersions, k.versions) {
			t.Errorf("%s: rules = %+v", wh.Name, wh.Rules)
		}
	}
	want := []string{
		"/validate-monitoring-coreos-com-v1-prometheusrule",
		"/validate-monitoring-coreos-com-v1-servicemonitor",
		"/validate-monitoring-coreos-com-v1-podmonitor",
		"/validate-monitoring-coreos-com-v1-probe",
		"/validate-monitoring-coreos-com-v1alpha1-scrapeconfig",
		"/validate-monitoring-coreos-com-alertmanagerconfig",
	}
	if !slices.Equal(paths, want) {
		t.Errorf("paths = %q\nwant %q", paths, want)
	}
}

func TestWithAURLTheApiserverCallsTheURL(t *testing.T) {
	o := Options{URL: "https://127.0.0.1:9443/", CertDir: "/certs"}
	o.setDefaults()
	vwc := rendered(t, o, nil)
	wh := vwc.Webhooks[0]
	if wh.ClientConfig.URL == nil || *wh.ClientConfig.URL != "https://127.0.0.1:9443/validate-monitoring-coreos-com-v1-prometheusrule" || wh.ClientConfig.Service != nil {
		t.Errorf("clientConfig = %+v", wh.ClientConfig)
	}
	if wh.ClientConfig.CABundle != nil {
		t.Error("caBundle set without one")
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{name: "accepts in-cluster options", o: Options{Namespace: "monitoring", CertDir: "/certs", ManageCerts: true}},
		{name: "accepts a local run by URL", o: Options{URL: "https://127.0.0.1:9443", CertDir: "/certs"}},
		{name: "requires a certificate directory", o: Options{Namespace: "monitoring"}, want: "CertDir is required"},
		{name: "requires a namespace for the Service", o: Options{CertDir: "/certs"}, want: "Namespace is required to name the Service"},
		{name: "requires a namespace for the Secret", o: Options{CertDir: "/certs", URL: "https://127.0.0.1", ManageCerts: true}, want: "Namespace is required to store the certificate Secret"},
		{name: "requires an https URL", o: Options{CertDir: "/certs", URL: "http://127.0.0.1:9443"}, want: "want https://"},
		{name: "refuses an unknown failure policy", o: Options{Namespace: "m", CertDir: "/c", FailurePolicy: "Maybe"}, want: `FailurePolicy "Maybe"`},
		{name: "refuses a timeout the apiserver refuses", o: Options{Namespace: "m", CertDir: "/c", TimeoutSeconds: 60}, want: "TimeoutSeconds 60"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.setDefaults()
			err := tc.o.validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestTheCertificateNamesTheServiceTheURLHostAndTheExtraNames(t *testing.T) {
	o := Options{Namespace: "monitoring", URL: "https://127.0.0.1:9443", ExtraSANs: []string{"webhook.example.com", " 10.0.0.1 ", "127.0.0.1"}}
	o.setDefaults()
	dns, ips := o.certNames()
	if want := []string{"lookout-webhook.monitoring.svc", "lookout-webhook.monitoring.svc.cluster.local", "webhook.example.com"}; !slices.Equal(dns, want) {
		t.Errorf("DNS names = %q, want %q", dns, want)
	}
	if len(ips) != 2 || !ips[0].Equal(net.ParseIP("127.0.0.1")) || !ips[1].Equal(net.ParseIP("10.0.0.1")) {
		t.Errorf("IPs = %v", ips)
	}
}

func TestSetupRefusesAWebhookServerThatReadsAnotherDirectory(t *testing.T) {
	o := Options{Namespace: "m", CertDir: "/certs"}
	o.setDefaults()
	if err := checkServer(o.ServerOptions(), o); err != nil {
		t.Errorf("ServerOptions do not match: %v", err)
	}
	err := checkServer(crwebhook.Options{Port: 9000, CertDir: "/tmp/elsewhere"}, o)
	if err == nil || !strings.Contains(err.Error(), "port 9000, not 9443 and certificate directory /tmp/elsewhere, not /certs") {
		t.Errorf("err = %v", err)
	}
	if err := checkServer(crwebhook.Options{}, o); err == nil {
		t.Error("the default certificate directory was accepted")
	}
}
