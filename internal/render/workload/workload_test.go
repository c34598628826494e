package workload

import (
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestMergeContainersPatchesByNameAndAppendsTheRest(t *testing.T) {
	generated := []corev1.Container{
		{Name: "server", Image: "server:1", Args: []string{"--a"}, Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}},
		{Name: "reloader", Image: "reloader:1"},
	}
	user := []corev1.Container{
		{Name: "sidecar-b", Image: "b:1"},
		{Name: "server", Env: []corev1.EnvVar{{Name: "A", Value: "2"}, {Name: "B", Value: "3"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "extra", MountPath: "/extra"}},
			Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}},
		{Name: "sidecar-a", Image: "a:1"},
	}
	got, err := MergeContainers("spec.containers", generated, user)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	if want := []string{"server", "reloader", "sidecar-b", "sidecar-a"}; !slices.Equal(names, want) {
		t.Fatalf("containers %v, want %v (generated first, then the user's new ones in their order)", names, want)
	}
	s := got[0]
	if s.Image != "server:1" || !slices.Equal(s.Args, []string{"--a"}) {
		t.Errorf("the patch lost generated fields: %+v", s)
	}
	env := map[string]string{}
	for _, e := range s.Env {
		env[e.Name] = e.Value
	}
	if env["A"] != "2" || env["B"] != "3" || len(env) != 2 {
		t.Errorf("env merged by name: %v", s.Env)
	}
	if len(s.VolumeMounts) != 2 || s.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("mounts %v limits %v", s.VolumeMounts, s.Resources.Limits)
	}
	if &generated[0] == &got[0] || generated[0].Env[0].Value != "1" {
		t.Error("the generated containers were modified")
	}
}

func TestMergeContainersRefusesANamelessPatch(t *testing.T) {
	_, err := MergeContainers("spec.initContainers", nil, []corev1.Container{{Image: "x"}})
	if err == nil || err.Field != "spec.initContainers[0].name" {
		t.Fatalf("err = %v, want one on spec.initContainers[0].name", err)
	}
}

func TestArgsAndAdditionalArgs(t *testing.T) {
	args := Args([]string{"--a=1"}, []monitoringv1.Argument{{Name: "b", Value: "2"}, {Name: "c"}})
	if !slices.Equal(args, []string{"--a=1", "--b=2", "--c"}) {
		t.Errorf("Args = %v", args)
	}
	if err := CheckAdditionalArgs([]string{"--a=1", "--no-x"}, []monitoringv1.Argument{{Name: "x"}}, "y", "Kind"); err == nil || !strings.Contains(err.Message, "--x is set by Lookout") {
		t.Errorf("a generated flag (negated form) given again: %v", err)
	}
	if err := CheckAdditionalArgs(nil, []monitoringv1.Argument{{Name: "--x"}}, "y", "Kind"); err == nil {
		t.Error("a flag name with dashes is refused")
	}
}

func TestImageReferencePrecedence(t *testing.T) {
	img := "registry.example/custom:1"
	cases := []struct {
		spec ImageSpec
		want string
	}{
		{ImageSpec{DefaultBase: "quay.io/x/y", DefaultVersion: "v1.2.3"}, "quay.io/x/y:v1.2.3"},
		{ImageSpec{DefaultBase: "quay.io/x/y", DefaultVersion: "v1.2.3", Version: "2.0"}, "quay.io/x/y:v2.0.0"},
		{ImageSpec{DefaultBase: "quay.io/x/y", DefaultVersion: "v1.2.3", Tag: "latest", Version: "2.0"}, "quay.io/x/y:latest"},
		{ImageSpec{DefaultBase: "quay.io/x/y", DefaultVersion: "v1.2.3", SHA: "abc", Tag: "latest"}, "quay.io/x/y@sha256:abc"},
		{ImageSpec{DefaultBase: "quay.io/x/y", DefaultVersion: "v1.2.3", Image: &img, Tag: "latest"}, img},
	}
	for _, tc := range cases {
		if got, err := tc.spec.Reference(); err != nil || got != tc.want {
			t.Errorf("%+v: %q, %v; want %q", tc.spec, got, err, tc.want)
		}
	}
}

