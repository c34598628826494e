package controlplane

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configure Start. The zero value is a fresh control plane in a new
// temporary directory on free loopback ports.
type Options struct {
	// Dir holds data, certificates, logs and the kubeconfig. Empty: a new
	// temporary directory, removed by Stop. A given Dir must not hold the
	// data of an earlier run (Start refuses a stale data directory).
	Dir string
	// KubeconfigPath, when set, also receives a copy of the admin kubeconfig.
	KubeconfigPath string
	// APIServerPort pins the apiserver's secure port; 0 picks a free one.
	APIServerPort int
	// WithoutControllerManager skips kube-controller-manager (no garbage
	// collection, no StatefulSet pods) for tests that do not need it.
	WithoutControllerManager bool
	// CRDDir, when set, holds CRDs that are installed (and Established)
	// before kube-controller-manager starts: its garbage collector then knows
	// the custom kinds at once instead of after its 30s discovery resync.
	CRDDir string
	// ExtraAPIServerArgs are appended to the kube-apiserver command line.
	ExtraAPIServerArgs []string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// ReadyTimeout bounds the wait for readiness (default 60s).
	ReadyTimeout time.Duration
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	Dir            string
	KubeconfigPath string
	// Host is the apiserver URL, e.g. https://127.0.0.1:41234.
	Host string
	// Port is the apiserver's secure port.
	Port int
	// CACert is the PEM of the CA that signed the apiserver's serving certificate.
	CACert []byte
	// RESTConfig authenticates as a cluster admin (system:masters).
	RESTConfig *rest.Config

	ownsDir bool
	procs   []*process
	pki     *pki

	etcdURL  string
	api      *process
	apiBin   string
	apiArgs  []string
	restarts int
}

// Start builds missing binaries, then starts etcd, kube-apiserver and (unless
// disabled) kube-controller-manager, and waits until they are ready. On any
// error everything already started is stopped again.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	bins := map[string]string{}
	for _, t := range ControlPlaneTools {
		p, err := t.Ensure(ctx, logw)
		if err != nil {
			return nil, err
		}
		bins[t.Name] = p
	}

	cp = &ControlPlane{Dir: opts.Dir}
	if cp.Dir == "" {
		d, err := os.MkdirTemp("", "lookout-controlplane-")
		if err != nil {
			return nil, fmt.Errorf("create control-plane directory: %w", err)
		}
		cp.Dir, cp.ownsDir = d, true
	} else if err := checkFreshDir(cp.Dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()

	cp.pki, err = writePKI(filepath.Join(cp.Dir, "pki"), nil)
	if err != nil {
		return nil, fmt.Errorf("generate certificates: %w", err)
	}
	cp.CACert = cp.pki.caPEM

	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, kcmPort := ports[0], ports[1], ports[3]
	cp.Port = ports[2]
	if opts.APIServerPort != 0 {
		cp.Port = opts.APIServerPort
		if err := checkPortFree(cp.Port); err != nil {
			return nil, err
		}
	}
	cp.Host = "https://127.0.0.1:" + strconv.Itoa(cp.Port)

	start := time.Now()
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	etcd, err := cp.spawn("etcd", bins["etcd"],
		"--name=lookout",
		"--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=lookout="+peerURL,
		// A throwaway cluster: durability costs latency and buys nothing.
		"--unsafe-no-fsync=true",
		"--quota-backend-bytes=8589934592",
		"--log-level=warn",
	)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, etcd, etcdURL+"/health", nil, opts.ReadyTimeout); err != nil {
		return nil, err
	}

	if err := cp.writeKubeconfig(opts.KubeconfigPath); err != nil {
		return nil, err
	}
	apiArgs := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cp.Port),
		"--cert-dir=" + filepath.Join(cp.Dir, "pki"),
		"--tls-cert-file=" + cp.pki.ServingCert,
		"--tls-private-key-file=" + cp.pki.ServingKey,
		"--client-ca-file=" + cp.pki.CACert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + cp.pki.SAPublic,
		"--service-account-signing-key-file=" + cp.pki.SAPrivate,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		// The apiserver would publish 127.0.0.1 in the kubernetes Endpoints,
		// which validation refuses; nothing here needs that object.
		"--endpoint-reconciler-type=none",
		"--max-requests-inflight=1000",
		"--max-mutating-requests-inflight=500",
		"--profiling=false",
	}
	apiArgs = append(apiArgs, opts.ExtraAPIServerArgs...)
	api, err := cp.spawn("kube-apiserver", bins["kube-apiserver"], apiArgs...)
	if err != nil {
		return nil, err
	}
	cp.etcdURL, cp.api, cp.apiBin, cp.apiArgs = etcdURL, api, bins["kube-apiserver"], apiArgs
	if err := waitHTTP(ctx, api, cp.Host+"/readyz", cp.adminTLS(), opts.ReadyTimeout); err != nil {
		return nil, err
	}

	if opts.CRDDir != "" {
		if _, err := InstallCRDs(ctx, cp.RESTConfig, opts.CRDDir); err != nil {
			return nil, fmt.Errorf("install CRDs: %w", err)
		}
	}

	if !opts.WithoutControllerManager {
		kcm, err := cp.spawn("kube-controller-manager", bins["kube-controller-manager"],
			"--kubeconfig="+cp.KubeconfigPath,
			"--authentication-kubeconfig="+cp.KubeconfigPath,
			"--authorization-kubeconfig="+cp.KubeconfigPath,
			"--bind-address=127.0.0.1",
			"--secure-port="+strconv.Itoa(kcmPort),
			"--cert-dir="+filepath.Join(cp.Dir, "kcm-certs"),
			"--leader-elect=false",
			"--controllers=*",
			"--use-service-account-credentials=false",
			"--service-account-private-key-file="+cp.pki.SAPrivate,
			"--root-ca-file="+cp.pki.CACert,
			"--cluster-signing-cert-file="+cp.pki.CACert,
			"--cluster-signing-key-file="+cp.pki.CAKey,
			"--concurrent-gc-syncs=5",
			"--profiling=false",
		)
		if err != nil {
			return nil, err
		}
		insecure := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // self-signed local component
		if err := waitHTTP(ctx, kcm, fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort), insecure, opts.ReadyTimeout); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(logw, "control plane ready in %s at %s (kubeconfig %s)\n", time.Since(start).Round(10*time.Millisecond), cp.Host, cp.KubeconfigPath)
	return cp, nil
}

