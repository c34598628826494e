package postgres

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"slices"
	"time"
)

// Certificates are ECDSA P-256 signed with SHA-256: every PostgreSQL client
// accepts them, and SCRAM-SHA-256-PLUS channel binding works over them
// (its tls-server-end-point hash is the certificate's signature hash, which
// Ed25519 does not have: libpq then fails the connection). The render stays
// pure: the private scalar is derived from the render's seed and signatures
// are RFC 6979's deterministic ones, so a render with the same seed writes
// the same bytes.
const (
	caValidity     = 10 * 365 * 24 * time.Hour
	serverValidity = 10 * 365 * 24 * time.Hour
	// backdate covers clocks a little behind the operator's.
	backdate = time.Hour
)

// clusterCA returns the PEM certificate and key of the cluster's CA: kept
// from its Secret when they parse and belong together, new otherwise.
func clusterCA(in *Inputs) (certPEM, keyPEM []byte, cert *x509.Certificate, key *ecdsa.PrivateKey, err error) {
	if s := in.Secrets[ClusterCASecretName(in.Cluster.Name)]; s != nil {
		if cert, key, ok := parsePair(s.Data[KeyCACert], s.Data[KeyCAKey]); ok && cert.IsCA {
			return s.Data[KeyCACert], s.Data[KeyCAKey], cert, key, nil
		}
	}
	key = keyOf(in.Seed, "ca")
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
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), deterministic{key})
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
func serverCert(in *Inputs, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	return leafCert(in, ca, caKey, ClusterCertSecretName(in.Cluster.Name), "server",
		PrimaryServiceName(in.Cluster.Name)+"."+in.Cluster.Namespace+".svc", serverNames(in.Cluster.Name, in.Cluster.Namespace))
}

// leafCert returns the PEM certificate and key for cn and names that Secret
// secretName holds: kept when the CA signed it and
// it has the names wanted, new from the seed's purpose otherwise.
func leafCert(in *Inputs, ca *x509.Certificate, caKey *ecdsa.PrivateKey, secretName, purpose, cn string, names []string) (certPEM, keyPEM []byte, err error) {
	if s := in.Secrets[secretName]; s != nil {
		if cert, _, ok := parsePair(s.Data[KeyTLSCert], s.Data[KeyTLSKey]); ok &&
			cert.CheckSignatureFrom(ca) == nil && slices.Equal(cert.DNSNames, names) {
			return s.Data[KeyTLSCert], s.Data[KeyTLSKey], nil
		}
	}
	key := keyOf(in.Seed, purpose)
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
	der, err := x509.CreateCertificate(nil, tmpl, ca, key.Public(), deterministic{caKey})
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

// keyOf derives a P-256 key from the seed: the first 32-byte draw of the
// purpose's stream that is a valid scalar (1 ≤ d < n; a draw is out of range
// with probability about 2⁻³²).
func keyOf(seed [32]byte, purpose string) *ecdsa.PrivateKey {
	r := source(seed, "key/"+purpose)
	b := make([]byte, 32)
	for {
		_, _ = io.ReadFull(r, b)
		if key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), b); err == nil {
			return key
		}
	}
}

// deterministic signs with RFC 6979 nonces whatever source of randomness
// the caller passes: ecdsa signs deterministically when given none.
type deterministic struct{ key *ecdsa.PrivateKey }

func (d deterministic) Public() crypto.PublicKey { return d.key.Public() }

func (d deterministic) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts.HashFunc() != crypto.SHA256 || len(digest) != sha256.Size {
		return nil, fmt.Errorf("sign: want a SHA-256 digest, got %v", opts.HashFunc())
	}
	return d.key.Sign(nil, digest, opts)
}

func serial(seed [32]byte, purpose string) *big.Int {
	b := make([]byte, 16)
	_, _ = source(seed, "serial/"+purpose).Read(b)
	b[0] &= 0x7f // positive
	return new(big.Int).SetBytes(b)
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
}

// parsePair parses a PEM certificate and its P-256 key; ok when both parse
// and the key is the certificate's. Another kind of key (the Ed25519 ones of
// earlier versions) is not ok: the pair is made anew.
func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, *ecdsa.PrivateKey, bool) {
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
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok || key.Curve != elliptic.P256() {
		return nil, nil, false
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	return cert, key, ok && pub.Equal(key.Public())
}
