package amconfig

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

func TestConvertHTTPConfig(t *testing.T) {
	out, err := convertHTTPConfig(testRefs(amLatest), "spec.receivers[0].webhookConfigs[0].httpConfig", httpBasicAuth())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "proxy_url (proxyURL wins)", out.ProxyURL, "http://proxy.example.com:3128")
	equal(t, "username", out.BasicAuth.Username, "http-user")

	if out, err := convertHTTPConfig(testRefs(amLatest), "f", nil); out != nil || err != nil {
		t.Errorf("nil httpConfig: got %v, %v", out, err)
	}

	both := httpBearer()
	both.ProxyURLOriginal = ptrTo("http://original.example.com:3128")
	out, err = convertHTTPConfig(testRefs(amLatest), "f", both)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "proxy_url", out.ProxyURL, "http://original.example.com:3128")

	_, err = convertHTTPConfig(testRefs(amLatest), "f.httpConfig", &monitoringv1alpha1.HTTPConfig{
		Authorization: &monitoringv1.SafeAuthorization{Type: "Basic", Credentials: selp("http", "credentials")}})
	wantRejection(t, err, ReasonInvalidReceiver, "f.httpConfig: 'authorization' type cannot be set to \"basic\"")
}