func TestHostNetworkKeepsClusterDNSUnlessTheUserChoseAPolicy(t *testing.T) {
	var spec corev1.PodSpec
	HostNetwork(&spec, false)
	if spec.HostNetwork || spec.DNSPolicy != "" {
		t.Errorf("off: %+v", spec)
	}
	HostNetwork(&spec, true)
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("on: hostNetwork %v, dnsPolicy %q", spec.HostNetwork, spec.DNSPolicy)
	}
	spec = corev1.PodSpec{DNSPolicy: corev1.DNSDefault}
	HostNetwork(&spec, true)
	if spec.DNSPolicy != corev1.DNSDefault {
		t.Errorf("the user's policy was replaced by %q", spec.DNSPolicy)
	}
}

func TestCheckUserVolumes(t *testing.T) {
	generated := []corev1.Volume{{Name: "config"}, {Name: "config-out"}}
	cases := []struct {
		name   string
		user   []corev1.Volume
		mounts []corev1.VolumeMount
		field  string // "" when accepted
	}{
		{"accepts a new volume and mounts of it and of a generated one", []corev1.Volume{{Name: "extra"}},
			[]corev1.VolumeMount{{Name: "extra", MountPath: "/extra"}, {Name: "config", MountPath: "/c"}}, ""},
		{"refuses a volume named like a generated one", []corev1.Volume{{Name: "config-out"}}, nil, "spec.volumes[0].name"},
		{"refuses two volumes of one name", []corev1.Volume{{Name: "a"}, {Name: "a"}}, nil, "spec.volumes[1].name"},
		{"refuses a volume name the apiserver would refuse", []corev1.Volume{{Name: "Extra_1"}}, nil, "spec.volumes[0].name"},
		{"refuses a mount of no volume", nil, []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}, "spec.volumeMounts[0].name"},
		{"refuses a relative mount path", []corev1.Volume{{Name: "a"}}, []corev1.VolumeMount{{Name: "a", MountPath: "x"}}, "spec.volumeMounts[0].mountPath"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckUserVolumes(generated, tc.user, tc.mounts)
			if tc.field == "" {
				if err != nil {
					t.Errorf("CheckUserVolumes = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Field != tc.field || !strings.Contains(err.Message, tc.field) {
				t.Errorf("CheckUserVolumes = %v, want an error on %s", err, tc.field)
			}
		})
	}
}

func TestWebTLSServesProjectedFilesAndRefusesWhatTheServerWould(t *testing.T) {
	sel := func(name, key string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	}
	tlsCfg := &monitoringv1.WebTLSConfig{
		Cert:      monitoringv1.SecretOrConfigMap{Secret: sel("web", "tls.crt")},
		KeySecret: *sel("web", "tls.key"),
		ClientCA:  monitoringv1.SecretOrConfigMap{Secret: sel("web", "tls.crt")}, // the same key twice: projected once
	}
	out, err := WebConfigFileTLS(&monitoringv1.WebConfigFileFields{TLSConfig: tlsCfg}, "/tls")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cert_file: /tls/secret_web_tls.crt", "key_file: /tls/secret_web_tls.key", "client_ca_file: /tls/secret_web_tls.crt"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("web config lacks %q:\n%s", want, out)
		}
	}
	vol := WebTLSVolume("web-tls", tlsCfg)
	if vol == nil || len(vol.Projected.Sources) != 2 {
		t.Fatalf("projected volume = %+v, want the certificate and the key once each", vol)
	}
	if v := WebTLSVolume("web-tls", &monitoringv1.WebTLSConfig{CertFile: Ptr("/c"), KeyFile: Ptr("/k")}); v != nil {
		t.Errorf("files only: volume %+v, want none", v)
	}
	tlsCfg.MinVersion = Ptr("TLS9")
	if _, err := WebConfigFileTLS(&monitoringv1.WebConfigFileFields{TLSConfig: tlsCfg}, "/tls"); err == nil || !strings.Contains(err.Error(), "TLS9") {
		t.Errorf("an unknown TLS version: err = %v, want the web server's refusal", err)
	}
	if err := CheckWebTLS("spec.web.tlsConfig", &monitoringv1.WebTLSConfig{CertFile: Ptr("/c"), KeyFile: Ptr("/k"), ClientAuthType: Ptr("RequireAnyClientCert")}); err == nil || err.Reason != ReasonUnsupportedField {
		t.Errorf("client certificates required: %v, want UnsupportedField", err)
	}
}
