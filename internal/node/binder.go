package node

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// runBinder binds every unscheduled pod to the node until ctx ends: the scheduler's one
// decision when there is one node (the local control plane runs no kube-scheduler).
func runBinder(ctx context.Context, cs kubernetes.Interface, node string, log io.Writer) {
	sel := fields.OneTermEqualSelector("spec.nodeName", "").String()
	for ctx.Err() == nil {
		list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			pause(ctx, time.Second)
			continue
		}
		for i := range list.Items {
			bind(ctx, cs, &list.Items[i], node, log)
		}
		w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
		if err != nil {
			pause(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				bind(ctx, cs, pod, node, log)
			}
		}
		w.Stop()
	}
}

func bind(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, node string, log io.Writer) {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return
	}
	err := cs.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsConflict(err) && ctx.Err() == nil {
		fmt.Fprintf(log, "bind pod %s/%s to %s: %v\n", pod.Namespace, pod.Name, node, err)
	}
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// waitNodeReady waits on the Node object until its Ready condition is True.
func waitNodeReady(ctx context.Context, cs kubernetes.Interface, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := fmt.Errorf("%w: not registered yet", errNotReady)
	for {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if last = nodeReady(n); last == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(200 * time.Millisecond):
		}
	}
}
