package webhook

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"
)

// Keys of the certificate Secret. tls.crt and tls.key follow the
// kubernetes.io/tls convention; ca.crt is the trust bundle the apiserver gets
// as caBundle; ca.key lets any replica issue the next serving certificate
// under the same CA, so that a rotation does not invalidate the bundle.
const (
	keyTLSCert = "tls.crt"
	keyTLSKey  = "tls.key"
	keyCACert  = "ca.crt"
	keyCAKey   = "ca.key"
)

// keyMaterial is the content of the certificate Secret, parsed.
type keyMaterial struct {
	ca     *x509.Certificate
	caKey  crypto.Signer
	leaf   *x509.Certificate
	leafPK crypto.Signer
	// bundle is ca followed by earlier CAs that are still valid: a replica
	// that has not yet picked up a rotated certificate keeps being trusted.
	bundle []*x509.Certificate
}

// certRequest says what the serving certificate must cover and how long
// certificates live.
type certRequest struct {
	now        time.Time
	dnsNames   []string
	ips        []net.IP
	validity   time.Duration
	caValidity time.Duration
}

// data encodes the material as Secret data.
func (m *keyMaterial) data() (map[string][]byte, error) {
	caKey, err := encodeKey(m.caKey)
	if err != nil {
		return nil, err
	}
	leafKey, err := encodeKey(m.leafPK)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		keyTLSCert: encodeCert(m.leaf),
		keyTLSKey:  leafKey,
		keyCACert:  m.bundlePEM(),
		keyCAKey:   caKey,
	}, nil
}

func (m *keyMaterial) bundlePEM() []byte {
	var b bytes.Buffer
	for _, c := range m.bundle {
		b.Write(encodeCert(c))
	}
	return b.Bytes()
}

// parseKeyMaterial reads the certificate Secret's data. Any inconsistency
// (a key that does not match its certificate, a serving certificate the CA
// did not sign) is an error: the caller then issues everything anew.
func parseKeyMaterial(data map[string][]byte) (*keyMaterial, error) {
	for _, k := range []string{keyTLSCert, keyTLSKey, keyCACert, keyCAKey} {
		if len(data[k]) == 0 {
			return nil, fmt.Errorf("key %s is missing", k)
		}
	}
	m := &keyMaterial{}
	var err error
	if m.bundle, err = parseCerts(data[keyCACert]); err != nil {
		return nil, fmt.Errorf("%s: %w", keyCACert, err)
	}
	m.ca = m.bundle[0]
	if m.caKey, err = parseKey(data[keyCAKey]); err != nil {
		return nil, fmt.Errorf("%s: %w", keyCAKey, err)
	}
	if !publicKeysEqual(m.ca.PublicKey, m.caKey.Public()) {
		return nil, fmt.Errorf("%s does not belong to the first certificate of %s", keyCAKey, keyCACert)
	}
	if !m.ca.IsCA {
		return nil, fmt.Errorf("the first certificate of %s is not a CA", keyCACert)
	}
	leaves, err := parseCerts(data[keyTLSCert])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyTLSCert, err)
	}
	m.leaf = leaves[0]
	if m.leafPK, err = parseKey(data[keyTLSKey]); err != nil {
		return nil, fmt.Errorf("%s: %w", keyTLSKey, err)
	}
	if !publicKeysEqual(m.leaf.PublicKey, m.leafPK.Public()) {
		return nil, fmt.Errorf("%s does not belong to %s", keyTLSKey, keyTLSCert)
	}
	return m, nil
}

