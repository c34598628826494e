package postgres

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// Certificates are Ed25519: the key comes from a 32-byte seed and the
// signature is deterministic, so a render with the same seed writes the
// same bytes (ECDSA and RSA key generation take no seed). PostgreSQL (with
// OpenSSL 1.1.1 or later), libpq, pgx and JDBC (Java 15 or later) accept it.
const (
	caValidity     = 10 * 365 * 24 * time.Hour
	serverValidity = 10 * 365 * 24 * time.Hour
	// backdate covers clocks a little behind the operator's.
	backdate = time.Hour
)

// clusterCA returns the PEM certificate and key of the cluster's CA: kept
// from its Secret when they parse and belong together, new otherwise.
func clusterCA(in *Inputs) (certPEM, keyPEM []byte, cert *x509.Certificate, key ed25519.PrivateKey, err error) {
	if s := in.Secrets[ClusterCASecretName(in.Cluster.Name)]; s != nil {
		if cert, key, ok := parsePair(s.Data[KeyCACert], s.Data[KeyCAKey]); ok && cert.IsCA {
			return s.Data[KeyCACert], s.Data[KeyCAKey], cert, key, nil
		}
	}
	key = ed25519.NewKeyFromSeed(seedOf(in.Seed, "ca"))
	tmpl := &x509.Certificate{
		SerialNumber:          serial(in.Seed, "ca"),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("lookout postgres CA %s/%s", in.Cluster.Namespace, in.Cluster.Name)},
		NotBefore:             in.Now.Add(-backdate).UTC(),
		NotAfter:              in.Now.Add(caValidity).UTC(),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("create the cluster CA: %w", err)
	}
	cert, _ = x509.ParseCertificate(der)
	certPEM, keyPEM, err = encodePair(der, key)
	return certPEM, keyPEM, cert, key, err
}

// serverCert returns the PEM certificate and key of the instances' server
// certificate (every instance and Service name): kept from its Secret when
// the CA signed it and it has the names wanted, new otherwise.
func serverCert(in *Inputs, ca *x509.Certificate, caKey ed25519.PrivateKey) (certPEM, keyPEM []byte, err error) {
	return leafCert(in, ca, caKey, ClusterCertSecretName(in.Cluster.Name), "server",
		PrimaryServiceName(in.Cluster.Name)+"."+in.Cluster.Namespace+".svc", serverNames(in.Cluster.Name, in.Cluster.Namespace))
}

// leafCert returns the PEM certificate and key for cn and names that Secret
// secretName holds: kept when the CA signed it and
// it has the names wanted, new from the seed's purpose otherwise.
func leafCert(in *Inputs, ca *x509.Certificate, caKey ed25519.PrivateKey, secretName, purpose, cn string, names []string) (certPEM, keyPEM []byte, err error) {
	if s := in.Secrets[secretName]; s != nil {
		if cert, _, ok := parsePair(s.Data[KeyTLSCert], s.Data[KeyTLSKey]); ok &&
			cert.CheckSignatureFrom(ca) == nil && slices.Equal(cert.DNSNames, names) {
			return s.Data[KeyTLSCert], s.Data[KeyTLSKey], nil
		}
	}
	key := ed25519.NewKeyFromSeed(seedOf(in.Seed, purpose))
	tmpl := &x509.Certificate{
		SerialNumber: serial(in.Seed, purpose),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     names,
		NotBefore:    in.Now.Add(-backdate).UTC(),
		NotAfter:     in.Now.Add(serverValidity).UTC(),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Client auth too: the replicas present it when they stream.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(nil, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create the %s certificate: %w", purpose, err)
	}
	return encodePair(der, key)
}

// serverNames are the DNS names of the primary and replica Services and of
// every instance pod (through the headless Service), short and qualified.
func serverNames(cluster, ns string) []string {
	var out []string
	for _, svc := range []string{PrimaryServiceName(cluster), ReplicaServiceName(cluster)} {
		out = append(out, svc, svc+"."+ns, svc+"."+ns+".svc", svc+"."+ns+".svc.cluster.local")
	}
	pods := PodsServiceName(cluster)
	return append(out, "*."+pods, "*."+pods+"."+ns, "*."+pods+"."+ns+".svc", "*."+pods+"."+ns+".svc.cluster.local")
}

func seedOf(seed [32]byte, purpose string) []byte {
	b := make([]byte, ed25519.SeedSize)
	_, _ = source(seed, "key/"+purpose).Read(b)
	return b
}

func serial(seed [32]byte, purpose string) *big.Int {
	b := make([]byte, 16)
	_, _ = source(seed, "serial/"+purpose).Read(b)
	b[0] &= 0x7f // positive
	return new(big.Int).SetBytes(b)
}

func encodePair(der []byte, key ed25519.PrivateKey) (certPEM, keyPEM []byte, err error) {
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
}

// parsePair parses a PEM certificate and its Ed25519 key; ok when both parse
// and the key is the certificate's.
func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, ed25519.PrivateKey, bool) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, false
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, false
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, false
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, nil, false
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	return cert, key, ok && bytes.Equal(pub, key.Public().(ed25519.PublicKey))
}
