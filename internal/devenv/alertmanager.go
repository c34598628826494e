package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/localpod"
	amrender "github.com/lookout-operator/lookout/internal/render/alertmanager"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// AlertmanagerImage is the image (without tag) the generated Alertmanager
// pods name, mapped to the cached alertmanager binary.
const AlertmanagerImage = amrender.DefaultBaseImage

// Alertmanager's ports in the generated pods and the governing Service.
const (
	AlertmanagerWebPort  = 9093
	AlertmanagerMeshPort = 9094
)

// AlertmanagerPods are the replicas of one Alertmanager, each run from the
// generated StatefulSet in a network namespace of its own on a shared
// bridge, so that they gossip with each other as in a cluster.
type AlertmanagerPods struct {
	Namespace, Name string
	Pods            []*localpod.Pod
	Hosts           []*testhost.Host
	// EndpointSlice is the name of the slice published for the governing
	// Service (empty once deleted).
	EndpointSlice string
	c             client.Client
	stopOnce      sync.Once
}

// RunAlertmanagerPods waits for the operator's StatefulSet
// alertmanager-<name> and its Secrets, then runs every replica locally:
// replica i as pod alertmanager-<name>-<i> in a new host of network, with its
// address as the pod IP, an /etc/hosts that resolves every replica's name
// under the governing Service (alertmanager-<name>-<i>.<service> and
// .<service>.<ns>.svc), and a real token of the pods' ServiceAccount. It
// publishes the replicas in an EndpointSlice of the governing Service (ports
// web, tcp-mesh, udp-mesh), so that Prometheus discovers them, unless a Node
// reports the pods (RegisterNode): then kube-controller-manager publishes them
// from the pods' own addresses. It waits until each answers /-/ready.
// extraHosts are further /etc/hosts entries (name → IP) of the pods, e.g. the name
// of a receiver the config sends to.
func RunAlertmanagerPods(ctx context.Context, c client.Client, cp *controlplane.ControlPlane, bins Binaries, network *testhost.Network, ns, name string, dir string, extraHosts ...map[string]string) (*AlertmanagerPods, error) {
	if bins.Alertmanager == "" {
		return nil, errors.New("devenv: no Alertmanager binary (Binaries.Alertmanager)")
	}
	stsName := amrender.StatefulSetName(name)
	sts, err := waitStatefulSet(ctx, c, ns, stsName)
	if err != nil {
		return nil, err
	}
	replicas := 1
	if sts.Spec.Replicas != nil {
		replicas = int(*sts.Spec.Replicas)
	}
	service := sts.Spec.ServiceName
	if service == "" {
		service = amrender.DefaultGoverningServiceName
	}
	tok, err := serviceAccountToken(ctx, cp, ns, sts.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return nil, err
	}
	am := &AlertmanagerPods{Namespace: ns, Name: name, c: c}
	for range replicas {
		h, err := network.NewHost()
		if err != nil {
			am.Stop()
			return nil, err
		}
		am.Hosts = append(am.Hosts, h)
	}
	hosts := map[string]string{}
	for _, m := range extraHosts {
		maps.Copy(hosts, m)
	}
	for i, h := range am.Hosts {
		pod := stsName + "-" + strconv.Itoa(i)
		for _, name := range []string{
			pod + "." + service,
			pod + "." + service + "." + ns + ".svc",
			pod + "." + service + "." + ns + ".svc.cluster.local",
		} {
			hosts[name] = h.IP
		}
	}
	// Without a Node reporting the pods, published before they start, as the
	// EndpointSlice controller would once they run (the governing Service publishes
	// addresses not ready yet): the replicas come up one by one and find each other by
	// name anyway.
	if nodeOf(cp) == nil {
		if err := am.publish(ctx, service); err != nil {
			am.Stop()
			return nil, err
		}
	}
	for i, h := range am.Hosts {
		podName := stsName + "-" + strconv.Itoa(i)
		opts := podOptions(c, cp, sts.Spec.Template.Spec, ns, podName,
			map[string]string{AlertmanagerImage: bins.Alertmanager, ReloaderCommand: bins.Reloader}, tok, h, filepath.Join(dir, podName))
		opts.Hosts = hosts
		pod, err := localpod.Start(ctx, opts)
		if err != nil {
			am.Stop()
			return nil, fmt.Errorf("pod %s: %w", podName, err)
		}
		am.Pods = append(am.Pods, pod)
	}
	for i, h := range am.Hosts {
		url := fmt.Sprintf("http://%s:%d/-/ready", h.IP, AlertmanagerWebPort)
		if err := localpod.WaitHTTP(ctx, url, 60*time.Second); err != nil {
			logs := am.Logs(4096)
			am.Stop()
			return nil, fmt.Errorf("replica %d: %w\n%s", i, err, logs)
		}
	}
	return am, nil
}