// RestartAPIServer stops kube-apiserver (every client's connections and watches break),
// runs whileDown (nil: nothing), starts it again on the same port with the same
// certificates and etcd, and waits until it is ready.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, whileDown func(context.Context) error) error {
	cp.api.Stop(10 * time.Second)
	if whileDown != nil {
		if err := whileDown(ctx); err != nil {
			return err
		}
	}
	cp.restarts++
	api, err := cp.spawn(fmt.Sprintf("kube-apiserver-%d", cp.restarts), cp.apiBin, cp.apiArgs...)
	if err != nil {
		return err
	}
	cp.api = api
	return waitHTTP(ctx, api, cp.Host+"/readyz", cp.adminTLS(), 2*time.Minute)
}

// CompactEtcd compacts etcd's history up to its current revision: a watch that resumes
// from an older resourceVersion gets 410 Gone and its client must list again.
func (cp *ControlPlane) CompactEtcd(ctx context.Context) error {
	post := func(path, body string) (map[string]any, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, cp.etcdURL+path, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("etcd %s: %s: %v", path, resp.Status, out)
		}
		return out, nil
	}
	// The current revision is in the header of any read.
	out, err := post("/v3/kv/range", `{"key":"AA=="}`)
	if err != nil {
		return err
	}
	header, _ := out["header"].(map[string]any)
	rev, _ := header["revision"].(string)
	if rev == "" {
		return fmt.Errorf("etcd gave no revision: %v", out)
	}
	_, err = post("/v3/kv/compaction", fmt.Sprintf(`{"revision":%q,"physical":true}`, rev))
	return err
}

// Stop terminates the components (newest first) and removes a temporary
// directory. It is safe to call more than once.
func (cp *ControlPlane) Stop() {
	if cp == nil {
		return
	}
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].Stop(10 * time.Second)
	}
	cp.procs = nil
	if cp.ownsDir && cp.Dir != "" {
		_ = os.RemoveAll(cp.Dir)
		cp.Dir = ""
	}
}

// LogPath is the log file of a component ("etcd", "kube-apiserver", ...).
func (cp *ControlPlane) LogPath(component string) string {
	return filepath.Join(cp.Dir, component+".log")
}

func (cp *ControlPlane) adminTLS() *tls.Config {
	pair, err := tls.X509KeyPair(cp.pki.adminCertPEM, cp.pki.adminKeyPEM)
	if err != nil {
		panic(err) // generated a moment ago; cannot be malformed
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true} //nolint:gosec // readiness probe only
}

func (cp *ControlPlane) writeKubeconfig(extra string) error {
	cp.RESTConfig = &rest.Config{
		Host: cp.Host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   cp.pki.caPEM,
			CertData: cp.pki.adminCertPEM,
			KeyData:  cp.pki.adminKeyPEM,
		},
		QPS:   200,
		Burst: 400,
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lookout"] = &clientcmdapi.Cluster{Server: cp.Host, CertificateAuthorityData: cp.pki.caPEM}
	cfg.AuthInfos["lookout-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cp.pki.adminCertPEM, ClientKeyData: cp.pki.adminKeyPEM}
	cfg.Contexts["lookout"] = &clientcmdapi.Context{Cluster: "lookout", AuthInfo: "lookout-admin", Namespace: "default"}
	cfg.CurrentContext = "lookout"
	cp.KubeconfigPath = filepath.Join(cp.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, cp.KubeconfigPath); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if extra != "" {
		if err := os.MkdirAll(filepath.Dir(extra), 0o755); err != nil {
			return err
		}
		if err := clientcmd.WriteToFile(*cfg, extra); err != nil {
			return fmt.Errorf("write kubeconfig %s: %w", extra, err)
		}
	}
	return nil
}

// checkFreshDir refuses a directory that already holds etcd data: starting on
// it would resurrect an old cluster with certificates that no longer match.
func checkFreshDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "etcd", "member")); err == nil {
		return fmt.Errorf("stale data directory %s: it holds etcd data from an earlier run; remove it (rm -rf %s) or choose another directory", dir, dir)
	}
	return os.MkdirAll(dir, 0o755)
}

// FreePorts finds n loopback TCP ports free at the time of the call.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func checkPortFree(port int) error {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("port %d is already in use on 127.0.0.1 (another control plane or program holds it): %w", port, err)
	}
	return l.Close()
}

// waitHTTP polls url until it answers 200, the process exits, or the timeout.
func waitHTTP(ctx context.Context, p *process, url string, tlsCfg *tls.Config, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case <-p.exited:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", p.name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (last answer from %s: %s); log: %s\n%s",
				p.name, timeout, url, last, p.logPath, tail(readFile(p.logPath), 20))
		}
	}
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

var errPortInUse = errors.New("address already in use")
