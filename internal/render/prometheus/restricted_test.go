package prometheus

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Pod Security admission library (k8s.io/pod-security-admission) is not a dependency
// of the module, so each rule of the "restricted" profile, which includes "baseline", is
// checked here on its own. Rules follow the Pod Security Standards document.
type podRule struct {
	name string
	// check returns what violates the rule.
	check func(meta metav1.ObjectMeta, pod corev1.PodSpec) []string
}

var restrictedRules = []podRule{
	// Baseline.
	{"HostProcess containers are not allowed", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		if pod.SecurityContext != nil && pod.SecurityContext.WindowsOptions != nil && ptrValue(pod.SecurityContext.WindowsOptions.HostProcess) {
			bad = append(bad, "pod hostProcess")
		}
		for _, c := range allContainers(pod) {
			if sc := c.SecurityContext; sc != nil && sc.WindowsOptions != nil && ptrValue(sc.WindowsOptions.HostProcess) {
				bad = append(bad, c.Name)
			}
		}
		return bad
	}},
	{"host namespaces are not shared", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		if pod.HostNetwork || pod.HostPID || pod.HostIPC {
			bad = append(bad, "hostNetwork/hostPID/hostIPC")
		}
		return bad
	}},
	{"containers are not privileged", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		for _, c := range allContainers(pod) {
			if c.SecurityContext != nil && ptrValue(c.SecurityContext.Privileged) {
				bad = append(bad, c.Name)
			}
		}
		return bad
	}},
	{"no hostPath volumes", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		for _, v := range pod.Volumes {
			if v.HostPath != nil {
				bad = append(bad, v.Name)
			}
		}
		return bad
	}},
	{"no host ports", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		for _, c := range allContainers(pod) {
			for _, p := range c.Ports {
				if p.HostPort != 0 {
					bad = append(bad, fmt.Sprintf("%s:%d", c.Name, p.HostPort))
				}
			}
		}
		return bad
	}},
	{"AppArmor is not unconfined", func(meta metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		if pod.SecurityContext != nil && pod.SecurityContext.AppArmorProfile != nil && pod.SecurityContext.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
			bad = append(bad, "pod")
		}
		for _, c := range allContainers(pod) {
			if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
				bad = append(bad, c.Name)
			}
		}
		for k, v := range meta.Annotations {
			if strings.HasPrefix(k, "container.apparmor.security.beta.kubernetes.io/") && v != "runtime/default" && !strings.HasPrefix(v, "localhost/") {
				bad = append(bad, k+"="+v)
			}
		}
		return bad
	}},
	{"SELinux type is a container type and user and role are unset", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		allowed := []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
		checkSEL := func(who string, o *corev1.SELinuxOptions) {
			if o != nil && (!slices.Contains(allowed, o.Type) || o.User != "" || o.Role != "") {
				bad = append(bad, who)
			}
		}
		if pod.SecurityContext != nil {
			checkSEL("pod", pod.SecurityContext.SELinuxOptions)
		}
		for _, c := range allContainers(pod) {
			if c.SecurityContext != nil {
				checkSEL(c.Name, c.SecurityContext.SELinuxOptions)
			}
		}
		return bad
	}},
	{"/proc mount type is Default", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		for _, c := range allContainers(pod) {
			if sc := c.SecurityContext; sc != nil && sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
				bad = append(bad, c.Name)
			}
		}
		return bad
	}},
	{"only safe sysctls", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		safe := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
			"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
			"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
		if pod.SecurityContext != nil {
			for _, s := range pod.SecurityContext.Sysctls {
				if !slices.Contains(safe, s.Name) {
					bad = append(bad, s.Name)
				}
			}
		}
		return bad
	}},
	// Restricted.
	{"only restricted volume types", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		for _, v := range pod.Volumes {
			s := v.VolumeSource
			if s.ConfigMap == nil && s.CSI == nil && s.DownwardAPI == nil && s.EmptyDir == nil && s.Ephemeral == nil &&
				s.PersistentVolumeClaim == nil && s.Projected == nil && s.Secret == nil {
				bad = append(bad, v.Name)
			}
		}
		return bad
	}},
	{"privilege escalation is disallowed in every container", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		for _, c := range allContainers(pod) {
			if c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
				bad = append(bad, c.Name)
			}
		}
		return bad
	}},
	{"containers run as non-root", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		podNonRoot := pod.SecurityContext != nil && ptrValue(pod.SecurityContext.RunAsNonRoot)
		for _, c := range allContainers(pod) {
			var set *bool
			if c.SecurityContext != nil {
				set = c.SecurityContext.RunAsNonRoot
			}
			if (set != nil && !*set) || (set == nil && !podNonRoot) {
				bad = append(bad, c.Name)
			}
		}
		return bad
	}},
	{"no user id 0", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		if pod.SecurityContext != nil && pod.SecurityContext.RunAsUser != nil && *pod.SecurityContext.RunAsUser == 0 {
			bad = append(bad, "pod")
		}
		for _, c := range allContainers(pod) {
			if sc := c.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
				bad = append(bad, c.Name)
			}
		}
		return bad
	}},
	{"seccomp profile is RuntimeDefault or Localhost", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		ok := func(p *corev1.SeccompProfile) bool {
			return p != nil && (p.Type == corev1.SeccompProfileTypeRuntimeDefault || p.Type == corev1.SeccompProfileTypeLocalhost)
		}
		var podProfile *corev1.SeccompProfile
		if pod.SecurityContext != nil {
			podProfile = pod.SecurityContext.SeccompProfile
		}
		for _, c := range allContainers(pod) {
			var own *corev1.SeccompProfile
			if c.SecurityContext != nil {
				own = c.SecurityContext.SeccompProfile
			}
			if (own != nil && !ok(own)) || (own == nil && !ok(podProfile)) {
				bad = append(bad, c.Name)
			}
		}
		return bad
	}},
	{"every container drops ALL capabilities and adds at most NET_BIND_SERVICE", func(_ metav1.ObjectMeta, pod corev1.PodSpec) (bad []string) {
		for _, c := range allContainers(pod) {
			caps := (*corev1.Capabilities)(nil)
			if c.SecurityContext != nil {
				caps = c.SecurityContext.Capabilities
			}
			if caps == nil || !slices.Contains(caps.Drop, "ALL") {
				bad = append(bad, c.Name+" drops "+fmt.Sprint(caps))
				continue
			}
			for _, a := range caps.Add {
				if a != "NET_BIND_SERVICE" {
					bad = append(bad, c.Name+" adds "+string(a))
				}
			}
		}
		return bad
	}},
}

