package prometheus

import (
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// ShardRetention is what spec.shardRetentionPolicy asks for the StatefulSets of the
// shards that lowering spec.shards removes.
type ShardRetention struct {
	// Retain keeps them (whenScaled: Retain); false: they are deleted at once (Delete, the default).
	Retain bool
	// Forever keeps them until someone deletes them: Retain without retain.retentionPeriod on
	// a Prometheus whose data is kept by size only, as the API documents.
	Forever bool
	// Period is how long they are kept after their shard was removed, when not Forever:
	// retain.retentionPeriod, else the retention of the data itself (spec.retention, 24h
	// when neither retention nor retentionSize is set).
	Period time.Duration
}

// ShardRetentionOf resolves spec.shardRetentionPolicy. The durations were checked by
// Validate (validateShardRetention); one that does not parse counts as zero.
func ShardRetentionOf(p *monitoringv1.Prometheus) ShardRetention {
	pol := p.Spec.ShardRetentionPolicy
	if pol == nil || pol.WhenScaled == nil || *pol.WhenScaled != monitoringv1.RetainWhenScaledRetentionType {
		return ShardRetention{}
	}
	period := string(p.Spec.Retention)
	switch {
	case pol.Retain != nil:
		period = string(pol.Retain.RetentionPeriod)
	case period == "" && p.Spec.RetentionSize != "":
		return ShardRetention{Retain: true, Forever: true}
	case period == "":
		period = defaultRetention
	}
	ms, _ := parseDuration(period)
	return ShardRetention{Retain: true, Period: time.Duration(ms) * time.Millisecond}
}

func validateShardRetention(p *monitoringv1.Prometheus) *SpecError {
	pol := p.Spec.ShardRetentionPolicy
	if pol == nil || pol.Retain == nil {
		return nil
	}
	if pol.WhenScaled == nil || *pol.WhenScaled != monitoringv1.RetainWhenScaledRetentionType {
		return invalid("spec.shardRetentionPolicy.retain", "it applies to whenScaled: Retain only, and whenScaled is Delete")
	}
	if _, err := parseDuration(string(pol.Retain.RetentionPeriod)); err != nil {
		return invalid("spec.shardRetentionPolicy.retain.retentionPeriod", "%v", err)
	}
	return nil
}
