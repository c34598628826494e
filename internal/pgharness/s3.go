package pgharness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// The bucket and credentials of the S3 server the tests start.
const (
	S3Bucket = "lookout-backups"
	S3Key    = "lookout-test"
	S3Secret = "lookout-test-secret"
)

// S3Server is an S3-compatible server (gofakes3, in memory) behind TLS on
// the host's bridge address, with a certificate from a CA of its own that
// the repositories trust; pgBackRest 2.45 speaks S3 only over HTTPS.
type S3Server struct {
	srv     *httptest.Server
	backend *s3mem.Backend
	// Down, while true, makes every request fail with 503.
	Down atomic.Bool
	// CAFile is the CA's certificate (PEM), readable by every user; CAPEM
	// is its content.
	CAFile string
	CAPEM  []byte
	HostIP string
	Port   int
}

// StartS3 starts an S3 server on hostIP with the bucket S3Bucket; it stops
// when t's run ends.
func StartS3(t T, hostIP string) *S3Server {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatalf("start S3: %v", err)
		}
	}
	// The postgres user reads the CA: not under t.TempDir, which is private.
	dir, err := os.MkdirTemp("", "lookout-s3-")
	must(err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(os.Chmod(dir, 0o755))
	caPEM, cert, err := testCertificate(hostIP)
	must(err)
	s := &S3Server{backend: s3mem.New(), CAFile: filepath.Join(dir, "ca.crt"), CAPEM: caPEM, HostIP: hostIP}
	must(os.WriteFile(s.CAFile, caPEM, 0o644))
	must(s.backend.CreateBucket(S3Bucket))
	var l net.Listener
	fake := gofakes3.New(s.backend).Server()
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Down.Load() {
			http.Error(w, "<Error><Code>ServiceUnavailable</Code></Error>", http.StatusServiceUnavailable)
			return
		}
		fake.ServeHTTP(w, r)
	}))
	l, err = net.Listen("tcp", net.JoinHostPort(hostIP, "0"))
	must(err)
	s.srv.Listener = l
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.Port = l.Addr().(*net.TCPAddr).Port
	return s
}

// Close stops the server: its port refuses connections.
func (s *S3Server) Close() { s.srv.Close() }

// Endpoint is the server's address as an S3 repository's endpoint takes it
// (host:port).
func (s *S3Server) Endpoint() string { return net.JoinHostPort(s.HostIP, strconv.Itoa(s.Port)) }

// Repo is a repository in the bucket at path.
func (s *S3Server) Repo(name, path string) pgcontract.Repo {
	return pgcontract.Repo{Name: name, Path: path, S3: &pgcontract.S3{
		Bucket: S3Bucket, Endpoint: s.HostIP, Port: s.Port, Region: "us-east-1", CAFile: s.CAFile, URIStyle: "path",
	}}
}

// CredentialsConf is a pgBackRest option file with the keys of repos, as a
// configuration Secret's s3.conf holds them.
func CredentialsConf(repos ...string) string {
	var b strings.Builder
	b.WriteString("[global]\n")
	for _, r := range repos {
		b.WriteString(r + "-s3-key=" + S3Key + "\n" + r + "-s3-key-secret=" + S3Secret + "\n")
	}
	return b.String()
}

// Credentials writes the repositories' keys as a pgBackRest option file,
// as a configuration Secret projected into the pod would be, for repos
// and for the repository restored from.
func (s *S3Server) Credentials(repos ...string) func(*Cluster) {
	return func(c *Cluster) {
		for _, d := range []string{"pgbackrest", "pgbackrest-restore"} {
			dir := filepath.Join(c.Dir, d)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				c.T.Fatalf("%v", err)
			}
			if err := os.WriteFile(filepath.Join(dir, "s3.conf"), []byte(CredentialsConf(repos...)), 0o644); err != nil {
				c.T.Fatalf("%v", err)
			}
		}
		c.Args = append(c.Args, "--pgbackrest-conf-dir", filepath.Join(c.Dir, "pgbackrest"),
			"--pgbackrest-restore-conf-dir", filepath.Join(c.Dir, "pgbackrest-restore"))
	}
}

// Keys are the objects in the bucket under prefix.
func (s *S3Server) Keys(prefix string) []string {
	list, err := s.backend.ListBucket(S3Bucket, &gofakes3.Prefix{HasPrefix: true, Prefix: prefix}, gofakes3.ListBucketPage{})
	if err != nil {
		return nil
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, o.Key)
	}
	return keys
}

// HasWAL says whether the repository at path holds segment (or a history
// file) of stanza.
func (s *S3Server) HasWAL(path, stanza, segment string) bool {
	for _, k := range s.Keys(strings.TrimPrefix(path, "/") + "/archive/" + stanza + "/") {
		if strings.HasPrefix(filepath.Base(k), segment) {
			return true
		}
	}
	return false
}

// testCertificate is a CA and a server certificate it signed for ip.
func testCertificate(ip string) ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lookout test S3 CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)}, DNSNames: []string{ip}, // pgBackRest 2.45 matches DNS names only
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
