package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/gather"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	"github.com/lookout-operator/lookout/internal/render"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// PostgresOptions are the operator's settings for PostgresClusters.
type PostgresOptions struct {
	// Image runs the instances of a cluster whose spec.image is empty.
	Image string
	// BinDirs are globs of the PostgreSQL bin directories (<...>/<major>/bin)
	// the instances' images carry: which majors are supported, and which
	// parameters each accepts, is read from them.
	BinDirs []string
	// RunAsUser is the uid (and gid, fsGroup) of the instance containers;
	// 0: PGO's 26.
	RunAsUser int64
	// Installation, when set, is used instead of reading BinDirs (tests).
	Installation *pgrender.Installation
}

// statusPollTimeout bounds one instance's answer at its status endpoint.
const statusPollTimeout = time.Second

// postgresResync is how often a cluster's status is read from its instances
// while nothing else reconciles it.
const postgresResync = 10 * time.Second

// PostgresClusterReconciler converges one PostgresCluster: gather (its
// Secrets, StatefulSets, claims, pods) → render (every object, the
// instances' config) → apply → status from the StatefulSets and what each
// instance manager reports.
type PostgresClusterReconciler struct {
	*workloadReconciler[*postgresv1beta1.PostgresCluster]
}

// postgresKind is what the PostgresCluster brings to the workload skeleton.
type postgresKind struct {
	opts         PostgresOptions
	installation pgrender.Installation
	// monitoring: the monitoring.coreos.com CRDs are installed.
	monitoring bool
	poll       *statusPoller
	// rec reports a refused or failed restore.
	rec recorder.EventRecorder
	// reader reads the manual backup Job retain keeps (the cache).
	reader client.Reader
}

func (postgresKind) name() string { return postgresv1beta1.Kind }
func (postgresKind) newObject() *postgresv1beta1.PostgresCluster {
	return &postgresv1beta1.PostgresCluster{}
}
func (postgresKind) paused(c *postgresv1beta1.PostgresCluster) bool {
	return c.Spec.Paused != nil && *c.Spec.Paused
}
func (postgresKind) resync() time.Duration { return postgresResync }

// ownsRBAC: the instance managers' Role and binding are applied without
// --manage-rbac too; without them no instance could hold the cluster's Lease.
func (postgresKind) ownsRBAC() {}

func (k postgresKind) render(ctx context.Context, g *gather.Cluster, _ Options, c *postgresv1beta1.PostgresCluster, _ *phaseTimer) (*rendered, error) {
	res, err := g.PostgresCluster(ctx, c)
	if err != nil {
		return nil, err
	}
	in := &res.Inputs
	in.Installation = k.installation
	in.Image = k.opts.Image
	in.RunAsUser = k.opts.RunAsUser
	in.Monitoring = k.monitoring
	in.Now = time.Now()
	// Used only for what does not exist yet; what exists is kept.
	if _, err := rand.Read(in.Seed[:]); err != nil {
		return nil, err
	}
	out := &rendered{refs: res.Refs}
	d, err := pgrender.Render(in)
	var se *workload.SpecError
	if errors.As(err, &se) {
		return out, &render.SpecError{Reason: se.Reason, Message: se.Message}
	}
	if err != nil {
		return out, err
	}
	out.objects = d.Objects
	return out, nil
}

func (postgresKind) ownerLabels(c *postgresv1beta1.PostgresCluster) map[string]string {
	return pgrender.SelectorLabels(c.Name)
}

// The PostgresCluster prunes these kinds in its namespace (never claims:
// data is removed by the user).
func (k postgresKind) ownedKinds() []schema.GroupVersionKind {
	kinds := []schema.GroupVersionKind{
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		appsv1.SchemeGroupVersion.WithKind("Deployment"),
		corev1.SchemeGroupVersion.WithKind("Service"),
		corev1.SchemeGroupVersion.WithKind("Secret"),
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		rbacv1.SchemeGroupVersion.WithKind("Role"),
		rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
		policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
		batchv1.SchemeGroupVersion.WithKind("CronJob"),
		batchv1.SchemeGroupVersion.WithKind("Job"),
	}
	if k.monitoring {
		kinds = append(kinds, monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PodMonitorsKind),
			monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusRuleKind))
	}
	return kinds
}