// publish creates the EndpointSlice of the governing Service with every
// replica, ready.
func (am *AlertmanagerPods) publish(ctx context.Context, service string) error {
	stsName := amrender.StatefulSetName(am.Name)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: am.Namespace, Name: service + "-devenv-" + am.Name, Labels: map[string]string{
			discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "lookout-devenv"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("web"), Port: ptr.To[int32](AlertmanagerWebPort), Protocol: ptr.To(corev1.ProtocolTCP)},
			{Name: ptr.To("tcp-mesh"), Port: ptr.To[int32](AlertmanagerMeshPort), Protocol: ptr.To(corev1.ProtocolTCP)},
			{Name: ptr.To("udp-mesh"), Port: ptr.To[int32](AlertmanagerMeshPort), Protocol: ptr.To(corev1.ProtocolUDP)},
		},
	}
	for i, h := range am.Hosts {
		pod := stsName + "-" + strconv.Itoa(i)
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{h.IP},
			Hostname:   ptr.To(pod),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: am.Namespace, Name: pod},
		})
	}
	if err := am.c.Create(ctx, slice); err != nil {
		return fmt.Errorf("create EndpointSlice %s/%s: %w", am.Namespace, slice.Name, err)
	}
	am.EndpointSlice = slice.Name
	return nil
}

// IPs are the replicas' addresses, by ordinal.
func (am *AlertmanagerPods) IPs() []string {
	ips := make([]string, len(am.Hosts))
	for i, h := range am.Hosts {
		ips[i] = h.IP
	}
	return ips
}

// URL is replica i's web address with path, e.g. URL(0, "/api/v2/status").
func (am *AlertmanagerPods) URL(i int, path string) string {
	return fmt.Sprintf("http://%s:%d%s", am.Hosts[i].IP, AlertmanagerWebPort, path)
}

// Logs is the end (at most n bytes per container) of every container's log.
func (am *AlertmanagerPods) Logs(n int) string {
	var out string
	for i, p := range am.Pods {
		if p == nil {
			continue
		}
		for name, c := range p.Containers {
			b, _ := os.ReadFile(c.LogPath)
			out += fmt.Sprintf("--- replica %d container %s ---\n%s\n", i, name, LastBytes(b, n))
		}
	}
	return out
}

// Stop stops the pods, removes their network namespaces and deletes the
// EndpointSlice (best effort: the control plane may be gone already).
func (am *AlertmanagerPods) Stop() {
	am.stopOnce.Do(func() {
		for _, p := range am.Pods {
			p.Stop()
		}
		for _, h := range am.Hosts {
			h.Close()
		}
		if am.EndpointSlice != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := am.c.Delete(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: am.Namespace, Name: am.EndpointSlice}})
			if err == nil || apierrors.IsNotFound(err) {
				am.EndpointSlice = ""
			}
		}
	})
}

// Request is one POST a Receiver recorded.
type Request struct {
	Path   string
	Header http.Header
	Body   []byte
	Time   time.Time
}

// Receiver is an HTTP server on the host's address on a testhost Network
// that pods in the network's namespaces reach; it records every POST
// (answering 200 "ok", which also satisfies Slack's webhook protocol) and
// lets a test wait for the one it expects.
type Receiver struct {
	Addr string // host:port
	srv  *http.Server
	mu   sync.Mutex
	reqs []Request
	// changed is closed (and replaced) whenever a request is recorded.
	changed chan struct{}
}

// StartReceiver listens on a free port of the network's host address.
func StartReceiver(network *testhost.Network) (*Receiver, error) {
	return StartReceiverOn(network, 0)
}

// StartReceiverOn listens on port of the network's host address (0: a free one).
func StartReceiverOn(network *testhost.Network, port int) (*Receiver, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(network.HostIP, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	r := &Receiver{Addr: l.Addr().String(), changed: make(chan struct{})}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, Request{Path: req.URL.Path, Header: req.Header.Clone(), Body: body, Time: time.Now()})
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "ok")
}

// URL is the receiver's address with path, e.g. URL("/slack").
func (r *Receiver) URL(path string) string { return "http://" + r.Addr + path }

// Requests is a copy of every request recorded so far, in order.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.reqs...)
}

// Count is the number of recorded requests that match.
func (r *Receiver) Count(match func(Request) bool) int {
	n := 0
	for _, req := range r.Requests() {
		if match(req) {
			n++
		}
	}
	return n
}

// WaitFor returns the first recorded request that matches, waiting for new
// ones until ctx ends.
func (r *Receiver) WaitFor(ctx context.Context, match func(Request) bool) (Request, error) {
	seen := 0
	for {
		r.mu.Lock()
		reqs, changed := r.reqs[seen:], r.changed
		seen = len(r.reqs)
		r.mu.Unlock()
		for _, req := range reqs {
			if match(req) {
				return req, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Request{}, fmt.Errorf("no matching request among %d received: %w", seen, ctx.Err())
		}
	}
}

// Close stops the server.
func (r *Receiver) Close() { _ = r.srv.Close() }
