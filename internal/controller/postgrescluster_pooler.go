package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// poolerStatus fills status.proxy from the pooler's Deployment (PGO's
// status.proxy.pgBouncer); nil without spec.proxy.
func poolerStatus(ctx context.Context, r client.Reader, c *postgresv1beta1.PostgresCluster) error {
	if c.Spec.Proxy == nil || c.Spec.Proxy.PGBouncer == nil {
		c.Status.Proxy = nil
		return nil
	}
	var d appsv1.Deployment
	err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: pgrender.PoolerName(c.Name)}, &d)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.Status.Proxy = &postgresv1beta1.PostgresProxyStatus{PGBouncer: postgresv1beta1.PGBouncerPodStatus{
		ReadyReplicas: d.Status.ReadyReplicas, Replicas: d.Status.Replicas,
	}}
	return nil
}
