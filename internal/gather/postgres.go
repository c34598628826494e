package gather

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// PostgresResult is what a PostgresCluster's render reads from the cluster,
// and its pods for the status.
type PostgresResult struct {
	Inputs pgrender.Inputs
	// Pods are the cluster's instance pods.
	Pods []corev1.Pod
	// Refs are "Secret/<namespace>/<name>" of the generated Secrets whose
	// content the render keeps: one changing or going must reconcile.
	Refs []string
}

// PostgresCluster gathers the inputs of c: its Secrets (read live by name:
// the cache holds Secrets' metadata only), StatefulSets (cache), claims and
// pods (live: neither is cached). The caller fills in the operator's part of
// the inputs (installation, image, seed, clock).
func (g *Cluster) PostgresCluster(ctx context.Context, c *postgresv1beta1.PostgresCluster) (*PostgresResult, error) {
	res := &PostgresResult{Inputs: pgrender.Inputs{Cluster: c}}
	names := []string{
		pgrender.ClusterCASecretName(c.Name), pgrender.ClusterCertSecretName(c.Name), pgrender.ReplicationSecretName(c.Name),
	}
	for _, u := range pgrender.Users(c) {
		names = append(names, pgrender.UserSecretName(c.Name, u.Name))
	}
	if c.Spec.Proxy != nil {
		// The pooler's token and certificate are kept too.
		names = append(names, pgrender.PoolerName(c.Name))
	}
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = c.Namespace + "/" + n
		res.Refs = append(res.Refs, "Secret/"+c.Namespace+"/"+n)
	}
	secrets, err := readLive[corev1.Secret](ctx, g.Live, keys)
	if err != nil {
		return nil, err
	}
	res.Inputs.Secrets = make(map[string]*corev1.Secret, len(secrets))
	for _, s := range secrets {
		// Only what the cluster controls counts: a Secret of the same name
		// someone else wrote is not Lookout's to read passwords from.
		if s != nil && metav1.IsControlledBy(s, c) {
			res.Inputs.Secrets[s.Name] = s
		}
	}

	inCluster := []client.ListOption{client.InNamespace(c.Namespace), client.MatchingLabels{pgcontract.LabelCluster: c.Name}}
	var stss appsv1.StatefulSetList
	if err := g.Cache.List(ctx, &stss, inCluster...); err != nil {
		return nil, fmt.Errorf("list the StatefulSets of PostgresCluster %s: %w", klog.KObj(c), err)
	}
	for i := range stss.Items {
		if metav1.IsControlledBy(&stss.Items[i], c) {
			res.Inputs.StatefulSets = append(res.Inputs.StatefulSets, &stss.Items[i])
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := g.Live.List(ctx, &pvcs, inCluster...); err != nil {
		return nil, fmt.Errorf("list the claims of PostgresCluster %s: %w", klog.KObj(c), err)
	}
	for i := range pvcs.Items {
		res.Inputs.Claims = append(res.Inputs.Claims, &pvcs.Items[i])
	}
	var pods corev1.PodList
	if err := g.Live.List(ctx, &pods, inCluster...); err != nil {
		return nil, fmt.Errorf("list the pods of PostgresCluster %s: %w", klog.KObj(c), err)
	}
	res.Pods = pods.Items
	if err := g.postgresDataSource(ctx, c, &res.Inputs); err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		if p.Labels[pgcontract.LabelRole] == pgcontract.RolePrimary && p.DeletionTimestamp.IsZero() {
			res.Inputs.Primary = p.Labels[pgcontract.LabelInstance]
		}
	}
	return res, nil
}

// postgresDataSource reads the cluster spec.dataSource.postgresCluster
// restores from, until the cluster's data is initialized.
func (g *Cluster) postgresDataSource(ctx context.Context, c *postgresv1beta1.PostgresCluster, in *pgrender.Inputs) error {
	d := c.Spec.DataSource
	if d == nil || d.PostgresCluster == nil || d.PostgresCluster.ClusterName == "" || pgrender.DataInitialized(c) {
		return nil
	}
	var src postgresv1beta1.PostgresCluster
	err := g.Cache.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: d.PostgresCluster.ClusterName}, &src)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read the data source of PostgresCluster %s: %w", klog.KObj(c), err)
	}
	in.DataSource = &src
	return nil
}