// planCertificates decides what the Secret must hold at req.now. It returns
// current unchanged (and an empty reason) when nothing needs to change;
// otherwise the new material and why. A certificate is renewed once less
// than a third of its lifetime remains, long before it expires, so that
// every replica picks up the new one at its next check.
func planCertificates(current *keyMaterial, req certRequest) (*keyMaterial, string, error) {
	now := req.now
	if current == nil {
		ca, caKey, err := issueCA(now, req.caValidity)
		if err != nil {
			return nil, "", err
		}
		next := &keyMaterial{ca: ca, caKey: caKey, bundle: []*x509.Certificate{ca}}
		if err := next.issueLeaf(req, nil); err != nil {
			return nil, "", err
		}
		return next, "no certificate yet", nil
	}

	next := *current
	var reasons []string
	reissue := false
	if dueForRenewal(current.ca, now) {
		ca, caKey, err := issueCA(now, req.caValidity)
		if err != nil {
			return nil, "", err
		}
		next.ca, next.caKey = ca, caKey
		reissue = true
		reasons = append(reasons, "the CA is due for renewal")
	}
	// The bundle: the current CA, then earlier CAs until they expire.
	bundle := []*x509.Certificate{next.ca}
	for _, c := range current.bundle {
		if now.Before(c.NotAfter) && !containsCert(bundle, c) {
			bundle = append(bundle, c)
		}
	}
	if !reissue && !sameCerts(bundle, current.bundle) {
		reasons = append(reasons, "an expired CA left the bundle")
	}
	next.bundle = bundle

	var keepSANs *x509.Certificate
	switch {
	case reissue:
		// Signed by the new CA below.
	case dueForRenewal(current.leaf, now):
		reissue = true
		reasons = append(reasons, "the serving certificate is due for renewal")
	case current.leaf.CheckSignatureFrom(current.ca) != nil:
		reissue = true
		reasons = append(reasons, "the serving certificate is not signed by the CA")
	case !covers(current.leaf, req.dnsNames, req.ips):
		// Keep the names the old certificate had: during a rolling update
		// the replicas of the old configuration still need them, and two
		// configurations must not take turns reissuing.
		reissue = true
		keepSANs = current.leaf
		reasons = append(reasons, "the serving certificate does not cover every configured name")
	}
	if len(reasons) == 0 {
		return current, "", nil
	}
	if reissue {
		if err := next.issueLeaf(req, keepSANs); err != nil {
			return nil, "", err
		}
	}
	return &next, strings.Join(reasons, "; "), nil
}

// dueForRenewal: less than a third of the certificate's lifetime remains.
func dueForRenewal(c *x509.Certificate, now time.Time) bool {
	lifetime := c.NotAfter.Sub(c.NotBefore)
	return c.NotAfter.Sub(now)*3 < lifetime
}

func covers(c *x509.Certificate, dnsNames []string, ips []net.IP) bool {
	for _, n := range dnsNames {
		if !slices.Contains(c.DNSNames, n) {
			return false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// backdate tolerates a clock skew between the operator and the apiserver.
func backdate(validity time.Duration) time.Duration {
	return min(time.Hour, validity/10)
}

func issueCA(now time.Time, validity time.Duration) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("lookout-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate(validity)),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// issueLeaf issues a serving certificate signed by m.ca for the requested
// names, plus those of keep when it is not nil. It never outlives the CA.
func (m *keyMaterial) issueLeaf(req certRequest, keep *x509.Certificate) error {
	dnsNames := slices.Clone(req.dnsNames)
	ips := slices.Clone(req.ips)
	if keep != nil {
		for _, n := range keep.DNSNames {
			if !slices.Contains(dnsNames, n) {
				dnsNames = append(dnsNames, n)
			}
		}
		for _, ip := range keep.IPAddresses {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate serving key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return err
	}
	cn := "lookout-webhook"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	notAfter := req.now.Add(req.validity)
	if notAfter.After(m.ca.NotAfter) {
		notAfter = m.ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    req.now.Add(-backdate(req.validity)),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, m.ca, key.Public(), m.caKey)
	if err != nil {
		return fmt.Errorf("create serving certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	m.leaf, m.leafPK = cert, key
	return nil
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return n, nil
}

func encodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func encodeKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return out, nil
}

func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM private key")
	}
	var (
		k   any
		err error
	)
	switch block.Type {
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported private key type %T", k)
	}
	return s, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ak, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ak.Equal(b)
}

func containsCert(list []*x509.Certificate, c *x509.Certificate) bool {
	return slices.ContainsFunc(list, func(x *x509.Certificate) bool { return x.Equal(c) })
}

func sameCerts(a, b []*x509.Certificate) bool {
	return slices.EqualFunc(a, b, func(x, y *x509.Certificate) bool { return x.Equal(y) })
}

// loadServingPair checks that dir holds a usable certificate and key; used
// when the certificates come from elsewhere (cert-manager).
func loadServingPair(certFile, keyFile string) error {
	_, err := tls.LoadX509KeyPair(certFile, keyFile)
	return err
}
