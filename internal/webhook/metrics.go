package webhook

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// servedCertDir is the directory whose certificate the expiry metric reports.
var (
	servedCertDir    atomic.Pointer[string]
	registerCertOnce sync.Once
)

// CertificateExpiryMetric is the name of the gauge with the served
// certificate's expiry.
const CertificateExpiryMetric = "lookout_webhook_certificate_expiry_timestamp_seconds"

// exportCertificateExpiry reports, at every scrape, when the certificate in
// dir expires: read from the file the server serves, so it is right whoever
// issued it (the operator or cert-manager) and after every rotation.
func exportCertificateExpiry(dir string) {
	servedCertDir.Store(&dir)
	registerCertOnce.Do(func() {
		metrics.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: CertificateExpiryMetric,
			Help: "Unix time when the webhook's serving certificate expires; 0 when it cannot be read.",
		}, func() float64 {
			d := servedCertDir.Load()
			if d == nil {
				return 0
			}
			return certificateExpiry(filepath.Join(*d, keyTLSCert))
		}))
	})
}

func certificateExpiry(path string) float64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return 0
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return 0
	}
	return float64(cert.NotAfter.Unix())
}