func (postgresKind) bound() []func(context.Context, client.Reader) ([]boundObject, error) { return nil }

// statefulSet and setStatus are not used: readStatus reads every instance.
func (postgresKind) statefulSet(*postgresv1beta1.PostgresCluster) string { return "" }
func (postgresKind) setStatus(*postgresv1beta1.PostgresCluster, *appsv1.StatefulSetStatus, *statusUpdate) {
}

// readStatus fills the status of c from its StatefulSets and its instances'
// status endpoints.
func (k postgresKind) readStatus(ctx context.Context, r client.Reader, c *postgresv1beta1.PostgresCluster, st *statusUpdate) error {
	inCluster := []client.ListOption{client.InNamespace(c.Namespace), client.MatchingLabels(pgrender.SelectorLabels(c.Name))}
	var stss appsv1.StatefulSetList
	if err := r.List(ctx, &stss, inCluster...); err != nil {
		return err
	}
	var pods corev1.PodList
	// The instances' pods; a backup Job's carry the cluster label too.
	if err := k.poll.live.List(ctx, &pods, append(inCluster, client.HasLabels{pgcontract.LabelInstance})...); err != nil {
		return err
	}
	obs := pgrender.Observed{Pods: pods.Items, Instances: k.poll.statuses(ctx, pods.Items)}
	for i := range stss.Items {
		if metav1.IsControlledBy(&stss.Items[i], c) {
			obs.StatefulSets = append(obs.StatefulSets, &stss.Items[i])
		}
	}
	counts := pgrender.ObservedStatus(c, obs, &c.Status)
	k.minorUpgradeStatus(c)
	if err := k.readBackupStatus(ctx, r, c, &obs); err != nil {
		return err
	}
	if err := poolerStatus(ctx, r, c); err != nil {
		return err
	}
	k.majorUpgradeCondition(c)
	available := counts.Ready
	if c.Status.Primary == "" {
		available = 0 // without a primary nothing is available for writes
	}
	for _, cond := range conditionsOf(counts.Desired, available, st) {
		status := metav1.ConditionStatus(cond.status)
		if cond.status == string(monitoringv1.ConditionDegraded) {
			status = metav1.ConditionFalse // metav1 conditions have no Degraded
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
			Type: cond.typ, Status: status, Reason: cond.reason, Message: cond.message, ObservedGeneration: c.Generation,
		})
	}
	if st.reconciled {
		c.Status.ObservedGeneration = c.Generation
	}
	return nil
}

// newPostgresKind reads what the operator can run (the PostgreSQL majors in
// opts.BinDirs and their parameters, or the lookout-postgres image's catalog
// when it finds none there) and whether the monitoring kinds are served
// (then each cluster gets a PodMonitor and a PrometheusRule).
func newPostgresKind(ctx context.Context, mgr ctrl.Manager, opts PostgresOptions) (postgresKind, error) {
	k := postgresKind{opts: opts, poll: newStatusPoller(mgr.GetAPIReader())}
	if opts.Installation != nil {
		k.installation = *opts.Installation
	} else {
		dirs := opts.BinDirs
		if len(dirs) == 0 {
			dirs = pgcontract.DefaultBinDirGlobs
		}
		inst, from, err := gather.PostgresFor(ctx, dirs...)
		if err != nil {
			return k, err
		}
		k.installation = inst
		mgr.GetLogger().Info("PostgreSQL majors the operator can run", "majors", inst.Majors(), "from", from)
	}
	_, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: monitoringv1.SchemeGroupVersion.Group, Kind: monitoringv1.PodMonitorsKind})
	switch {
	case err == nil:
		k.monitoring = true
	case !meta.IsNoMatchError(err):
		return k, err
	}
	return k, nil
}

// SetupWithManager wires the watches: the cluster, what it owns, and the
// Secrets whose content its render keeps.
func (r *PostgresClusterReconciler) SetupWithManager(mgr ctrl.Manager, k postgresKind) error {
	k.rec = r.Recorder
	k.reader = mgr.GetClient()
	r.kind = k
	b := r.controllerFor(mgr, "postgrescluster", nil).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&batchv1.CronJob{}).
		Owns(&batchv1.Job{}).
		Owns(&appsv1.Deployment{})
	return b.Complete(r)
}
