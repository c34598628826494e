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

func TestWebTLSIsServedAndProbedOverHTTPS(t *testing.T) {
	am := newAlertmanager(func(am *monitoringv1.Alertmanager) {
		am.Spec.Web = &monitoringv1.AlertmanagerWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
			Cert:      monitoringv1.SecretOrConfigMap{Secret: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "am-tls"}, Key: "tls.crt"}},
			KeySecret: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "am-tls"}, Key: "tls.key"},
		}}}
	})
	objs, err := Objects(am, options())
	if err != nil {
		t.Fatal(err)
	}
	var web string
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok && s.Name == WebConfigSecretName("main") {
			web = string(s.Data[WebConfigSecretKey])
		}
	}
	if !strings.Contains(web, "cert_file: /etc/alertmanager/web_tls/secret_am-tls_tls.crt") || !strings.Contains(web, "key_file: /etc/alertmanager/web_tls/secret_am-tls_tls.key") {
		t.Errorf("web config serves no TLS from the projected files:\n%s", web)
	}
	spec, err := podSpec(am, options())
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Containers[0]
	if c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || c.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("probes: %v, %v, want HTTPS", c.ReadinessProbe.HTTPGet.Scheme, c.LivenessProbe.HTTPGet.Scheme)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == webTLSDir }) ||
		!slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == volWebTLS && v.Projected != nil }) {
		t.Errorf("the certificate is not mounted: %v", c.VolumeMounts)
	}
	reloader := spec.Containers[1].Args
	if !slices.Contains(reloader, "--reload-url=https://127.0.0.1:9093/-/reload") || !slices.Contains(reloader, "--reload-insecure-skip-verify") {
		t.Errorf("the reloader does not reload over HTTPS: %v", reloader)
	}
}

func TestWithoutAServiceAccountTokenTheReloaderReadsTheMountedConfig(t *testing.T) {
	spec, err := podSpec(newAlertmanager(func(am *monitoringv1.Alertmanager) { am.Spec.AutomountServiceAccountToken = ptr.To(false) }), options())
	if err != nil {
		t.Fatal(err)
	}
	if *spec.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken: false is not honoured")
	}
	for _, c := range append(spec.InitContainers, spec.Containers[1]) {
		if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--config-secret") }) ||
			!slices.Contains(c.Args, "--config-file=/etc/alertmanager/config/alertmanager.yaml.gz") {
			t.Errorf("%s reads the Secret through the API, with no token: %v", c.Name, c.Args)
		}
	}
}

// Empty spec.serviceAccountName runs the pods as the namespace's default account,
// whose pull secrets and cloud identity annotations keep working.
func TestAnEmptyServiceAccountNameRunsAsDefault(t *testing.T) {
	spec, err := podSpec(newAlertmanager(), options())
	if err != nil {
		t.Fatal(err)
	}
	if spec.ServiceAccountName != "default" {
		t.Errorf("serviceAccountName %q, want default", spec.ServiceAccountName)
	}
}

func TestTheReloaderWatchesTheUsersSecretsAndConfigMaps(t *testing.T) {
	am := newAlertmanager(func(am *monitoringv1.Alertmanager) {
		am.Spec.Secrets, am.Spec.ConfigMaps = []string{"smtp-tls"}, []string{"am-templates"}
	})
	spec, err := podSpec(am, options())
	if err != nil {
		t.Fatal(err)
	}
	sidecar := spec.Containers[1]
	for _, dir := range []string{"/etc/alertmanager/secrets/smtp-tls", "/etc/alertmanager/configmaps/am-templates"} {
		if !slices.Contains(sidecar.Args, "--watched-dir="+dir) || !slices.ContainsFunc(sidecar.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir }) {
			t.Errorf("the reloader does not watch %s: args %v", dir, sidecar.Args)
		}
	}
}

func TestAPortNameThatCannotNameAPortIsRefused(t *testing.T) {
	for _, n := range []string{"Web_Port", "tcp-mesh"} {
		err := Validate(newAlertmanager(func(am *monitoringv1.Alertmanager) { am.Spec.PortName = n }))
		if se, ok := err.(*workload.SpecError); !ok || se.Field != "spec.portName" {
			t.Errorf("portName %q: Validate = %v, want an error on spec.portName", n, err)
		}
	}
}
