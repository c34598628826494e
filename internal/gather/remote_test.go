package gather

import (
	"errors"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render"
)

// remotePrometheus writes with basic auth from the Secret "rw-auth" and a CA from the ConfigMap
// "rw-ca", and reads with a token from the Secret "rr-token".
func remotePrometheus() *monitoringv1.Prometheus {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "main"}}
	p.Spec.RemoteWrite = []monitoringv1.RemoteWriteSpec{{
		URL:       "https://metrics.example.com/api/v1/write",
		BasicAuth: &monitoringv1.BasicAuth{Username: *selector("rw-auth", "user", false), Password: *selector("rw-auth", "password", false)},
	}}
	p.Spec.RemoteRead = []monitoringv1.RemoteReadSpec{{
		URL: "https://metrics.example.com/api/v1/read",
		Authorization: &monitoringv1.Authorization{SafeAuthorization: monitoringv1.SafeAuthorization{
			Credentials: selector("rr-token", "token", false),
		}},
	}}
	return p
}

func TestRemoteWriteAndReadSecretsAreReadAndWatched(t *testing.T) {
	res, err := gatherFrom(t, remotePrometheus(),
		secret("rw-auth", map[string]string{"user": "u", "password": "rw-p4ss"}),
		secret("rr-token", map[string]string{"token": "rr-t0ken"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"Secret/monitoring/rw-auth", "Secret/monitoring/rr-token"} {
		if !slices.Contains(res.Refs, ref) {
			t.Errorf("Refs %v lack %s: a change to it would not re-render", res.Refs, ref)
		}
	}
	res.Inputs.ReloaderImage = "reloader:test"
	d, err := render.Prometheus(res.Inputs)
	if err != nil {
		t.Fatalf("render of the gathered inputs: %v", err)
	}
	if cfg := string(d.Config()); !strings.Contains(cfg, "password: rw-p4ss\n") || !strings.Contains(cfg, "credentials: rr-t0ken\n") {
		t.Errorf("the gathered credentials are not inlined:\n%s", cfg)
	}
}

func TestAMissingRemoteWriteSecretIsASpecErrorNamingTheField(t *testing.T) {
	res, err := gatherFrom(t, remotePrometheus(), secret("rr-token", map[string]string{"token": "t"}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Refs, "Secret/monitoring/rw-auth") {
		t.Errorf("Refs %v lack the missing Secret: its creation would not re-render", res.Refs)
	}
	res.Inputs.ReloaderImage = "reloader:test"
	_, err = render.Prometheus(res.Inputs)
	var se *render.SpecError
	if !errors.As(err, &se) || se.Reason != "InvalidRemoteWrite" || !strings.Contains(se.Message, "spec.remoteWrite[0].basicAuth.username: Secret monitoring/rw-auth not found") {
		t.Errorf("render = %v, want a SpecError InvalidRemoteWrite naming spec.remoteWrite[0].basicAuth", err)
	}
}
