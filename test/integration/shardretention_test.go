package integration

import (
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/controller"
)

func TestRetainedShardStaysAfterScaleDownComesBackWhenRaisedAndGoesAfterItsPeriod(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, newServiceMonitor(ns, "app"))
	p := newPrometheus(ns, "kept", func(p *monitoringv1.Prometheus) {
		p.Spec.Shards = ptr.To[int32](2)
		p.Spec.ShardRetentionPolicy = &monitoringv1.ShardRetentionPolicy{
			WhenScaled: ptr.To(monitoringv1.RetainWhenScaledRetentionType),
			Retain:     &monitoringv1.RetainConfig{RetentionPeriod: "1h"},
		}
	})
	mustCreate(t, p)
	shard1 := client.ObjectKey{Namespace: ns, Name: "prometheus-kept-shard-1"}
	var first appsv1.StatefulSet
	eventually(t, "shard 1 exists", func() (bool, error) { return k8s.Get(testCtx, shard1, &first) == nil, nil })

	// Scaled down: shard 1 stays, marked, while the config hashes by 1 so it scrapes nothing.
	update(t, p, func(p *monitoringv1.Prometheus) { p.Spec.Shards = ptr.To[int32](1) })
	var kept appsv1.StatefulSet
	eventually(t, "shard 1 is marked retired and the config hashes by 1", func() (bool, error) {
		if err := k8s.Get(testCtx, shard1, &kept); err != nil {
			return false, err
		}
		cfg, err := configOf(ns, "kept")
		return kept.Annotations[controller.AnnotationShardRetired] != "" && err == nil && strings.Contains(cfg, "modulus: 1"), err
	})
	if kept.UID != first.UID || !kept.DeletionTimestamp.IsZero() {
		t.Fatalf("the retained shard was replaced or is being deleted: uid %s→%s, deletion %v", first.UID, kept.UID, kept.DeletionTimestamp)
	}
	eventually(t, "Prometheus is reconciled with a shard retained", func() (bool, error) {
		var got monitoringv1.Prometheus
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), &got); err != nil {
			return false, err
		}
		c := condition(&got, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == got.Generation, nil
	})
	if err := k8s.Get(testCtx, shard1, &kept); err != nil || kept.UID != first.UID {
		t.Fatalf("the retained shard is gone within its hour: %v", err)
	}

	// Raised again: the same StatefulSet is taken back and unmarked.
	update(t, p, func(p *monitoringv1.Prometheus) { p.Spec.Shards = ptr.To[int32](2) })
	eventually(t, "shard 1 is unmarked and the config hashes by 2", func() (bool, error) {
		if err := k8s.Get(testCtx, shard1, &kept); err != nil {
			return false, err
		}
		cfg, err := configOf(ns, "kept")
		_, marked := kept.Annotations[controller.AnnotationShardRetired]
		return !marked && err == nil && strings.Contains(cfg, "modulus: 2"), err
	})
	if kept.UID != first.UID {
		t.Errorf("raising shards again replaced the retained StatefulSet: uid %s→%s", first.UID, kept.UID)
	}

	// Scaled down with a short period: kept, then deleted once the period has passed,
	// without any other change to bring the Prometheus back into the queue.
	update(t, p, func(p *monitoringv1.Prometheus) {
		p.Spec.Shards = ptr.To[int32](1)
		p.Spec.ShardRetentionPolicy.Retain.RetentionPeriod = "2s"
	})
	start := time.Now()
	eventually(t, "shard 1 is deleted after its 2s", func() (bool, error) {
		err := k8s.Get(testCtx, shard1, &kept)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && !kept.DeletionTimestamp.IsZero(), client.IgnoreNotFound(err)
	})
	took := time.Since(start)
	if took < 2*time.Second {
		t.Errorf("shard 1 was deleted %v after the scale-down, before its 2s period", took)
	}
	t.Logf("shard 1 was deleted %v after the scale-down with a 2s period", took.Round(10*time.Millisecond))
	var shard0 appsv1.StatefulSet
	if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-kept"}, &shard0); err != nil {
		t.Errorf("shard 0: %v", err)
	}
}
