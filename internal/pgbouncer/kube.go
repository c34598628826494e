package pgbouncer

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/pginstance"
)

// kube is the pooler's view of the API: the cluster's Lease (who is primary)
// and the primary's pod (its address). Read-only.
type kube struct {
	cs      kubernetes.Interface
	ns      string
	cluster string
}

// primary is the instance holding the Lease and its pod's address; both
// empty while no instance holds it.
func (k *kube) primary(ctx context.Context) (name, address string, err error) {
	l, err := k.cs.CoordinationV1().Leases(k.ns).Get(ctx, pgcontract.LeaseName(k.cluster), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", "", nil
	}
	name = *l.Spec.HolderIdentity
	pods, err := k.cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{
		LabelSelector: pgcontract.LabelCluster + "=" + k.cluster + "," + pgcontract.LabelInstance,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return name, "", err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			return name, p.Status.PodIP, nil
		}
	}
	return name, "", fmt.Errorf("the primary %s has no pod with an address", name)
}

func (k *kube) watchLease(ctx context.Context, changed chan<- struct{}) {
	pginstance.WatchLease(ctx, k.cs, k.ns, k.cluster, changed)
}