func allContainers(pod corev1.PodSpec) []corev1.Container {
	out := slices.Clone(pod.InitContainers)
	out = append(out, pod.Containers...)
	for _, e := range pod.EphemeralContainers {
		out = append(out, corev1.Container(e.EphemeralContainerCommon))
	}
	return out
}

// restrictedContext is a pod security context that meets the "restricted" profile, as
// kube-prometheus-stack sets one; the generated containers bring the rest.
func restrictedContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsUser: ptrTo(int64(1000)), RunAsGroup: ptrTo(int64(2000)), RunAsNonRoot: ptrTo(true), FSGroup: ptrTo(int64(2000)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func TestPodPassesRestrictedProfile(t *testing.T) {
	cases := []struct {
		name string
		p    *monitoringv1.Prometheus
	}{
		{"passes with a restricted security context", newPrometheus(withSecurityContext(restrictedContext()))},
		{"passes with every shard, PVC storage, Secrets and ConfigMaps", newPrometheus(withSecurityContext(restrictedContext()), withShards(2), withVolumeClaimTemplate("fast", "1Gi"), withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Secrets = []string{"tls"}
			s.ConfigMaps = []string{"ca"}
		}))},
		{"passes with ephemeral storage", newPrometheus(withSecurityContext(restrictedContext()), withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Storage = &monitoringv1.StorageSpec{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}}},
			}}}
		}))},
		{"passes leaving the user id to the platform", newPrometheus(withSecurityContext(&corev1.PodSecurityContext{
			RunAsNonRoot: ptrTo(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, sts := range find[*appsv1.StatefulSet](mustObjects(t, tc.p, newOptions())) {
				tmpl := sts.Spec.Template
				for _, rule := range restrictedRules {
					if bad := rule.check(tmpl.ObjectMeta, tmpl.Spec); len(bad) > 0 {
						t.Errorf("%s: %s: violated by %v", sts.Name, rule.name, bad)
					}
				}
			}
		})
	}
}

// TestRestrictedRulesCatchViolations makes sure the rules above are not vacuous.
func TestRestrictedRulesCatchViolations(t *testing.T) {
	sts := only(t, find[*appsv1.StatefulSet](mustObjects(t, newPrometheus(withSecurityContext(restrictedContext())), newOptions())))
	cases := []struct {
		rule   string
		mutate func(*corev1.PodSpec)
	}{
		{"host namespaces are not shared", func(p *corev1.PodSpec) { p.HostPID = true }},
		{"containers are not privileged", func(p *corev1.PodSpec) { p.Containers[0].SecurityContext.Privileged = ptrTo(true) }},
		{"no hostPath volumes", func(p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}},
		{"only restricted volume types", func(p *corev1.PodSpec) {
			p.Volumes = append(p.Volumes, corev1.Volume{Name: "n", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}})
		}},
		{"privilege escalation is disallowed in every container", func(p *corev1.PodSpec) {
			p.InitContainers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}},
		{"containers run as non-root", func(p *corev1.PodSpec) { p.SecurityContext.RunAsNonRoot = nil }},
		{"no user id 0", func(p *corev1.PodSpec) { p.Containers[1].SecurityContext.RunAsUser = ptrTo(int64(0)) }},
		{"seccomp profile is RuntimeDefault or Localhost", func(p *corev1.PodSpec) { p.SecurityContext.SeccompProfile = nil }},
		{"every container drops ALL capabilities and adds at most NET_BIND_SERVICE", func(p *corev1.PodSpec) {
			p.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}},
	}
	for _, tc := range cases {
		t.Run("catches a pod breaking "+tc.rule, func(t *testing.T) {
			pod := *sts.Spec.Template.Spec.DeepCopy()
			tc.mutate(&pod)
			i := slices.IndexFunc(restrictedRules, func(r podRule) bool { return r.name == tc.rule })
			if i < 0 {
				t.Fatalf("no rule %q", tc.rule)
			}
			if bad := restrictedRules[i].check(sts.Spec.Template.ObjectMeta, pod); len(bad) == 0 {
				t.Errorf("the rule accepted the violation")
			}
		})
	}
}

