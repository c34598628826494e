package localpod

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/testhost"
)

// A StatefulSet's pod, made by kube-controller-manager and run here, is what a kubelet
// would make of it in the API: bound to the node, Running and Ready with its network
// namespace's address, the StatefulSet ready; when its process ends it is reported
// Failed (and the StatefulSet controller replaces it), and a pod stopped by its runner is
// deleted.
func TestAStatefulSetsPodRunsOnTheNodeAsAPodOfTheAPI(t *testing.T) {
	self := selfAsRoot(t, "mounts and network namespaces")
	// Not bounded: the first run may build the control plane's binaries.
	cp, err := controlplane.Start(context.Background(), controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig)
	network, err := testhost.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	defer network.Close()
	node, err := RegisterNode(ctx, cs, "local", network.HostIP)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Stop()

	base := t.TempDir()
	spec := helperPod(filepath.Join(base, "mnt", "data"))
	spec.Containers[0].Image = "helper:local" // run as /bin/helper, the test binary
	spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8081}}
	spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/info", Port: intstr.FromString("http")}}}
	labels := map[string]string{"app": "web"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: "web",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template:    corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	if _, err := cs.AppsV1().StatefulSets("default").Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run := func(dir string) (*Pod, *testhost.Host) {
		t.Helper()
		h, err := network.NewHost()
		if err != nil {
			t.Fatal(err)
		}
		p, err := Start(ctx, Options{
			Pod: spec, PodName: "web-0", PodNamespace: "default", Node: node,
			Images: map[string]string{"/bin/helper": self}, Client: noObjects{},
			NetNS: h.Namespace, PodIP: h.IP, Dir: filepath.Join(base, dir), Self: self,
		})
		if err != nil {
			h.Close()
			t.Fatal(err)
		}
		return p, h
	}

	p, h := run("first")
	defer h.Close()
	defer p.Stop()
	first := waitRunningAndReady(ctx, t, cs, node.Name, h.IP)
	waitReadyReplicas(ctx, t, cs, 1)

	// The process ends (killed, as by the OOM killer): nothing restarts it here, and the
	// pod is reported Failed before the StatefulSet controller replaces it.
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web-0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := syscall.Kill(-p.Containers["helper"].Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFailed(ctx, t, w.ResultChan(), first)
	waitReadyReplicas(ctx, t, cs, 0)

	// The StatefulSet controller's replacement runs once someone runs it; its runner's
	// Stop deletes it.
	p2, h2 := run("second")
	defer h2.Close()
	second := waitRunningAndReady(ctx, t, cs, node.Name, h2.IP)
	if second == first {
		t.Fatalf("the replacement pod has the UID of the first, %s", first)
	}
	waitReadyReplicas(ctx, t, cs, 1)
	p2.Stop()
	eventually(ctx, t, "pod web-0 deleted once its runner stopped it", func() (bool, string) {
		pod, err := cs.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && pod.UID != second) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("still there: phase %s, deletion %v", pod.Status.Phase, pod.DeletionTimestamp)
	})
}

// waitFailed waits on events of pod web-0 until the one with uid is Failed, its
// container terminated by SIGKILL; the pod's deletion before that fails the test.
func waitFailed(ctx context.Context, t *testing.T, events <-chan watch.Event, uid types.UID) {
	t.Helper()
	timeout := time.After(time.Minute)
	last := "no event"
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the watch of pod web-0 ended; last: %s", last)
			}
			pod, isPod := ev.Object.(*corev1.Pod)
			if !isPod || pod.UID != uid {
				continue
			}
			cst := pod.Status.ContainerStatuses
			if pod.Status.Phase == corev1.PodFailed && len(cst) == 1 && cst[0].State.Terminated != nil &&
				cst[0].State.Terminated.ExitCode == 128+int32(syscall.SIGKILL) && !cst[0].Ready {
				return
			}
			if ev.Type == watch.Deleted {
				t.Fatalf("pod web-0 deleted without being reported Failed; last: %s", last)
			}
			last = fmt.Sprintf("%s: phase %s, containers %+v", ev.Type, pod.Status.Phase, cst)
		case <-timeout:
			t.Fatalf("pod web-0 not reported Failed within a minute after its process was killed; last: %s", last)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
}

// waitRunningAndReady waits until pod default/web-0 runs on node, Ready, with ip, and
// returns its UID.
func waitRunningAndReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, node, ip string) types.UID {
	t.Helper()
	var uid types.UID
	eventually(ctx, t, "pod web-0 Running and Ready on node "+node+" with IP "+ip, func() (bool, string) {
		pod, err := cs.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		uid = pod.UID
		ready := false
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		cst := pod.Status.ContainerStatuses
		ok := pod.Spec.NodeName == node && pod.Status.Phase == corev1.PodRunning && ready &&
			pod.Status.PodIP == ip && pod.Status.HostIP != "" &&
			len(cst) == 1 && cst[0].Ready && cst[0].State.Running != nil
		return ok, fmt.Sprintf("node %q, phase %s, ready %v, pod IP %q, host IP %q, containers %+v",
			pod.Spec.NodeName, pod.Status.Phase, ready, pod.Status.PodIP, pod.Status.HostIP, cst)
	})
	return uid
}

// waitReadyReplicas waits until StatefulSet default/web counts n ready and available
// replicas (kube-controller-manager's StatefulSet controller counts them from the pods).
func waitReadyReplicas(ctx context.Context, t *testing.T, cs kubernetes.Interface, n int32) {
	t.Helper()
	eventually(ctx, t, fmt.Sprintf("StatefulSet web with %d ready replicas", n), func() (bool, string) {
		sts, err := cs.AppsV1().StatefulSets("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := sts.Status
		return s.ReadyReplicas == n && s.AvailableReplicas == n,
			fmt.Sprintf("replicas %d, ready %d, available %d", s.Replicas, s.ReadyReplicas, s.AvailableReplicas)
	})
}

// eventually polls cond until it holds, failing with its last word after a minute.
func eventually(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not within a minute; last: %s", what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
