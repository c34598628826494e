package localpod

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Node is this host as a Node of the API, reporting the pods it runs as a kubelet does:
// pods started with Options.Node are bound to it, and their phase, addresses, conditions
// and container states are written to their status (see report.go). Without one, a pod
// runs unseen by the API.
type Node struct {
	Name string
	// IP is the node's InternalIP, and the pod IP of a pod that runs on the host's
	// network (no Options.NetNS).
	IP string

	cs   kubernetes.Interface
	stop context.CancelFunc
	done chan struct{}
}

// nodeLeaseNamespace holds the Leases by which nodes say they are alive.
const nodeLeaseNamespace = "kube-node-lease"

// leaseDuration and renewEvery are a kubelet's defaults: kube-controller-manager's node
// lifecycle controller marks a node whose Lease is not renewed for its grace period
// (40-50 s) NotReady, and its pods not Ready.
const (
	leaseDuration = 40 * time.Second
	renewEvery    = 10 * time.Second
)

// RegisterNode registers this host as Node name with address ip, Ready, and renews its
// Lease until Stop. A Node of that name left by an earlier run is taken over.
func RegisterNode(ctx context.Context, cs kubernetes.Interface, name, ip string) (*Node, error) {
	n := &Node{Name: name, IP: ip, cs: cs, done: make(chan struct{})}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelHostname: name, corev1.LabelOSStable: runtime.GOOS, corev1.LabelArchStable: runtime.GOARCH,
	}}}
	created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("register Node %s: %w", name, err)
	}
	// kube-controller-manager writes a new Node at once (its taints): on a
	// conflict, the status goes onto the Node as it is now.
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		created.Status = n.status()
		_, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if latest, getErr := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); getErr == nil {
				created = latest
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("report the status of Node %s: %w", name, err)
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: nodeLeaseNamespace, Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: name, UID: created.UID,
		}}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To(int32(leaseDuration / time.Second)),
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	if _, err := cs.CoordinationV1().Leases(nodeLeaseNamespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create the Lease of Node %s: %w", name, err)
	}
	beat, stop := context.WithCancel(context.Background())
	n.stop = stop
	go n.heartbeat(beat)
	return n, nil
}

// status is what a kubelet reports of its node: Ready, its addresses and what it has.
func (n *Node) status() corev1.NodeStatus {
	now := metav1.Now()
	condition := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	var info syscall.Sysinfo_t
	_ = syscall.Sysinfo(&info)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(info.Totalram)*int64(info.Unit), resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	return corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Conditions: []corev1.NodeCondition{
			condition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "localpod runs the pods bound here as local processes"),
			condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", ""),
			condition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", ""),
			condition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", ""),
		},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.IP}, {Type: corev1.NodeHostName, Address: n.Name}},
		NodeInfo: corev1.NodeSystemInfo{
			OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
			KubeletVersion: "localpod", ContainerRuntimeVersion: "localpod://processes",
		},
	}
}

// heartbeat renews the node's Lease until ctx ends.
func (n *Node) heartbeat(ctx context.Context) {
	defer close(n.done)
	leases := n.cs.CoordinationV1().Leases(nodeLeaseNamespace)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(renewEvery):
		}
		l, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
}

// Stop ends the heartbeat and deletes the Node (its Lease goes with it, and the pod
// garbage collector deletes the pods still bound to it).
func (n *Node) Stop() {
	if n.stop == nil {
		return
	}
	n.stop()
	<-n.done
	n.stop = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = n.cs.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
}
