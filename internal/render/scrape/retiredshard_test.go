package scrape

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
)

// A shard kept after a scale-down runs the shared config with its own number, which the
// new modulus never yields: the remaining shards own every target between them, and the
// kept shards none, for the generated jobs and the additional ones alike.
func TestRetainedShardsScrapeNoTargetTheRemainingShardsOwn(t *testing.T) {
	const static = "- job_name: static\n  static_configs:\n  - targets: ['10.0.0.1:9100']\n"
	for _, shards := range []int32{1, 2} {
		t.Run(fmt.Sprintf("%d shards left of 4", shards), func(t *testing.T) {
			p := newPrometheus(withShards(shards), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
				s.ShardRetentionPolicy = &monitoringv1.ShardRetentionPolicy{WhenScaled: ptr(monitoringv1.RetainWhenScaledRetentionType)}
			}))
			res, err := Generate(withAdditional(newInput(p, monitors(newServiceMonitor("default", "app"))), static))
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			owners := map[string][]int{} // job/address → the shards that keep it
			for shard := range 4 {
				cfg := mustLoad(t, []byte(strings.ReplaceAll(string(res.Config()), "$(SHARD)", strconv.Itoa(shard))))
				for _, job := range cfg.ScrapeConfigs {
					// From the sharding rules on: the discovery relabelings before them need
					// labels that only a real discovery gives.
					rules := job.RelabelConfigs
					for i, r := range rules {
						if r.Action == relabel.HashMod {
							rules = rules[i:]
							break
						}
					}
					if len(rules) == 0 || rules[0].Action != relabel.HashMod {
						t.Fatalf("job %s has no sharding rules", job.JobName)
					}
					for n := range 50 {
						addr := fmt.Sprintf("10.1.%d.%d:8080", n/10, n)
						if relabel.ProcessBuilder(labels.NewBuilder(labels.FromStrings("__address__", addr)), rules...) {
							owners[job.JobName+"/"+addr] = append(owners[job.JobName+"/"+addr], shard)
						}
					}
				}
			}
			if len(owners) != 2*50 {
				t.Fatalf("%d of the 100 targets of the 2 jobs are scraped", len(owners))
			}
			for target, by := range owners {
				if len(by) != 1 || by[0] >= int(shards) {
					t.Errorf("%s is scraped by shards %v, want exactly one of the %d remaining", target, by, shards)
				}
			}
		})
	}
}

// A kept shard's rules still run, on data no one scrapes any more: its alerts are dropped
// by the alert relabeling, the remaining shards' pass unchanged.
func TestRetainedShardsSendNoAlerts(t *testing.T) {
	p := newPrometheus(withShards(2), withAlertmanagers(alertmanagerEndpoints("alertmanager-main", "web")), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
		s.ShardRetentionPolicy = &monitoringv1.ShardRetentionPolicy{WhenScaled: ptr(monitoringv1.RetainWhenScaledRetentionType)}
	}))
	res, err := Generate(newInput(p, nil))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	alert := labels.FromStrings("alertname", "TargetMissing", "severity", "page", "prometheus_replica", "prometheus-main-0")
	want := labels.FromStrings("alertname", "TargetMissing", "severity", "page")
	for shard := range 4 {
		cfg := mustLoad(t, []byte(strings.ReplaceAll(string(res.Config()), "$(SHARD)", strconv.Itoa(shard))))
		b := labels.NewBuilder(alert)
		kept := relabel.ProcessBuilder(b, cfg.AlertingConfig.AlertRelabelConfigs...)
		switch {
		case shard < 2 && !kept:
			t.Errorf("shard %d (current) drops its alert", shard)
		case shard < 2 && !labels.Equal(b.Labels(), want):
			t.Errorf("shard %d sends %s, want %s", shard, b.Labels(), want)
		case shard >= 2 && kept:
			t.Errorf("shard %d (kept after the scale-down) sends %s", shard, b.Labels())
		}
	}

	// Without Retain no shard outlives a scale-down: nothing is added.
	p.Spec.ShardRetentionPolicy = nil
	res, err = Generate(newInput(p, nil))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if strings.Contains(string(res.Config()), retiredShardLabel) {
		t.Errorf("the alert relabeling names %s without Retain", retiredShardLabel)
	}
}
