package render

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/prometheus/config"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/render/prometheus"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func newAgent(mode monitoringv1alpha1.PrometheusAgentMode, opts ...func(*monitoringv1alpha1.PrometheusAgentSpec)) *monitoringv1alpha1.PrometheusAgent {
	a := &monitoringv1alpha1.PrometheusAgent{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "edge", UID: "agent-uid"}}
	if mode != "" {
		a.Spec.Mode = ptr.To(mode)
	}
	a.Spec.PodMonitorSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "edge"}}
	a.Spec.ExternalLabels = map[string]string{"cluster": "edge-1"}
	a.Spec.RemoteWrite = []monitoringv1.RemoteWriteSpec{{URL: "http://central.monitoring.svc:9090/api/v1/write"}}
	for _, o := range opts {
		o(&a.Spec)
	}
	return a
}

func agentInputs() Inputs {
	pm := &monitoringv1.PodMonitor{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "app", UID: "pm-uid", Generation: 1},
		Spec: monitoringv1.PodMonitorSpec{PodMetricsEndpoints: []monitoringv1.PodMetricsEndpoint{{Port: ptr.To("metrics")}}}}
	return Inputs{PodMonitors: []*monitoringv1.PodMonitor{pm}, ReloaderImage: "lookout-reloader:test"}
}

// loadAgentConfig loads cfg as Prometheus does with --agent: its loader refuses rule_files,
// alerting and remote_read there.
func loadAgentConfig(t *testing.T, cfg []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prometheus.yaml")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.LoadFile(path, true, nil); err != nil {
		t.Fatalf("Prometheus in agent mode refuses the config: %v\n%s", err, cfg)
	}
}

func TestAgentGolden(t *testing.T) {
	cases := []struct {
		name  string
		agent *monitoringv1alpha1.PrometheusAgent
	}{
		{"statefulset", newAgent("", func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.ServiceMonitorSelector = &metav1.LabelSelector{}
			s.Shards = ptr.To[int32](2)
		})},
		{"daemonset", newAgent(monitoringv1alpha1.DaemonSetPrometheusAgentMode)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := PrometheusAgent(tc.agent, agentInputs())
			if err != nil {
				t.Fatal(err)
			}
			loadAgentConfig(t, d.Config())
			var objs bytes.Buffer
			for i, o := range d.Objects {
				if i > 0 {
					objs.WriteString("---\n")
				}
				b, err := yaml.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				objs.Write(b)
			}
			for file, got := range map[string][]byte{tc.name + ".objects.golden.yaml": objs.Bytes(), tc.name + ".prometheus.golden.yaml": d.Config()} {
				path := filepath.Join("testdata", "agent", file)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("read golden file (run with -update to create it): %v", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs (run with -update to accept); got:\n%s", path, got)
				}
			}
		})
	}
}

func TestAnAgentHasItsOwnNamesLabelsAndOwnerAndNoRules(t *testing.T) {
	d, err := PrometheusAgent(newAgent(""), agentInputs())
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(d.Config())
	for _, absent := range []string{"rule_files", "alerting"} {
		if strings.Contains(cfg, absent) {
			t.Errorf("the agent's config has %s:\n%s", absent, cfg)
		}
	}
	names := map[string]bool{}
	for _, o := range d.Objects {
		names[o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName()] = true
		for _, ref := range o.GetOwnerReferences() {
			if ref.Kind != "PrometheusAgent" || ref.APIVersion != "monitoring.coreos.com/v1alpha1" || ref.UID != "agent-uid" {
				t.Errorf("%s %s: owner reference %+v, want the PrometheusAgent", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), ref)
			}
		}
		if o.GetLabels()[prometheus.LabelPrometheus] != "" {
			t.Errorf("%s carries the Prometheus owner label: pruning a Prometheus of the same name would take it", o.GetName())
		}
		if cm, ok := o.(*corev1.ConfigMap); ok {
			t.Errorf("an agent has no rule ConfigMaps, got %s", cm.Name)
		}
		if sts, ok := o.(*appsv1.StatefulSet); ok {
			want := map[string]string{"app.kubernetes.io/name": "prometheus-agent", "operator.prometheus.io/name": "edge",
				"app.kubernetes.io/instance": "edge", "app.kubernetes.io/managed-by": "prometheus-operator", "operator.prometheus.io/shard": "0"}
			if !maps.Equal(sts.Spec.Selector.MatchLabels, want) {
				t.Errorf("selector = %v, want %v", sts.Spec.Selector.MatchLabels, want)
			}
			if sts.Spec.ServiceName != "prometheus-agent-operated" {
				t.Errorf("serviceName = %q", sts.Spec.ServiceName)
			}
			args := strings.Join(sts.Spec.Template.Spec.Containers[0].Args, " ")
			if !strings.Contains(args, "--agent") || !strings.Contains(args, "--storage.agent.path=/prometheus") || strings.Contains(args, "tsdb") {
				t.Errorf("args = %s, want agent mode and its WAL path, no TSDB flag", args)
			}
			if len(sts.Spec.Template.Spec.Volumes) == 0 || strings.Contains(args+volumeNames(sts.Spec.Template.Spec.Volumes), "rules") {
				t.Errorf("the agent's pod mounts rule volumes: %v", sts.Spec.Template.Spec.Volumes)
			}
		}
	}
	for _, n := range []string{"StatefulSet/prom-agent-edge", "Secret/prom-agent-edge", "Secret/prom-agent-edge-web-config", "Service/prometheus-agent-operated"} {
		if !names[n] {
			t.Errorf("no %s among %v", n, names)
		}
	}
	// Without spec.serviceAccountName the agent runs as the namespace's default account, as
	// with the existing operator: none is generated.
	if names["ServiceAccount/prom-agent-edge"] {
		t.Errorf("a ServiceAccount prom-agent-edge is generated for an agent without serviceAccountName")
	}
}

