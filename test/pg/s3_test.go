package pg

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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pgharness"
)

const (
	s3Bucket = "lookout-backups"
	s3Key    = "lookout-test"
	s3Secret = "lookout-test-secret"
)

// s3Server is an S3-compatible server (gofakes3, in memory) behind TLS on
// the host's bridge address, with a certificate from a CA of its own that
// the repositories trust; pgBackRest 2.45 speaks S3 only over HTTPS.
type s3Server struct {
	srv     *httptest.Server
	backend *s3mem.Backend
	down    atomic.Bool
	caFile  string
	port    int
}

func startS3(t *testing.T) *s3Server {
	t.Helper()
	// The postgres user reads the CA: not under t.TempDir, which is private.
	dir, err := os.MkdirTemp("", "lookout-s3-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	caPEM, cert := testCertificate(t, env.Network.HostIP)
	s := &s3Server{backend: s3mem.New(), caFile: filepath.Join(dir, "ca.crt")}
	must(t, os.WriteFile(s.caFile, caPEM, 0o644))
	must(t, s.backend.CreateBucket(s3Bucket))
	var l net.Listener
	fake := gofakes3.New(s.backend).Server()
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			http.Error(w, "<Error><Code>ServiceUnavailable</Code></Error>", http.StatusServiceUnavailable)
			return
		}
		fake.ServeHTTP(w, r)
	}))
	l, err = net.Listen("tcp", net.JoinHostPort(env.Network.HostIP, "0"))
	must(t, err)
	s.srv.Listener = l
	s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.port = l.Addr().(*net.TCPAddr).Port
	return s
}

// repo is a repository in the bucket at path.
func (s *s3Server) repo(name, path string) pgcontract.Repo {
	return pgcontract.Repo{Name: name, Path: path, S3: &pgcontract.S3{
		Bucket: s3Bucket, Endpoint: env.Network.HostIP, Port: s.port, Region: "us-east-1", CAFile: s.caFile, URIStyle: "path",
	}}
}

// credentials writes the repositories' keys as a pgBackRest option file,
// as a configuration Secret projected into the pod would be, for repos
// and for the repository restored from.
func (s *s3Server) credentials(repos ...string) func(*pgharness.Cluster) {
	return func(c *pgharness.Cluster) {
		for _, d := range []string{"pgbackrest", "pgbackrest-restore"} {
			dir := filepath.Join(c.Dir, d)
			must(c.T, os.MkdirAll(dir, 0o755))
			var b strings.Builder
			b.WriteString("[global]\n")
			for _, r := range repos {
				b.WriteString(r + "-s3-key=" + s3Key + "\n" + r + "-s3-key-secret=" + s3Secret + "\n")
			}
			must(c.T, os.WriteFile(filepath.Join(dir, "s3.conf"), []byte(b.String()), 0o644))
		}
		c.Args = append(c.Args, "--pgbackrest-conf-dir", filepath.Join(c.Dir, "pgbackrest"),
			"--pgbackrest-restore-conf-dir", filepath.Join(c.Dir, "pgbackrest-restore"))
	}
}

// keys are the objects in the bucket under prefix.
func (s *s3Server) keys(prefix string) []string {
	list, err := s.backend.ListBucket(s3Bucket, &gofakes3.Prefix{HasPrefix: true, Prefix: prefix}, gofakes3.ListBucketPage{})
	if err != nil {
		return nil
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, o.Key)
	}
	return keys
}

// hasWAL says whether the repository at path holds segment (or a history
// file) of stanza.
func (s *s3Server) hasWAL(path, stanza, segment string) bool {
	for _, k := range s.keys(strings.TrimPrefix(path, "/") + "/archive/" + stanza + "/") {
		if strings.HasPrefix(filepath.Base(k), segment) {
			return true
		}
	}
	return false
}

// testCertificate is a CA and a server certificate it signed for ip.
func testCertificate(t *testing.T, ip string) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lookout test S3 CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	must(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	must(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)}, DNSNames: []string{ip}, // pgBackRest 2.45 matches DNS names only
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	must(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
