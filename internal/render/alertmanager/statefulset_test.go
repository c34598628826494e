package alertmanager

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// flagNames are the names of the flags in args, without dashes and values.
func flagNames(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i], _, _ = strings.Cut(strings.TrimPrefix(a, "--"), "=")
	}
	return out
}

// everyField sets every spec field that adds a flag of its own.
func everyField(version string) func(*monitoringv1.Alertmanager) {
	return func(am *monitoringv1.Alertmanager) {
		am.Spec.Version = version
		am.Spec.Replicas = ptr.To[int32](3)
		am.Spec.LogFormat = "json"
		am.Spec.Web = &monitoringv1.AlertmanagerWebSpec{GetConcurrency: ptr.To[uint32](4), Timeout: ptr.To[uint32](30)}
		am.Spec.Limits = &monitoringv1.AlertmanagerLimitsSpec{MaxSilences: ptr.To[int32](100), MaxPerSilenceBytes: ptr.To[monitoringv1.ByteSize]("5KiB")}
		am.Spec.EnableFeatures = []string{"receiver-name-in-metrics"}
		am.Spec.MinReadySeconds = ptr.To[int32](60)
	}
}

// The flags each release gets: a flag an older Alertmanager does not know stops it
// at start (kube-prometheus's 3-replica v0.28.1 crash-looped on --cluster.peer-name).
func TestFlagsFollowTheAlertmanagerVersion(t *testing.T) {
	cases := []struct {
		version      string
		want, absent []string
	}{
		{"v0.34.0", []string{"web.config.file", "cluster.label", "cluster.peer-name", "enable-feature", "silences.max-silences",
			"silences.max-silence-size-bytes", "web.get-concurrency", "web.timeout", "log.format", "dispatch.start-delay"}, nil},
		{"v0.30.0", []string{"cluster.peer-name", "dispatch.start-delay"}, nil},
		{"0.28.1", []string{"web.config.file", "cluster.label", "enable-feature", "silences.max-silences", "silences.max-silence-size-bytes"},
			[]string{"cluster.peer-name", "dispatch.start-delay"}},
		{"v0.27.0", []string{"enable-feature"}, []string{"silences.max-silences", "silences.max-silence-size-bytes", "cluster.peer-name"}},
		{"v0.26.0", []string{"cluster.label"}, []string{"enable-feature"}},
		{"v0.25.0", []string{"web.config.file", "web.get-concurrency"}, []string{"cluster.label"}},
		{"v0.21.0", []string{"web.timeout"}, []string{"web.config.file"}},
		{"v0.16.0", []string{"log.format"}, []string{"web.get-concurrency", "web.timeout"}},
		{"v0.15.3", []string{"cluster.listen-address", "cluster.peer", "cluster.reconnect-timeout"}, []string{"log.format"}},
	}
	for _, tc := range cases {
		t.Run(tc.version, func(t *testing.T) {
			am := newAlertmanager(everyField(tc.version))
			if err := Validate(am); err != nil {
				t.Fatal(err)
			}
			names := flagNames(generatedArgs(am))
			for _, f := range tc.want {
				if !slices.Contains(names, f) {
					t.Errorf("--%s missing from %v", f, names)
				}
			}
			for _, f := range tc.absent {
				if slices.Contains(names, f) {
					t.Errorf("--%s is there, but Alertmanager %s does not know it: %v", f, tc.version, names)
				}
			}
		})
	}
}

func TestPodNameIsInTheEnvironmentOnlyWhereAPeerNameFlagReadsIt(t *testing.T) {
	for version, want := range map[string]bool{"v0.28.1": false, "v0.30.0": true, "v0.34.0": true} {
		c := alertmanagerContainer(newAlertmanager(everyField(version)))
		has := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAME" })
		if has != want {
			t.Errorf("%s: POD_NAME in env = %v, want %v", version, has, want)
		}
	}
}

func TestAlertmanagersOlderThanV015AreRefused(t *testing.T) {
	err := Validate(newAlertmanager(func(am *monitoringv1.Alertmanager) { am.Spec.Version = "v0.14.0" }))
	se, ok := err.(*workload.SpecError)
	if !ok || se.Field != "spec.version" {
		t.Fatalf("Validate = %v, want an error on spec.version", err)
	}
}

func TestASingleReplicaWithAdditionalPeersStaysAloneUnlessForced(t *testing.T) {
	peers := func(am *monitoringv1.Alertmanager) { am.Spec.AdditionalPeers = []string{"am-dc2:9094"} }
	args := generatedArgs(newAlertmanager(peers))
	if !slices.Contains(args, "--cluster.listen-address=") || slices.Contains(args, "--cluster.peer=am-dc2:9094") {
		t.Errorf("one replica with additionalPeers: want gossip off, got %v", args)
	}
	args = generatedArgs(newAlertmanager(peers, func(am *monitoringv1.Alertmanager) { am.Spec.ForceEnableClusterMode = true }))
	if !slices.Contains(args, "--cluster.listen-address=[$(POD_IP)]:9094") || !slices.Contains(args, "--cluster.peer=am-dc2:9094") {
		t.Errorf("forceEnableClusterMode: want gossip with the additional peer, got %v", args)
	}
}

func TestMinReadySecondsDelaysTheFirstDispatchUnlessTheUserSetsTheFlag(t *testing.T) {
	ready := func(am *monitoringv1.Alertmanager) { am.Spec.MinReadySeconds = ptr.To[int32](60) }
	if args := generatedArgs(newAlertmanager(ready)); !slices.Contains(args, "--dispatch.start-delay=60s") {
		t.Errorf("minReadySeconds 60: want --dispatch.start-delay=60s, got %v", args)
	}
	own := newAlertmanager(ready, func(am *monitoringv1.Alertmanager) {
		am.Spec.AdditionalArgs = []monitoringv1.Argument{{Name: "dispatch.start-delay", Value: "2m"}}
	})
	if err := Validate(own); err != nil {
		t.Fatalf("the user's own --dispatch.start-delay: %v", err)
	}
	if n := strings.Count(strings.Join(workload.Args(generatedArgs(own), own.Spec.AdditionalArgs), " "), "dispatch.start-delay"); n != 1 {
		t.Errorf("--dispatch.start-delay given %d times, want the user's only", n)
	}
}

func TestInfoAndLogfmtAreLeftToAlertmanagersDefaults(t *testing.T) {
	args := generatedArgs(newAlertmanager(func(am *monitoringv1.Alertmanager) { am.Spec.LogLevel, am.Spec.LogFormat = "info", "logfmt" }))
	if names := flagNames(args); slices.Contains(names, "log.level") || slices.Contains(names, "log.format") {
		t.Errorf("info/logfmt: want no log flags, got %v", args)
	}
}