func volumeNames(vols []corev1.Volume) string {
	var b strings.Builder
	for _, v := range vols {
		b.WriteString(v.Name + " ")
	}
	return b.String()
}

func TestAnAgentRefusesWhatItDoesNotHonourByName(t *testing.T) {
	cases := []struct {
		name  string
		agent *monitoringv1alpha1.PrometheusAgent
		field string
	}{
		{"refuses replicas in DaemonSet mode", newAgent(monitoringv1alpha1.DaemonSetPrometheusAgentMode, func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.Replicas = ptr.To[int32](2) }), "spec.replicas"},
		{"refuses ServiceMonitors in DaemonSet mode", newAgent(monitoringv1alpha1.DaemonSetPrometheusAgentMode, func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.ServiceMonitorSelector = &metav1.LabelSelector{} }), "spec.serviceMonitorSelector"},
		{"refuses an unknown mode", newAgent("Deployment"), "spec.mode"},
		{"refuses a Prometheus before agent mode", newAgent("", func(s *monitoringv1alpha1.PrometheusAgentSpec) { s.Version = "v2.31.1" }), "spec.version"},
		{"refuses out-of-order samples before the agent took them", newAgent("", func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.Version = "v2.53.2"
			s.TSDB = &monitoringv1.TSDBSpec{OutOfOrderTimeWindow: ptr.To[monitoringv1.Duration]("10m")}
		}), "spec.tsdb.outOfOrderTimeWindow"},
		{"refuses a sharding strategy in DaemonSet mode", newAgent(monitoringv1alpha1.DaemonSetPrometheusAgentMode, func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.ShardingStrategy = &monitoringv1.ShardingStrategy{}
		}), "spec.shardingStrategy"},
		{"refuses what the checks shared with Prometheus refuse", newAgent("", func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			s.ShardingStrategy = &monitoringv1.ShardingStrategy{Mode: ptr.To(monitoringv1.TopologyShardingStrategyMode)}
		}), "spec.shardingStrategy.mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PrometheusAgent(tc.agent, agentInputs())
			se, ok := err.(*SpecError)
			if !ok || !strings.Contains(se.Message, tc.field) {
				t.Fatalf("err = %v, want a SpecError naming %s", err, tc.field)
			}
		})
	}
}

// agentWorkload is the agent's StatefulSet or DaemonSet: its labels and pod template.
func agentWorkload(t *testing.T, d *Desired) (map[string]string, corev1.PodTemplateSpec) {
	t.Helper()
	for _, o := range d.Objects {
		switch w := o.(type) {
		case *appsv1.StatefulSet:
			return w.Labels, w.Spec.Template
		case *appsv1.DaemonSet:
			return w.Labels, w.Spec.Template
		}
	}
	t.Fatal("no StatefulSet or DaemonSet")
	return nil, corev1.PodTemplateSpec{}
}

func TestAnAgentOnPrometheusV2RunsTheAgentFeatureAndHonoursTSDB(t *testing.T) {
	d, err := PrometheusAgent(newAgent("", func(s *monitoringv1alpha1.PrometheusAgentSpec) {
		s.Version = "v2.55.1"
		s.TSDB = &monitoringv1.TSDBSpec{OutOfOrderTimeWindow: ptr.To[monitoringv1.Duration]("30m")}
	}), agentInputs())
	if err != nil {
		t.Fatal(err)
	}
	_, pod := agentWorkload(t, d)
	args := pod.Spec.Containers[0].Args
	if !slices.Contains(args, "--enable-feature=agent") || slices.Contains(args, "--agent") || !slices.Contains(args, "--storage.agent.path=/prometheus") {
		t.Errorf("args = %v, want Prometheus v2's agent feature (not v3's --agent) and the WAL path", args)
	}
	loadAgentConfig(t, d.Config())
	cfg, err := config.Load(string(d.Config()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.StorageConfig.TSDBConfig; got == nil || time.Duration(got.OutOfOrderTimeWindowFlag) != 30*time.Minute {
		t.Errorf("storage.tsdb = %+v, want out_of_order_time_window 30m", got)
	}
}

func TestAnAgentsWorkloadSaysItIsAnAgent(t *testing.T) {
	for _, mode := range []monitoringv1alpha1.PrometheusAgentMode{monitoringv1alpha1.StatefulSetPrometheusAgentMode, monitoringv1alpha1.DaemonSetPrometheusAgentMode} {
		d, err := PrometheusAgent(newAgent(mode, func(s *monitoringv1alpha1.PrometheusAgentSpec) {
			// Allowed by the API's rules in both modes; a DaemonSet has no use for them.
			s.PodManagementPolicy = ptr.To(monitoringv1.ParallelPodManagement)
			s.UpdateStrategy = &monitoringv1.StatefulSetUpdateStrategy{Type: monitoringv1.OnDeleteStatefulSetStrategyType}
		}), agentInputs())
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if labels, _ := agentWorkload(t, d); labels["operator.prometheus.io/mode"] != "agent" {
			t.Errorf("%s: labels %v, want operator.prometheus.io/mode=agent", mode, labels)
		}
	}
}
