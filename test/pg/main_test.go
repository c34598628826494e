// Package pg tests the PostgreSQL instance manager (`lookout instance`)
// against real PostgreSQL 15 servers and a real kube-apiserver: each
// instance is a manager process in a network namespace of its own (a pod
// with a real address), with a Pod object the test creates, since no kubelet
// runs. Faults are real: SIGKILL and SIGSTOP of every process of an
// instance, its network cut. A writer logs every write's outcome and the
// tests compare the log with the table after each fault.
package pg

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/pginstance"
	"github.com/lookout-operator/lookout/internal/testhost"
)

const instanceEnv = "LOOKOUT_PG_TEST_INSTANCE"

var (
	cp         *controlplane.ControlPlane
	clientset  kubernetes.Interface
	network    *testhost.Network
	kubeconfig string // for the instances: the apiserver through the bridge
	binDir     = "/usr/lib/postgresql/15/bin"
)

func TestMain(m *testing.M) {
	// Re-executed as an instance manager inside a network namespace.
	if os.Getenv(instanceEnv) != "" {
		root := &cobra.Command{Use: "lookout", SilenceUsage: true}
		root.AddCommand(pginstance.NewCommand(), pginstance.NewBackupCommand())
		root.SetArgs(os.Args[1:])
		if err := root.Execute(); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "test/pg: must run as root (network namespaces; postgres runs as the postgres user)")
		return 1
	}
	if _, err := os.Stat(filepath.Join(binDir, "postgres")); err != nil {
		fmt.Fprintln(os.Stderr, "test/pg: PostgreSQL 15 is not installed (.ci/run installs postgresql-15):", err)
		return 1
	}
	ctx := context.Background()
	var err error
	cp, err = controlplane.Start(ctx, controlplane.Options{WithoutControllerManager: true, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/pg: control plane:", err)
		return 1
	}
	defer cp.Stop()
	clientset = kubernetes.NewForConfigOrDie(cp.RESTConfig)
	network, err = testhost.NewNetwork()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/pg: network:", err)
		return 1
	}
	defer network.Close()
	proxy, err := forward(network.HostIP, "127.0.0.1:"+strconv.Itoa(cp.Port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "test/pg: apiserver forwarder:", err)
		return 1
	}
	defer proxy.close()
	kubeconfig = filepath.Join(cp.Dir, "instances.kubeconfig")
	if err := writeKubeconfig(kubeconfig, "https://"+proxy.addr()); err != nil {
		fmt.Fprintln(os.Stderr, "test/pg:", err)
		return 1
	}
	return m.Run()
}

// writeKubeconfig points the instances at the apiserver through the bridge;
// its certificate names 127.0.0.1, which is the name checked.
func writeKubeconfig(path, server string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cp.CACert, TLSServerName: "127.0.0.1"}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cp.RESTConfig.CertData, ClientKeyData: cp.RESTConfig.KeyData}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
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
