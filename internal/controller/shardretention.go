package controller

import (
	"context"
	"fmt"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// AnnotationShardRetired marks the StatefulSet of a shard that lowering spec.shards
// removed while shardRetentionPolicy.whenScaled is Retain: its value is when (RFC 3339,
// UTC). The StatefulSet is kept, its pods keep running so that their data can still be
// queried, until the retention period has passed since then. The shared configuration
// hashes targets by the new spec.shards, which never yields a retired shard's number, so
// it scrapes none of them, and its alert relabeling drops the alerts of such a number.
// Raising spec.shards again takes the StatefulSet back and
// removes the mark.
const AnnotationShardRetired = "lookout.dev/shard-retired-at"

// ReasonShardRetained is the Event reason of a removed shard's StatefulSet being kept.
const ReasonShardRetained = "ShardRetained"

// shardAction is what happens to one StatefulSet of a Prometheus.
type shardAction int

const (
	shardKeep   shardAction = iota // desired, or retained and already marked
	shardPrune                     // not desired and not retained: pruned with the rest
	shardRetire                    // just removed: kept and marked with the time
	shardAdopt                     // desired again after being retired: unmarked
)

// decideShard says what happens to a StatefulSet of a Prometheus whose shard is desired
// or not, marked retired at retiredAt ("": not marked), under pol at now, and after how
// long the decision changes by itself (0: only with the spec).
func decideShard(desired bool, retiredAt string, pol promrender.ShardRetention, now time.Time) (shardAction, time.Duration) {
	switch {
	case desired && retiredAt != "":
		return shardAdopt, 0
	case desired:
		return shardKeep, 0
	case !pol.Retain:
		return shardPrune, 0
	}
	at, err := time.Parse(time.RFC3339, retiredAt)
	if err != nil { // unmarked, or a mark someone broke: retired from now on
		if pol.Forever {
			return shardRetire, 0
		}
		return shardRetire, pol.Period
	}
	if pol.Forever {
		return shardKeep, 0
	}
	if left := at.Add(pol.Period).Sub(now); left > 0 {
		return shardKeep, left
	}
	return shardPrune, 0
}

// retainShards applies spec.shardRetentionPolicy before the prune: it marks the
// StatefulSets of removed shards the policy keeps, unmarks those whose shard is desired
// again, and returns the retired StatefulSets to keep from the prune and when the first
// of them is due (0: none is). Those whose period has passed are left to the prune.
func (k *prometheusKind) retainShards(ctx context.Context, owner client.Object, p *monitoringv1.Prometheus, objs []workload.Object) ([]client.Object, time.Duration, error) {
	desired := map[string]bool{}
	for _, o := range objs {
		if _, ok := o.(*appsv1.StatefulSet); ok {
			desired[o.GetName()] = true
		}
	}
	var list appsv1.StatefulSetList
	if err := k.c.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingLabels(ownerLabels(p))); err != nil {
		return nil, 0, fmt.Errorf("list the StatefulSets of Prometheus %s: %w", klog.KObj(p), err)
	}
	pol := promrender.ShardRetentionOf(p)
	now := k.clock()
	var keep []client.Object
	var due time.Duration
	for i := range list.Items {
		sts := &list.Items[i]
		if !metav1.IsControlledBy(sts, p) || !sts.DeletionTimestamp.IsZero() {
			continue
		}
		action, after := decideShard(desired[sts.Name], sts.Annotations[AnnotationShardRetired], pol, now)
		switch action {
		case shardRetire:
			// Rounded up to the second the mark holds: the period may run a little
			// long, never short.
			at := now.UTC().Truncate(time.Second)
			if at.Before(now) {
				at = at.Add(time.Second)
			}
			if err := k.markRetired(ctx, sts, at.Format(time.RFC3339)); err != nil {
				return nil, 0, err
			}
			k.rec.Eventf(owner, sts, corev1.EventTypeNormal, ReasonShardRetained, "Reconcile",
				"Kept StatefulSet %s of a removed shard (shardRetentionPolicy.whenScaled: Retain)%s", sts.Name, retainedFor(pol))
		case shardAdopt:
			if err := k.markRetired(ctx, sts, ""); err != nil {
				return nil, 0, err
			}
			continue
		}
		if action == shardKeep || action == shardRetire {
			if !desired[sts.Name] {
				sts.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
				keep = append(keep, sts)
			}
			if after > 0 && (due == 0 || after < due) {
				due = after
			}
		}
	}
	if len(keep) > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Kept the StatefulSets of removed shards", "prometheus", klog.KObj(p), "count", len(keep), "recheck", due)
	}
	return keep, due, nil
}

func retainedFor(pol promrender.ShardRetention) string {
	if pol.Forever {
		return " until it is deleted: the data is kept by size only"
	}
	return " for " + pol.Period.String()
}

// markRetired sets the retirement mark of sts to at, or removes it when at is "". A merge
// patch of the one annotation: a cache a step behind needs no conflict and retry.
func (k *prometheusKind) markRetired(ctx context.Context, sts *appsv1.StatefulSet, at string) error {
	patched := sts.DeepCopy()
	if at == "" {
		delete(patched.Annotations, AnnotationShardRetired)
	} else {
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[AnnotationShardRetired] = at
	}
	if err := k.c.Patch(ctx, patched, client.MergeFrom(sts)); err != nil {
		return fmt.Errorf("mark StatefulSet %s retired (%q): %w", klog.KObj(sts), at, err)
	}
	*sts = *patched
	return nil
}

// clock is the kind's time; tests set now.
func (k *prometheusKind) clock() time.Time {
	if k.now != nil {
		return k.now()
	}
	return time.Now()
}
