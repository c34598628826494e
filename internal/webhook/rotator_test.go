package webhook

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func testOptions(t *testing.T) Options {
	o := Options{
		CertDir:     t.TempDir(),
		ManageCerts: true,
		Namespace:   "monitoring",
		URL:         "https://127.0.0.1:9443",
	}
	o.setDefaults()
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	return o
}

func newRotator(c client.Client, o Options, now time.Time) *rotator {
	return &rotator{client: c, reader: c, opts: o, now: func() time.Time { return now }, log: logr.Discard()}
}

func getSecret(t *testing.T, c client.Client, o Options) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: o.Namespace, Name: o.SecretName}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTheFirstReplicaCreatesTheSecretAndWritesTheFiles(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	o := testOptions(t)
	bundle, err := newRotator(c, o, t0).syncCertificates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := getSecret(t, c, o)
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("type = %q", s.Type)
	}
	if !bytes.Equal(bundle, s.Data[keyCACert]) {
		t.Error("the returned CA bundle is not the Secret's ca.crt")
	}
	for _, k := range []string{keyTLSCert, keyTLSKey, keyCACert} {
		if got := readFile(t, filepath.Join(o.CertDir, k)); !bytes.Equal(got, s.Data[k]) {
			t.Errorf("%s on disk differs from the Secret", k)
		}
	}
	if _, err := os.Stat(filepath.Join(o.CertDir, keyCAKey)); !os.IsNotExist(err) {
		t.Errorf("the CA key was written to the certificate directory: %v", err)
	}
	if info, err := os.Stat(filepath.Join(o.CertDir, keyTLSKey)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("tls.key mode = %v, %v", info.Mode(), err)
	}
	m, err := parseKeyMaterial(s.Data)
	if err != nil {
		t.Fatal(err)
	}
	verifies(t, m, "127.0.0.1", t0)
	verifies(t, m, "lookout-webhook.monitoring.svc", t0)
}

func TestAValidSecretIsNotRewritten(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	o := testOptions(t)
	if _, err := newRotator(c, o, t0).syncCertificates(ctx); err != nil {
		t.Fatal(err)
	}
	before := getSecret(t, c, o)

	// Another replica, with an empty directory, a month later.
	o2 := o
	o2.CertDir = t.TempDir()
	if _, err := newRotator(c, o2, t0.Add(30*24*time.Hour)).syncCertificates(ctx); err != nil {
		t.Fatal(err)
	}
	after := getSecret(t, c, o)
	if after.ResourceVersion != before.ResourceVersion {
		t.Error("the Secret was written although nothing was due")
	}
	if !bytes.Equal(readFile(t, filepath.Join(o2.CertDir, keyTLSCert)), before.Data[keyTLSCert]) {
		t.Error("the second replica does not serve the shared certificate")
	}
}

func TestACertificateNearExpiryIsRotatedInTheSecretAndOnDisk(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	o := testOptions(t)
	if _, err := newRotator(c, o, t0).syncCertificates(ctx); err != nil {
		t.Fatal(err)
	}
	before := getSecret(t, c, o)

	at := t0.Add(250 * 24 * time.Hour) // of 365 days: less than a third left
	if _, err := newRotator(c, o, at).syncCertificates(ctx); err != nil {
		t.Fatal(err)
	}
	after := getSecret(t, c, o)
	if bytes.Equal(after.Data[keyTLSCert], before.Data[keyTLSCert]) {
		t.Fatal("the serving certificate was not rotated")
	}
	if !bytes.Equal(after.Data[keyCACert], before.Data[keyCACert]) {
		t.Error("rotating the serving certificate changed the CA bundle")
	}
	if !bytes.Equal(readFile(t, filepath.Join(o.CertDir, keyTLSCert)), after.Data[keyTLSCert]) {
		t.Error("the rotated certificate was not written to the certificate directory")
	}
}

func TestASecretWithUnusableDataIsReplaced(t *testing.T) {
	ctx := context.Background()
	o := testOptions(t)
	junk := &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"tls.crt": []byte("x")}}
	junk.Namespace, junk.Name = o.Namespace, o.SecretName
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(junk).Build()
	if _, err := newRotator(c, o, t0).syncCertificates(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := parseKeyMaterial(getSecret(t, c, o).Data); err != nil {
		t.Errorf("the Secret is still unusable: %v", err)
	}
}

func TestTwoReplicasStartingAtOnceAgreeOnOneCertificate(t *testing.T) {
	ctx := context.Background()
	o := testOptions(t)
	base := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	other := newRotator(base, o, t0)
	other.opts.CertDir = t.TempDir()
	raced := false
	// Between this replica's read (no Secret) and its create, the other
	// replica creates the Secret.
	c := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Secret); ok && !raced {
				raced = true
				if _, err := other.syncCertificates(ctx); err != nil {
					t.Fatal(err)
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	bundle, err := newRotator(c, o, t0).syncCertificates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !raced {
		t.Fatal("the race was not staged")
	}
	s := getSecret(t, base, o)
	if !bytes.Equal(bundle, s.Data[keyCACert]) {
		t.Error("the replica that lost the race uses its own CA")
	}
	if !bytes.Equal(readFile(t, filepath.Join(o.CertDir, keyTLSCert)), s.Data[keyTLSCert]) {
		t.Error("the replica that lost the race serves its own certificate")
	}
}

func TestTheConfigurationCarriesTheSecretsCABundle(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	o := testOptions(t)
	if err := newRotator(c, o, t0).check(ctx); err != nil {
		t.Fatal(err)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "lookout"}, &vwc); err != nil {
		t.Fatal(err)
	}
	ca := getSecret(t, c, o).Data[keyCACert]
	if len(vwc.Webhooks) != len(kinds) {
		t.Fatalf("%d webhooks, want %d", len(vwc.Webhooks), len(kinds))
	}
	for _, wh := range vwc.Webhooks {
		if !bytes.Equal(wh.ClientConfig.CABundle, ca) {
			t.Errorf("webhook %s: caBundle differs from the Secret's ca.crt", wh.Name)
		}
	}

	// After a CA rotation the configuration follows.
	o.CAValidity = 3 * 365 * 24 * time.Hour
	if err := newRotator(c, o, t0.Add(9*365*24*time.Hour)).check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "lookout"}, &vwc); err != nil {
		t.Fatal(err)
	}
	newCA := getSecret(t, c, o).Data[keyCACert]
	if bytes.Equal(newCA, ca) {
		t.Fatal("the CA was not rotated")
	}
	if !bytes.Equal(vwc.Webhooks[0].ClientConfig.CABundle, newCA) {
		t.Error("the configuration kept the old CA bundle")
	}
}

func TestWithoutManagedCertificatesTheConfigurationLeavesCABundleAlone(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	o := testOptions(t)
	o.ManageCerts = false
	o.CAInjectFrom = "monitoring/lookout-webhook"
	if err := newRotator(c, o, t0).check(ctx); err != nil {
		t.Fatal(err)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "lookout"}, &vwc); err != nil {
		t.Fatal(err)
	}
	if vwc.Annotations[caInjectAnnotation] != "monitoring/lookout-webhook" {
		t.Errorf("annotations = %v", vwc.Annotations)
	}
	if len(vwc.Webhooks[0].ClientConfig.CABundle) != 0 {
		t.Error("caBundle was set")
	}
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets); err != nil || len(secrets.Items) != 0 {
		t.Errorf("a Secret was written: %d, %v", len(secrets.Items), err)
	}
}
