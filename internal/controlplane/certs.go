package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the files the control plane components are started with.
type pki struct {
	CACert, CAKey           string
	ServingCert, ServingKey string
	AdminCert, AdminKey     string
	SAPublic, SAPrivate     string
	caPEM, adminCertPEM     []byte
	adminKeyPEM             []byte
}

type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// writePKI generates a CA, an apiserver serving certificate for loopback and
// the in-cluster names, an admin client certificate (system:masters) and the
// service-account signing key pair.
func writePKI(dir string, extraIPs []net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		CACert: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "apiserver.crt"), ServingKey: filepath.Join(dir, "apiserver.key"),
		AdminCert: filepath.Join(dir, "admin.crt"), AdminKey: filepath.Join(dir, "admin.key"),
		SAPublic: filepath.Join(dir, "sa.pub"), SAPrivate: filepath.Join(dir, "sa.key"),
	}
	now := time.Now()
	ca, err := newCert(nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "lookout-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	})
	if err != nil {
		return nil, fmt.Errorf("generate CA: %w", err)
	}
	ips := append([]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)}, extraIPs...)
	serving, err := newCert(&ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(365 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: ips,
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return nil, fmt.Errorf("generate serving certificate: %w", err)
	}
	admin, err := newCert(&ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "lookout-admin", Organization: []string{"system:masters"}},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(365 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("generate admin certificate: %w", err)
	}
	for _, kp := range []struct {
		pair      keyPair
		cert, key string
	}{{ca, p.CACert, p.CAKey}, {serving, p.ServingCert, p.ServingKey}, {admin, p.AdminCert, p.AdminKey}} {
		if err := writePair(kp.pair, kp.cert, kp.key); err != nil {
			return nil, err
		}
	}
	// The service-account token signer: RSA is what every verifier accepts.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.SAPublic, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.SAPrivate, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}), 0o600); err != nil {
		return nil, err
	}
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
	p.adminCertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: admin.cert.Raw})
	keyDER, err := x509.MarshalECPrivateKey(admin.key)
	if err != nil {
		return nil, err
	}
	p.adminKeyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return p, nil
}

func newCert(parent *keyPair, tmpl *x509.Certificate) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return keyPair{}, err
	}
	tmpl.SerialNumber = serial
	signer, signerCert := key, tmpl
	if parent != nil {
		signer, signerCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		return keyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: cert, key: key}, nil
}

func writePair(kp keyPair, certPath, keyPath string) error {
	keyDER, err := x509.MarshalECPrivateKey(kp.key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kp.cert.Raw}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}
