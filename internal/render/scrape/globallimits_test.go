package scrape

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// The enforced limits hold for every job, additional ones included: global carries the
// smaller of the two values, or the enforced one alone, as with the existing operator.
func TestGlobalLimitsAreCappedByTheEnforcedOnes(t *testing.T) {
	res, err := Generate(withAdditional(newInput(newPrometheus(withPromSpec(func(s *monitoringv1.PrometheusSpec) {
		s.SampleLimit, s.EnforcedSampleLimit = ptr(int64(10000)), ptr(int64(5000))
		s.TargetLimit, s.EnforcedTargetLimit = ptr(int64(10)), ptr(int64(50))
		s.EnforcedLabelLimit = ptr(int64(30))
		s.EnforcedBodySizeLimit = "2MiB"
	})), nil), additionalNodeExporter))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	cfg := mustLoad(t, res.Config())
	g := cfg.GlobalConfig
	if g.SampleLimit != 5000 || g.TargetLimit != 10 || g.LabelLimit != 30 || g.BodySizeLimit != 2<<20 {
		t.Errorf("global sample_limit %d (want 5000), target_limit %d (want 10), label_limit %d (want 30), body_size_limit %d (want 2MiB)",
			g.SampleLimit, g.TargetLimit, g.LabelLimit, g.BodySizeLimit)
	}
	if ne := cfg.ScrapeConfigs[0]; ne.SampleLimit != 5000 || ne.LabelLimit != 30 {
		t.Errorf("additional job %s: sample_limit %d, label_limit %d, want the enforced 5000 and 30", ne.JobName, ne.SampleLimit, ne.LabelLimit)
	}
}
