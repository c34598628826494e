package pginstance

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// Annotations on the Lease: what the primary in office tells whoever takes
// over. Only the holder writes them, in the same update that renews.
const (
	annotationPrefix      = "pginstance.lookout.dev/"
	annotationSyncNames   = annotationPrefix + "sync-standbys"
	annotationSyncCount   = annotationPrefix + "sync-count"
	annotationLSN         = annotationPrefix + "lsn"
	annotationSwitchover  = annotationPrefix + "switchover"
	annotationHandoverLSN = annotationPrefix + "handover-lsn"
	// annotationReleasedBy names the holder that gave the Lease up on a
	// restart: it counts as the old primary in the election.
	annotationReleasedBy = annotationPrefix + "released-by"
)

// kube is the manager's view of the API: its Lease, the pods of its
// cluster, its own pod, the config Secret.
type kube struct {
	cs      kubernetes.Interface
	ns      string
	cluster string
	pod     string
}

func (k *kube) getLease(ctx context.Context) (*coordv1.Lease, error) {
	l, err := k.cs.CoordinationV1().Leases(k.ns).Get(ctx, pgcontract.LeaseName(k.cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return l, err
}

// createLease makes this instance the first holder; it fails when the Lease
// exists, which is how only one instance of a new cluster runs initdb.
func (k *kube) createLease(ctx context.Context, dur time.Duration) (*coordv1.Lease, error) {
	now := metav1.NewMicroTime(time.Now())
	l := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: pgcontract.LeaseName(k.cluster), Namespace: k.ns,
			Labels: map[string]string{pgcontract.LabelCluster: k.cluster}},
		Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To(k.pod), LeaseDurationSeconds: ptr.To(int32(max(1, dur/time.Second))),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To(int32(0))},
	}
	return k.cs.CoordinationV1().Leases(k.ns).Create(ctx, l, metav1.CreateOptions{})
}

// updateLease writes l only if nobody changed it since it was read: the
// resourceVersion it carries is the optimistic lock.
func (k *kube) updateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	return k.cs.CoordinationV1().Leases(k.ns).Update(ctx, l, metav1.UpdateOptions{})
}

func holder(l *coordv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func leaseSync(l *coordv1.Lease) syncSet {
	if l == nil {
		return syncSet{}
	}
	return parseSyncSet(l.Annotations[annotationSyncNames], l.Annotations[annotationSyncCount])
}

func setLeaseSync(l *coordv1.Lease, s syncSet) {
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[annotationSyncNames], l.Annotations[annotationSyncCount] = s.annotation()
}

func leaseLSN(l *coordv1.Lease, key string) uint64 {
	if l == nil {
		return 0
	}
	v, _ := parseLSN(l.Annotations[key])
	return v
}

func setAnnotation(l *coordv1.Lease, k, v string) {
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	if v == "" {
		delete(l.Annotations, k)
		return
	}
	l.Annotations[k] = v
}

// pods lists the instances of the cluster: its pods with an instance label
// (a backup Job's pods carry the cluster label too, and are no peers).
func (k *kube) pods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := k.cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{
		LabelSelector: pgcontract.LabelCluster + "=" + k.cluster + "," + pgcontract.LabelInstance,
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// setRole labels the manager's own pod with its role; the Services select on
// it.
func (k *kube) setRole(ctx context.Context, role string) error {
	var value any
	if role != "" {
		value = role
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{pgcontract.LabelRole: value}}})
	_, err := k.cs.CoreV1().Pods(k.ns).Patch(ctx, k.pod, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// configWatch keeps the latest Config from the cluster's config Secret,
// read with get and watch on that one name.
type configWatch struct {
	mu      sync.Mutex
	cfg     *pgcontract.Config
	err     error
	changed chan struct{}
}

func (c *configWatch) get() (*pgcontract.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg, c.err
}

func (c *configWatch) set(s *corev1.Secret) {
	var cfg pgcontract.Config
	err := json.Unmarshal(s.Data[pgcontract.ConfigKey], &cfg)
	c.mu.Lock()
	if err != nil {
		c.err = fmt.Errorf("secret %s key %s: %w", s.Name, pgcontract.ConfigKey, err)
	} else {
		c.cfg, c.err = &cfg, nil
	}
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (k *kube) watchConfig(ctx context.Context, c *configWatch) {
	name := pgcontract.ConfigSecretName(k.cluster)
	secrets := k.cs.CoreV1().Secrets(k.ns)
	for ctx.Err() == nil {
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			c.mu.Lock()
			if c.cfg == nil {
				c.err = fmt.Errorf("read secret %s: %w", name, err)
			}
			c.mu.Unlock()
			sleep(ctx, time.Second)
			continue
		}
		c.set(s)
		w, err := secrets.Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: s.ResourceVersion,
		})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if s, ok := ev.Object.(*corev1.Secret); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				c.set(s)
			}
		}
		w.Stop()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// deleteLease deletes the Lease l, if it was not changed since.
func (k *kube) deleteLease(ctx context.Context, l *coordv1.Lease) error {
	return k.cs.CoordinationV1().Leases(k.ns).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion}})
}