// TestSecurityContext: spec.securityContext reaches the pod exactly as written, nil
// included, as with the existing operator (dropin review finding 10): ids set by the
// operator would be refused where the platform assigns them (OpenShift), and an fsGroup
// makes the kubelet chown the whole data volume at every mount.
func TestSecurityContext(t *testing.T) {
	cases := []struct {
		name string
		p    *monitoringv1.Prometheus
		want *corev1.PodSecurityContext
	}{
		{name: "passes a nil security context through", p: newPrometheus(), want: nil},
		{
			name: "keeps the user's context as written",
			p:    newPrometheus(withSecurityContext(&corev1.PodSecurityContext{RunAsUser: ptrTo(int64(1000)), FSGroup: ptrTo(int64(2000))})),
			want: &corev1.PodSecurityContext{RunAsUser: ptrTo(int64(1000)), FSGroup: ptrTo(int64(2000))},
		},
		{name: "keeps an empty one empty", p: newPrometheus(withSecurityContext(&corev1.PodSecurityContext{})), want: &corev1.PodSecurityContext{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := only(t, find[*appsv1.StatefulSet](mustObjects(t, tc.p, newOptions()))).Spec.Template.Spec.SecurityContext
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("security context %+v, want %+v", got, tc.want)
			}
		})
	}
}
