package webhook

import (
	"testing"
	"time"
)

func TestTheExpiryMetricIsTheServedCertificatesNotAfter(t *testing.T) {
	dir := t.TempDir()
	if got := certificateExpiry(dir + "/" + keyTLSCert); got != 0 {
		t.Fatalf("expiry without a certificate = %v, want 0", got)
	}
	m := issue(t, request(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	if err := writeCertFiles(dir, m); err != nil {
		t.Fatal(err)
	}
	if got, want := certificateExpiry(dir+"/"+keyTLSCert), float64(m.leaf.NotAfter.Unix()); got != want {
		t.Fatalf("expiry = %v, want the leaf's NotAfter %v", got, want)
	}
}
