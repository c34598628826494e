package integration

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestShardsScaleUpAndDownWithoutTouchingTheRemainingShards(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, newServiceMonitor(ns, "app"))
	p := newPrometheus(ns, "sharded")
	mustCreate(t, p)
	shard := func(n int) client.ObjectKey {
		if n == 0 {
			return client.ObjectKey{Namespace: ns, Name: "prometheus-sharded"}
		}
		return client.ObjectKey{Namespace: ns, Name: "prometheus-sharded-shard-" + string(rune('0'+n))}
	}
	var first appsv1.StatefulSet
	eventually(t, "shard 0 exists", func() (bool, error) { return k8s.Get(testCtx, shard(0), &first) == nil, nil })

	update(t, p, func(p *monitoringv1.Prometheus) { p.Spec.Shards = ptr.To[int32](3) })
	eventually(t, "shards 1 and 2 exist with their SHARD and the config hashes by 3", func() (bool, error) {
		for _, n := range []int{1, 2} {
			var sts appsv1.StatefulSet
			if err := k8s.Get(testCtx, shard(n), &sts); err != nil {
				return false, nil
			}
			if sts.Spec.Selector.MatchLabels["operator.prometheus.io/shard"] != string(rune('0'+n)) {
				return false, nil
			}
		}
		cfg, err := configOf(ns, "sharded")
		return err == nil && strings.Contains(cfg, "modulus: 3"), err
	})
	var after appsv1.StatefulSet
	if err := k8s.Get(testCtx, shard(0), &after); err != nil {
		t.Fatal(err)
	}
	if after.UID != first.UID || after.Generation != first.Generation {
		t.Errorf("scaling up changed shard 0: uid %s→%s generation %d→%d", first.UID, after.UID, first.Generation, after.Generation)
	}

	update(t, p, func(p *monitoringv1.Prometheus) { p.Spec.Shards = ptr.To[int32](1) })
	eventually(t, "shards 1 and 2 are deleted and the config hashes by 1", func() (bool, error) {
		for _, n := range []int{1, 2} {
			if !apierrors.IsNotFound(k8s.Get(testCtx, shard(n), &appsv1.StatefulSet{})) {
				return false, nil
			}
		}
		cfg, err := configOf(ns, "sharded")
		return err == nil && strings.Contains(cfg, "modulus: 1"), err
	})
	if err := k8s.Get(testCtx, shard(0), &after); err != nil {
		t.Fatal(err)
	}
	if after.UID != first.UID || after.Generation != first.Generation {
		t.Errorf("scaling down changed shard 0: uid %s→%s generation %d→%d", first.UID, after.UID, first.Generation, after.Generation)
	}
}
