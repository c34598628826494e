package localpod

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// What a kubelet does for the pods of its node, the local runner does for the pods it
// runs with Options.Node: before starting one it binds the Pod object its controller
// made (the local control plane runs no scheduler), then writes its status as it changes
// — Running with its IP, each container Ready once its readiness probe passes, Failed
// (or Succeeded) once its processes have ended — and when the Pod is deleted it stops the
// processes and confirms the deletion. It runs a pod once: the replacement a controller
// makes for a failed or deleted pod stays Pending until someone runs it.
//
// What a kubelet does with a pod's securityContext and its claims is in security.go and
// materialize: the user, groups and fsGroup, and PersistentVolumeClaim volumes as
// directories under Options.ClaimsDir that outlive the pod.

// podWait bounds the wait for a controller to make the Pod object.
const podWait = 60 * time.Second

// probeEvery is how often readiness is probed (a kubelet probes every periodSeconds; a
// second here, so that a pod is Ready as soon as it can be).
const probeEvery = time.Second

// bind waits for Pod ns/name (one not on its way out), binds it to the node and returns
// its UID.
func (n *Node) bind(ctx context.Context, ns, name string) (types.UID, error) {
	pods := n.cs.CoreV1().Pods(ns)
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, podWait, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, nil
		}
		pod = p
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("no Pod %s/%s to run within %s (its controller makes it: is kube-controller-manager running?): %w", ns, name, podWait, err)
	}
	switch pod.Spec.NodeName {
	case n.Name:
		return pod.UID, nil
	case "":
	default:
		return "", fmt.Errorf("Pod %s/%s is bound to Node %s, not to %s", ns, name, pod.Spec.NodeName, n.Name)
	}
	err = pods.Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: n.Name},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("bind Pod %s/%s to Node %s: %w", ns, name, n.Name, err)
	}
	return pod.UID, nil
}

// reporter writes the status of one running pod.
type reporter struct {
	node     *Node
	ns, name string
	uid      types.UID
	ip       string
	spec     corev1.PodSpec
	pod      *Pod
	started  time.Time
	stop     context.CancelFunc
	done     chan struct{}
	// failures counts each container's consecutive failed readiness probes; ready is
	// what the probes concluded.
	failures map[string]int32
	ready    map[string]bool
}

func (p *Pod) report(o Options, uid types.UID) {
	ctx, cancel := context.WithCancel(context.Background())
	ip := o.PodIP
	if ip == "" {
		ip = o.Node.IP // the host's network, as hostNetwork pods
	}
	r := &reporter{node: o.Node, ns: o.PodNamespace, name: o.PodName, uid: uid, ip: ip, spec: o.Pod, pod: p,
		started: time.Now(), stop: cancel, done: make(chan struct{}), failures: map[string]int32{}, ready: map[string]bool{}}
	p.reporter = r
	go r.run(ctx)
}

func (r *reporter) run(ctx context.Context) {
	defer close(r.done)
	for {
		r.probe(ctx)
		st := r.status()
		switch err := r.sync(ctx, st); {
		case errors.Is(err, errPodDeleted):
			r.pod.kill()
			r.confirmDeletion()
			return
		case err == nil && (st.Phase == corev1.PodFailed || st.Phase == corev1.PodSucceeded):
			return // the apiserver deletes a pod that is over at once: nothing to confirm
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(probeEvery):
		}
	}
}

// errPodDeleted: the Pod is being deleted, or gone.
var errPodDeleted = errors.New("pod deleted")

// sync reads the Pod and, when its status is not st, writes st into it, keeping the
// conditions others set (the node lifecycle controller's, a DisruptionTarget) and the
// times of the transitions st does not make. Reading every time, as a kubelet watches,
// is how a deletion is seen.
func (r *reporter) sync(ctx context.Context, st corev1.PodStatus) error {
	pods := r.node.cs.CoreV1().Pods(r.ns)
	pod, err := pods.Get(ctx, r.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && (pod.UID != r.uid || pod.DeletionTimestamp != nil)) {
		return errPodDeleted
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	conditions := slices.Clone(st.Conditions)
	for _, c := range pod.Status.Conditions {
		i := conditionIndex(conditions, c.Type)
		switch {
		case i < 0:
			conditions = append(conditions, c)
		case conditions[i].Status == c.Status:
			conditions[i].LastTransitionTime = c.LastTransitionTime
		}
	}
	for i := range conditions {
		if conditions[i].LastTransitionTime.IsZero() {
			conditions[i].LastTransitionTime = now
		}
	}
	// The fields st does not hold (the QoS class, ...) stay as they are.
	next := *pod.Status.DeepCopy()
	next.Phase, next.Conditions, next.StartTime = st.Phase, conditions, st.StartTime
	next.HostIP, next.HostIPs, next.PodIP, next.PodIPs = st.HostIP, st.HostIPs, st.PodIP, st.PodIPs
	next.ContainerStatuses, next.InitContainerStatuses = st.ContainerStatuses, st.InitContainerStatuses
	if apiequality.Semantic.DeepEqual(pod.Status, next) {
		return nil
	}
	pod.Status = next
	_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

func conditionIndex(conditions []corev1.PodCondition, t corev1.PodConditionType) int {
	for i, c := range conditions {
		if c.Type == t {
			return i
		}
	}
	return -1
}

// confirmDeletion ends the deletion of a Pod whose processes are gone, as a kubelet
// does once it has stopped its containers.
func (r *reporter) confirmDeletion() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// An error means it is gone already, or replaced: nothing left to confirm.
	_ = r.node.cs.CoreV1().Pods(r.ns).Delete(ctx, r.name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &r.uid},
	})
}

