// Package pgharness runs PostgreSQL instance managers (`lookout instance`)
// the way a cluster would, without the controller or a kubelet: a real
// kube-apiserver, one network namespace per instance (a pod with a real
// address), the Pod objects a StatefulSet would make, and the faults a pod
// meets (SIGKILL, SIGSTOP, deletion, its network cut, a planned switchover).
// A writer logs the outcome of every write and each fault ends with the log
// compared with the table. test/pg asserts on it; the bench's pg scenario
// measures with it.
package pgharness

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// DefaultBinDir holds PostgreSQL 15 (Debian's postgresql-15).
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

// Env is what every cluster of a run shares: the control plane, the bridge
// the instances' namespaces hang on, and a kubeconfig that reaches the
// apiserver from inside a namespace.
type Env struct {
	CP        *controlplane.ControlPlane
	Clientset kubernetes.Interface
	Network   *testhost.Network
	// Kubeconfig is for the instances: the apiserver through the bridge.
	Kubeconfig string
	BinDir     string

	proxy *forwarder
}

// Start checks what the instances need (root, PostgreSQL 15), then starts
// the control plane and the bridge.
func Start(ctx context.Context, log io.Writer) (*Env, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("must run as root (network namespaces; postgres runs as the postgres user)")
	}
	e := &Env{BinDir: DefaultBinDir}
	if _, err := os.Stat(filepath.Join(e.BinDir, "postgres")); err != nil {
		return nil, fmt.Errorf("PostgreSQL 15 is not installed (.ci/run installs postgresql-15): %w", err)
	}
	var err error
	e.CP, err = controlplane.Start(ctx, controlplane.Options{WithoutControllerManager: true, Log: log})
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	e.Clientset = kubernetes.NewForConfigOrDie(e.CP.RESTConfig)
	if e.Network, err = testhost.NewNetwork(); err != nil {
		e.Close()
		return nil, fmt.Errorf("network: %w", err)
	}
	if e.proxy, err = forward(e.Network.HostIP, "127.0.0.1:"+strconv.Itoa(e.CP.Port)); err != nil {
		e.Close()
		return nil, fmt.Errorf("apiserver forwarder: %w", err)
	}
	e.Kubeconfig = filepath.Join(e.CP.Dir, "instances.kubeconfig")
	if err := e.writeKubeconfig("https://" + e.proxy.addr()); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close stops what Start started.
func (e *Env) Close() {
	if e.proxy != nil {
		e.proxy.close()
	}
	if e.Network != nil {
		e.Network.Close()
	}
	if e.CP != nil {
		e.CP.Stop()
	}
}

// writeKubeconfig points the instances at the apiserver through the bridge;
// its certificate names 127.0.0.1, which is the name checked.
func (e *Env) writeKubeconfig(server string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: e.CP.CACert, TLSServerName: "127.0.0.1"}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: e.CP.RESTConfig.CertData, ClientKeyData: e.CP.RESTConfig.KeyData}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, e.Kubeconfig)
}

// forwarder accepts on the host's bridge address and forwards to the
// apiserver on loopback, which a network namespace cannot reach. A cut
// namespace loses it like every other address.
type forwarder struct {
	l     net.Listener
	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func forward(host, target string) (*forwarder, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	f := &forwarder{l: l, conns: map[net.Conn]bool{}}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", target, 2*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			f.mu.Lock()
			f.conns[in], f.conns[out] = true, true
			f.mu.Unlock()
			f.wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer f.wg.Done()
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
				f.mu.Lock()
				delete(f.conns, dst)
				delete(f.conns, src)
				f.mu.Unlock()
			}
			go pipe(out, in)
			go pipe(in, out)
		}
	}()
	return f, nil
}

func (f *forwarder) addr() string { return f.l.Addr().String() }

func (f *forwarder) close() {
	f.l.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
