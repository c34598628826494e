package controller

import (
	"context"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lookout-operator/lookout/internal/render/workload"
	"github.com/lookout-operator/lookout/internal/scheme"
)

func TestRetainShards(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	retain := &monitoringv1.ShardRetentionPolicy{WhenScaled: ptr.To(monitoringv1.RetainWhenScaledRetentionType)}
	retainFor := func(period string) *monitoringv1.ShardRetentionPolicy {
		return &monitoringv1.ShardRetentionPolicy{WhenScaled: retain.WhenScaled, Retain: &monitoringv1.RetainConfig{RetentionPeriod: monitoringv1.Duration(period)}}
	}
	ago := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339) }
	cases := []struct {
		name   string
		policy *monitoringv1.ShardRetentionPolicy
		shards int32  // spec.shards: shard 1 exists and is removed when this is 1
		mark   string // shard 1's retirement mark before the reconcile
		size   string // spec.retentionSize, spec.retention being unset
		// wantKept: shard 1 is kept from the prune; wantMark: its mark after; wantDue: the requeue.
		wantKept bool
		wantMark string
		wantDue  time.Duration
	}{
		{name: "prunes a removed shard under Delete", shards: 1},
		{name: "prunes a removed shard without a policy even if it was marked", shards: 1, mark: ago(time.Minute)},
		{name: "keeps a removed shard under Retain without a period as long as the data, from now", policy: retain, shards: 1,
			wantKept: true, wantMark: ago(0), wantDue: 24 * time.Hour},
		{name: "keeps a removed shard for its period and looks again when it ends", policy: retainFor("2h"), shards: 1, mark: ago(30 * time.Minute),
			wantKept: true, wantMark: ago(30 * time.Minute), wantDue: 90 * time.Minute},
		{name: "keeps a removed shard forever, without looking again, when the data is kept by size only", policy: retain, shards: 1, size: "10GB", mark: ago(1000 * time.Hour),
			wantKept: true, wantMark: ago(1000 * time.Hour)},
		{name: "prunes a retained shard once its period has passed", policy: retainFor("2h"), shards: 1, mark: ago(2 * time.Hour)},
		{name: "marks again a retained shard whose mark does not parse", policy: retainFor("2h"), shards: 1, mark: "yesterday",
			wantKept: true, wantMark: ago(0), wantDue: 2 * time.Hour},
		{name: "takes a retained shard back and unmarks it when shards are raised again", policy: retainFor("2h"), shards: 2, mark: ago(time.Hour)},
		{name: "leaves a desired shard unmarked", policy: retainFor("2h"), shards: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &monitoringv1.Prometheus{
				ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "main", UID: "p-uid"},
				Spec:       monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{Shards: ptr.To(tc.shards)}, ShardRetentionPolicy: tc.policy},
			}
			p.Spec.RetentionSize = monitoringv1.ByteSize(tc.size)
			sts := func(name, mark string) *appsv1.StatefulSet {
				s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: name, Labels: ownerLabels(p),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", Name: "main", UID: "p-uid", Controller: ptr.To(true)}}}}
				if mark != "" {
					s.Annotations = map[string]string{AnnotationShardRetired: mark}
				}
				return s
			}
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(sts("prometheus-main", ""), sts("prometheus-main-shard-1", tc.mark)).Build()
			k := &prometheusKind{c: c, rec: &eventLog{}, now: func() time.Time { return now }}
			desired := []workload.Object{sts("prometheus-main", "")}
			if tc.shards == 2 {
				desired = append(desired, sts("prometheus-main-shard-1", ""))
			}

			kept, due, err := k.retainShards(context.Background(), p, p, desired)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(kept) == 1 && kept[0].GetName() == "prometheus-main-shard-1"; got != tc.wantKept || len(kept) > 1 {
				t.Errorf("kept %v, want shard 1 kept: %v", kept, tc.wantKept)
			}
			if due != tc.wantDue {
				t.Errorf("requeue after %v, want %v", due, tc.wantDue)
			}
			var got appsv1.StatefulSet
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: "mon", Name: "prometheus-main-shard-1"}, &got); err != nil {
				t.Fatal(err)
			}
			// A removed shard that is not kept is the prune's: its mark stays as it was.
			wantMark := tc.wantMark
			if tc.shards == 1 && !tc.wantKept {
				wantMark = tc.mark
			}
			if m := got.Annotations[AnnotationShardRetired]; m != wantMark {
				t.Errorf("mark %q, want %q", m, wantMark)
			}
		})
	}
}