// status is the pod's status as its processes and probes have it, without transition
// times.
func (r *reporter) status() corev1.PodStatus {
	st := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    r.node.IP,
		HostIPs:   []corev1.HostIP{{IP: r.node.IP}},
		PodIP:     r.ip,
		PodIPs:    []corev1.PodIP{{IP: r.ip}},
		StartTime: &metav1.Time{Time: r.started.Truncate(time.Second)},
	}
	for _, c := range r.spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}},
		})
	}
	allReady, running, failed := true, 0, false
	for _, c := range r.spec.Containers {
		ctr := r.pod.Containers[c.Name]
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ContainerID: fmt.Sprintf("localpod://%d", ctr.Pid())}
		select {
		case <-ctr.exited:
			code := exitCode(ctr.err)
			reason := "Completed"
			if code != 0 {
				reason, failed = "Error", true
			}
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason,
				StartedAt: metav1.Time{Time: ctr.started.Truncate(time.Second)}, FinishedAt: metav1.Time{Time: ctr.finished.Truncate(time.Second)}}
			cs.Started = ptr.To(false)
		default:
			running++
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: ctr.started.Truncate(time.Second)}}
			cs.Started, cs.Ready = ptr.To(true), r.ready[c.Name]
		}
		allReady = allReady && cs.Ready
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	if running == 0 {
		// Nothing restarts them here: the pod is over.
		st.Phase = corev1.PodSucceeded
		if failed {
			st.Phase = corev1.PodFailed
		}
	}
	condition := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		if ok {
			return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue}
		}
		return corev1.PodCondition{Type: t, Status: corev1.ConditionFalse}
	}
	st.Conditions = []corev1.PodCondition{
		condition(corev1.PodReadyToStartContainers, running > 0),
		condition(corev1.PodInitialized, true),
		condition(corev1.ContainersReady, allReady),
		condition(corev1.PodReady, allReady),
		condition(corev1.PodScheduled, true),
	}
	return st
}

func exitCode(err error) int32 {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return 0
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(exit.ExitCode())
}

// probe runs the readiness probe of every running container: a container turns Ready
// on a success and not Ready after failureThreshold failures in a row, as a kubelet has
// it. A container without a readiness probe is Ready while it runs; exec and gRPC probes
// are not run here and count as passing.
func (r *reporter) probe(ctx context.Context) {
	for _, c := range r.spec.Containers {
		p := c.ReadinessProbe
		if p == nil {
			r.ready[c.Name] = true
			continue
		}
		if r.pass(ctx, c, p) {
			r.ready[c.Name], r.failures[c.Name] = true, 0
			continue
		}
		r.failures[c.Name]++
		threshold := p.FailureThreshold
		if threshold == 0 {
			threshold = 3
		}
		if !r.ready[c.Name] || r.failures[c.Name] >= threshold {
			r.ready[c.Name] = false
		}
	}
}

func (r *reporter) pass(ctx context.Context, c corev1.Container, p *corev1.Probe) bool {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.HTTPGet != nil:
		h := p.HTTPGet
		host := h.Host
		if host == "" {
			host = r.ip
		}
		scheme := "http"
		if h.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(portOf(c, h.Port))), h.Path)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		for _, hd := range h.HTTPHeaders {
			req.Header.Add(hd.Name, hd.Value)
		}
		// As a kubelet: a probe does not check the pod's serving certificate.
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a probe, as the kubelet's
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode >= 200 && resp.StatusCode < 400
	case p.TCPSocket != nil:
		host := p.TCPSocket.Host
		if host == "" {
			host = r.ip
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(portOf(c, p.TCPSocket.Port))))
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}
	return true
}

// portOf resolves a probe's port, a number or the name of one of the container's ports.
func portOf(c corev1.Container, port intstr.IntOrString) int {
	if port.Type == intstr.Int {
		return port.IntValue()
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort)
		}
	}
	return 0
}
