package webhook

import (
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func request(at time.Time) certRequest {
	return certRequest{
		now:        at,
		dnsNames:   []string{"lookout-webhook.monitoring.svc", "lookout-webhook.monitoring.svc.cluster.local"},
		ips:        []net.IP{net.ParseIP("127.0.0.1")},
		validity:   90 * 24 * time.Hour,
		caValidity: 900 * 24 * time.Hour,
	}
}

func issue(t *testing.T, req certRequest) *keyMaterial {
	t.Helper()
	m, reason, err := planCertificates(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if reason != "no certificate yet" {
		t.Fatalf("reason = %q", reason)
	}
	return m
}

// roundTrip stores and parses the material, as a Secret would.
func roundTrip(t *testing.T, m *keyMaterial) *keyMaterial {
	t.Helper()
	data, err := m.data()
	if err != nil {
		t.Fatal(err)
	}
	out, err := parseKeyMaterial(data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func verifies(t *testing.T, m *keyMaterial, name string, at time.Time) {
	t.Helper()
	pool := x509.NewCertPool()
	for _, c := range m.bundle {
		pool.AddCert(c)
	}
	if _, err := m.leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: at}); err != nil {
		t.Errorf("the serving certificate does not verify for %s against the bundle: %v", name, err)
	}
}

func TestANewCertificateIsAnECDSAServingCertificateForTheServiceAndTheIPs(t *testing.T) {
	m := roundTrip(t, issue(t, request(t0)))
	if m.leaf.PublicKeyAlgorithm != x509.ECDSA || m.ca.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("key algorithms = %v, %v; want ECDSA", m.leaf.PublicKeyAlgorithm, m.ca.PublicKeyAlgorithm)
	}
	if !m.ca.IsCA || m.leaf.IsCA {
		t.Error("the CA must be a CA and the serving certificate must not")
	}
	if len(m.leaf.ExtKeyUsage) != 1 || m.leaf.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("ext key usage = %v", m.leaf.ExtKeyUsage)
	}
	verifies(t, m, "lookout-webhook.monitoring.svc", t0)
	verifies(t, m, "lookout-webhook.monitoring.svc.cluster.local", t0)
	verifies(t, m, "127.0.0.1", t0)
	if got := m.leaf.NotAfter.Sub(t0); got != 90*24*time.Hour {
		t.Errorf("validity = %v", got)
	}
}

