package localpod

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lookout-operator/lookout/internal/testhost"
)

// apiProxy listens inside a network namespace and forwards every connection
// to the apiserver on the host: the namespace cannot reach the host's
// loopback, where the local apiserver listens. It forwards bytes only; TLS
// stays end to end between the pod and the apiserver.
type apiProxy struct {
	host, addr string
	port       int
	target     string
	l          net.Listener
	wg         sync.WaitGroup
	mu         sync.Mutex
	conns      map[net.Conn]bool
	closed     bool
}

// startAPIProxy listens on the namespace's 127.0.0.1 (the apiserver's
// serving certificate names it), on the apiserver's own port when it is
// free there, so the pod sees the same address as a process on the host.
func startAPIProxy(netns, targetHost string, targetPort int) (*apiProxy, error) {
	if targetHost == "" {
		targetHost = "127.0.0.1"
	}
	p := &apiProxy{host: "127.0.0.1", target: net.JoinHostPort(targetHost, strconv.Itoa(targetPort)), conns: map[net.Conn]bool{}}
	err := testhost.InNamespace(netns, func() error {
		l, err := net.Listen("tcp", net.JoinHostPort(p.host, strconv.Itoa(targetPort)))
		if err != nil {
			l, err = net.Listen("tcp", net.JoinHostPort(p.host, "0"))
		}
		p.l = l
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("apiserver proxy in network namespace %s: %w", netns, err)
	}
	p.addr = p.l.Addr().String()
	p.port = p.l.Addr().(*net.TCPAddr).Port
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *apiProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		// Dialled from an ordinary goroutine: the host's network.
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in, out) {
			in.Close()
			out.Close()
			return
		}
		p.wg.Add(1)
		go p.forward(in, out)
	}
}

func (p *apiProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.conns[c] = true
	}
	return true
}

// forward copies both ways until both sides are done, then closes both.
func (p *apiProxy) forward(in, out net.Conn) {
	defer p.wg.Done()
	done := make(chan struct{})
	go func() {
		copyHalf(in, out)
		close(done)
	}()
	copyHalf(out, in)
	<-done
	in.Close()
	out.Close()
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}

// copyHalf copies src to dst, then passes the end of the stream on.
func copyHalf(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

func (p *apiProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.l.Close()
	p.wg.Wait()
}

// hostsFile is the pod's /etc/hosts: localhost, the pod's own name, and
// Options.Hosts sorted by name.
func hostsFile(o Options) []byte {
	var b strings.Builder
	b.WriteString("# written by localpod for pod " + o.PodNamespace + "/" + o.PodName + "\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	if o.PodIP != "" && o.PodName != "" {
		if _, ok := o.Hosts[o.PodName]; !ok {
			fmt.Fprintf(&b, "%s\t%s\n", o.PodIP, o.PodName)
		}
	}
	names := make([]string, 0, len(o.Hosts))
	for n := range o.Hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s\t%s\n", o.Hosts[n], n)
	}
	return []byte(b.String())
}
