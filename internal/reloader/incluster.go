package reloader

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// serviceAccountDir is where the kubelet mounts the pod's service account credentials.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// ErrNotInCluster means the process has no in-cluster API credentials.
var ErrNotInCluster = errors.New("no in-cluster credentials: KUBERNETES_SERVICE_HOST/PORT unset")

// APIClient is what the Secret watch needs from the Kubernetes API: a base URL, an HTTP
// client that trusts the server, and a bearer token.
type APIClient struct {
	BaseURL string
	HTTP    *http.Client
	// Token returns the bearer token for the next request; nil sends none.
	Token func() (string, error)
}

// InClusterAPIClient builds an APIClient from the environment and files the kubelet
// provides to every pod, the same inputs client-go's rest.InClusterConfig reads. It is
// written out here rather than imported because client-go's rest package adds about
// 5 MB to a binary that needs one GET. The token is read from disk for every request:
// projected service account tokens are rotated in place, and requests here are rare.
func InClusterAPIClient() (*APIClient, error) {
	return inClusterAPIClient(os.Getenv, serviceAccountDir)
}

func inClusterAPIClient(getenv func(string) string, dir string) (*APIClient, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, ErrNotInCluster
	}
	tokenFile := filepath.Join(dir, "token")
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, fmt.Errorf("service account token: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("service account CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("service account CA %s holds no PEM certificate", filepath.Join(dir, "ca.crt"))
	}
	transport := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		// Keep-alive probes notice a dead peer under a long-lived watch.
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       90 * time.Second,
	}
	return &APIClient{
		BaseURL: "https://" + net.JoinHostPort(host, port),
		HTTP:    &http.Client{Transport: transport},
		Token: func() (string, error) {
			b, err := os.ReadFile(tokenFile)
			if err != nil {
				return "", fmt.Errorf("read service account token: %w", err)
			}
			return strings.TrimSpace(string(b)), nil
		},
	}, nil
}