func TestAValidCertificateIsKept(t *testing.T) {
	m := roundTrip(t, issue(t, request(t0)))
	// Day 59 of 90: more than a third left.
	next, reason, err := planCertificates(m, request(t0.Add(59*24*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if reason != "" || next != m {
		t.Errorf("the certificate was replaced: %q", reason)
	}
}

func TestACertificateNearExpiryIsReplacedUnderTheSameCA(t *testing.T) {
	m := roundTrip(t, issue(t, request(t0)))
	at := t0.Add(61 * 24 * time.Hour) // less than a third of 90 days left
	next, reason, err := planCertificates(m, request(at))
	if err != nil {
		t.Fatal(err)
	}
	if reason != "the serving certificate is due for renewal" {
		t.Fatalf("reason = %q", reason)
	}
	if next.leaf.Equal(m.leaf) {
		t.Fatal("the serving certificate was not replaced")
	}
	if !next.ca.Equal(m.ca) || !sameCerts(next.bundle, m.bundle) {
		t.Error("renewing the serving certificate changed the CA bundle; the apiserver would distrust replicas that still serve the old one")
	}
	verifies(t, roundTrip(t, next), "lookout-webhook.monitoring.svc", at)
	// The old certificate, still served by replicas that have not picked up
	// the new one, verifies against the same bundle.
	verifies(t, m, "lookout-webhook.monitoring.svc", at)
}

func TestACANearExpiryIsReplacedAndTheOldCAStaysInTheBundleUntilItExpires(t *testing.T) {
	req := request(t0)
	req.caValidity = 120 * 24 * time.Hour
	m := roundTrip(t, issue(t, req))

	req.now = t0.Add(81 * 24 * time.Hour) // less than 40 of 120 days left
	next, reason, err := planCertificates(m, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reason, "the CA is due for renewal") {
		t.Fatalf("reason = %q", reason)
	}
	next = roundTrip(t, next)
	if next.ca.Equal(m.ca) || len(next.bundle) != 2 || !next.bundle[1].Equal(m.ca) {
		t.Fatalf("bundle = %d certificates; want the new CA, then the old one", len(next.bundle))
	}
	verifies(t, next, "lookout-webhook.monitoring.svc", req.now)
	verifies(t, &keyMaterial{leaf: m.leaf, bundle: next.bundle}, "lookout-webhook.monitoring.svc", req.now)

	// Once the old CA expired, it leaves the bundle.
	req.now = t0.Add(121 * 24 * time.Hour)
	later, reason, err := planCertificates(next, req)
	if err != nil {
		t.Fatal(err)
	}
	if reason != "an expired CA left the bundle" || len(later.bundle) != 1 || !later.leaf.Equal(next.leaf) {
		t.Errorf("reason = %q, bundle = %d certificates", reason, len(later.bundle))
	}
}

func TestACertificateMissingAConfiguredNameIsReissuedKeepingTheOldNames(t *testing.T) {
	m := roundTrip(t, issue(t, request(t0)))
	req := request(t0.Add(time.Hour))
	req.dnsNames = append(req.dnsNames, "webhook.example.com")
	req.ips = []net.IP{net.ParseIP("10.0.0.7")}
	next, reason, err := planCertificates(m, req)
	if err != nil {
		t.Fatal(err)
	}
	if reason != "the serving certificate does not cover every configured name" {
		t.Fatalf("reason = %q", reason)
	}
	verifies(t, next, "webhook.example.com", req.now)
	verifies(t, next, "10.0.0.7", req.now)
	verifies(t, next, "127.0.0.1", req.now)

	// The old configuration is covered by the new certificate: no ping-pong.
	if _, reason, _ := planCertificates(next, request(t0.Add(2*time.Hour))); reason != "" {
		t.Errorf("the old configuration reissued again: %q", reason)
	}
}

func TestTheServingCertificateNeverOutlivesItsCA(t *testing.T) {
	req := request(t0)
	req.caValidity = 30 * 24 * time.Hour
	m := issue(t, req)
	if m.leaf.NotAfter.After(m.ca.NotAfter) {
		t.Errorf("serving certificate until %v, CA until %v", m.leaf.NotAfter, m.ca.NotAfter)
	}
}

func TestUnusableSecretDataIsReported(t *testing.T) {
	good, err := issue(t, request(t0)).data()
	if err != nil {
		t.Fatal(err)
	}
	other, err := issue(t, request(t0)).data()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(map[string][]byte)
		want   string
	}{
		{"a missing key", func(d map[string][]byte) { delete(d, keyCAKey) }, "key ca.key is missing"},
		{"a serving key of another certificate", func(d map[string][]byte) { d[keyTLSKey] = other[keyTLSKey] }, "tls.key does not belong to tls.crt"},
		{"a CA key of another CA", func(d map[string][]byte) { d[keyCAKey] = other[keyCAKey] }, "ca.key does not belong"},
		{"garbage instead of a certificate", func(d map[string][]byte) { d[keyTLSCert] = []byte("hello") }, "tls.crt: no PEM certificate"},
	} {
		t.Run("reports "+tc.name, func(t *testing.T) {
			d := map[string][]byte{}
			for k, v := range good {
				d[k] = v
			}
			tc.mutate(d)
			_, err := parseKeyMaterial(d)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestAServingCertificateNotSignedByTheCAIsReissued(t *testing.T) {
	a := issue(t, request(t0))
	b := issue(t, request(t0))
	mixed := &keyMaterial{ca: a.ca, caKey: a.caKey, bundle: a.bundle, leaf: b.leaf, leafPK: b.leafPK}
	next, reason, err := planCertificates(mixed, request(t0.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if reason != "the serving certificate is not signed by the CA" {
		t.Fatalf("reason = %q", reason)
	}
	verifies(t, next, "lookout-webhook.monitoring.svc", t0.Add(time.Hour))
}
