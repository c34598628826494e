package prometheus

import (
	"errors"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

func withShardRetention(when monitoringv1.WhenScaledRetentionType, period string) promOption {
	return withSpec(func(s *monitoringv1.PrometheusSpec) {
		s.ShardRetentionPolicy = &monitoringv1.ShardRetentionPolicy{WhenScaled: ptrTo(when)}
		if period != "" {
			s.ShardRetentionPolicy.Retain = &monitoringv1.RetainConfig{RetentionPeriod: monitoringv1.Duration(period)}
		}
	})
}

func TestShardRetentionOf(t *testing.T) {
	cases := []struct {
		name string
		p    *monitoringv1.Prometheus
		want ShardRetention
	}{
		{"deletes removed shards without a policy", newPrometheus(), ShardRetention{}},
		{"deletes removed shards with whenScaled Delete", newPrometheus(withShardRetention(monitoringv1.DeleteWhenScaledRetentionType, "")), ShardRetention{}},
		{"keeps them for retain.retentionPeriod", newPrometheus(withRetention("30d"), withShardRetention(monitoringv1.RetainWhenScaledRetentionType, "2h30m")),
			ShardRetention{Retain: true, Period: 150 * time.Minute}},
		{"keeps them as long as the data without a period", newPrometheus(withRetention("3d"), withShardRetention(monitoringv1.RetainWhenScaledRetentionType, "")),
			ShardRetention{Retain: true, Period: 72 * time.Hour}},
		{"keeps them for the default retention of 24h when none is set", newPrometheus(withShardRetention(monitoringv1.RetainWhenScaledRetentionType, "")),
			ShardRetention{Retain: true, Period: 24 * time.Hour}},
		{"keeps them forever when the data is kept by size only", newPrometheus(withRetentionSize("10GB"), withShardRetention(monitoringv1.RetainWhenScaledRetentionType, "")),
			ShardRetention{Retain: true, Forever: true}},
		{"keeps them for the time retention when both time and size are set", newPrometheus(withRetention("12h"), withRetentionSize("10GB"), withShardRetention(monitoringv1.RetainWhenScaledRetentionType, "")),
			ShardRetention{Retain: true, Period: 12 * time.Hour}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Validate(tc.p); err != nil {
				t.Fatalf("Validate = %v", err)
			}
			if got := ShardRetentionOf(tc.p); got != tc.want {
				t.Errorf("ShardRetentionOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestValidateShardRetention(t *testing.T) {
	cases := []struct {
		name, field string
		p           *monitoringv1.Prometheus
	}{
		{"rejects a retention period that does not parse", "spec.shardRetentionPolicy.retain.retentionPeriod",
			newPrometheus(withShardRetention(monitoringv1.RetainWhenScaledRetentionType, "2 hours"))},
		{"rejects a retention period with whenScaled Delete, which keeps nothing", "spec.shardRetentionPolicy.retain",
			newPrometheus(withShardRetention(monitoringv1.DeleteWhenScaledRetentionType, "2h"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var se *SpecError
			if err := Validate(tc.p); !errors.As(err, &se) || se.Field != tc.field {
				t.Errorf("Validate = %v, want an error naming %s", err, tc.field)
			}
		})
	}
}
