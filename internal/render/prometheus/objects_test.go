package prometheus

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// TestCompatibleWithExistingOperator checks the names and labels docs/compatibility.md lists: a
// StatefulSet, PVC or Service that differs would lose data or break the migration.
func TestCompatibleWithExistingOperator(t *testing.T) {
	cases := []struct {
		name  string
		p     *monitoringv1.Prometheus
		check func(t *testing.T, objs []workload.Object)
	}{
		{
			name: "names the StatefulSet prometheus-<name> and selects pods with the existing operator's labels",
			p:    newPrometheus(),
			check: func(t *testing.T, objs []workload.Object) {
				sts := only(t, find[*appsv1.StatefulSet](objs))
				if sts.Name != "prometheus-k8s" {
					t.Errorf("StatefulSet name = %q, want prometheus-k8s", sts.Name)
				}
				want := map[string]string{
					"app.kubernetes.io/name":       "prometheus",
					"app.kubernetes.io/managed-by": "prometheus-operator",
					"app.kubernetes.io/instance":   "k8s",
					"operator.prometheus.io/name":  "k8s",
					"prometheus":                   "k8s",
					"operator.prometheus.io/shard": "0",
				}
				if got := sts.Spec.Selector.MatchLabels; !maps.Equal(got, want) {
					t.Errorf("selector = %v, want exactly %v", got, want)
				}
				if len(sts.Spec.Selector.MatchExpressions) > 0 {
					t.Errorf("selector has match expressions %v", sts.Spec.Selector.MatchExpressions)
				}
				for k, v := range want {
					if got := sts.Spec.Template.Labels[k]; got != v {
						t.Errorf("pod template label %s = %q, want %q", k, got, v)
					}
				}
				if sts.Spec.ServiceName != "prometheus-operated" {
					t.Errorf("serviceName = %q, want prometheus-operated", sts.Spec.ServiceName)
				}
				if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
					t.Errorf("podManagementPolicy = %q, want Parallel", sts.Spec.PodManagementPolicy)
				}
			},
		},
		{
			name: "names shard N prometheus-<name>-shard-N with its own shard label and SHARD variable",
			p:    newPrometheus(withShards(3)),
			check: func(t *testing.T, objs []workload.Object) {
				sets := find[*appsv1.StatefulSet](objs)
				var names []string
				for i, sts := range sets {
					names = append(names, sts.Name)
					shard := string(rune('0' + i))
					if got := sts.Spec.Selector.MatchLabels["operator.prometheus.io/shard"]; got != shard {
						t.Errorf("%s: shard label %q, want %q", sts.Name, got, shard)
					}
					if got := envValue(container(t, sts.Spec.Template.Spec.Containers, "config-reloader"), "SHARD"); got != shard {
						t.Errorf("%s: SHARD = %q, want %q", sts.Name, got, shard)
					}
				}
				if want := []string{"prometheus-k8s", "prometheus-k8s-shard-1", "prometheus-k8s-shard-2"}; !slices.Equal(names, want) {
					t.Errorf("StatefulSets %v, want %v", names, want)
				}
			},
		},
		{
			name: "names the PVC template prometheus-<name>-db and keeps the TSDB in its prometheus-db sub path",
			p:    newPrometheus(withShards(2), withVolumeClaimTemplate("fast", "10Gi")),
			check: func(t *testing.T, objs []workload.Object) {
				for _, sts := range find[*appsv1.StatefulSet](objs) {
					tmpl := only(t, sts.Spec.VolumeClaimTemplates)
					if tmpl.Name != "prometheus-k8s-db" {
						t.Errorf("%s: PVC template %q, want prometheus-k8s-db", sts.Name, tmpl.Name)
					}
					if len(tmpl.Labels) > 0 || len(tmpl.Annotations) > 0 {
						t.Errorf("%s: PVC template has metadata of ours %v %v; templates are immutable", sts.Name, tmpl.Labels, tmpl.Annotations)
					}
					if !slices.Equal(tmpl.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
						t.Errorf("%s: access modes %v, want [ReadWriteOnce]", sts.Name, tmpl.Spec.AccessModes)
					}
					m := mount(t, container(t, sts.Spec.Template.Spec.Containers, "prometheus"), "/prometheus")
					if m.Name != "prometheus-k8s-db" || m.SubPath != "prometheus-db" {
						t.Errorf("%s: /prometheus mounts %q sub path %q, want prometheus-k8s-db sub path prometheus-db", sts.Name, m.Name, m.SubPath)
					}
					for _, v := range sts.Spec.Template.Spec.Volumes {
						if v.Name == "prometheus-k8s-db" {
							t.Errorf("%s: pod volume %q shadows the PVC template", sts.Name, v.Name)
						}
					}
				}
			},
		},
		{
			name: "keeps a PVC template name the user chose",
			p: newPrometheus(withVolumeClaimTemplate("fast", "10Gi"), withSpec(func(s *monitoringv1.PrometheusSpec) {
				s.Storage.VolumeClaimTemplate.Name = "data"
			})),
			check: func(t *testing.T, objs []workload.Object) {
				sts := only(t, find[*appsv1.StatefulSet](objs))
				if got := only(t, sts.Spec.VolumeClaimTemplates).Name; got != "data" {
					t.Errorf("PVC template %q, want data", got)
				}
				if m := mount(t, container(t, sts.Spec.Template.Spec.Containers, "prometheus"), "/prometheus"); m.Name != "data" {
					t.Errorf("/prometheus mounts %q, want data", m.Name)
				}
			},
		},
		{
			name: "mounts an emptyDir named prometheus-<name>-db without sub path when there is no storage",
			p:    newPrometheus(),
			check: func(t *testing.T, objs []workload.Object) {
				sts := only(t, find[*appsv1.StatefulSet](objs))
				if len(sts.Spec.VolumeClaimTemplates) > 0 {
					t.Errorf("unexpected PVC templates %v", sts.Spec.VolumeClaimTemplates)
				}
				v := volume(t, sts.Spec.Template.Spec.Volumes, "prometheus-k8s-db")
				if v.EmptyDir == nil {
					t.Errorf("data volume %+v, want an emptyDir", v.VolumeSource)
				}
				if m := mount(t, container(t, sts.Spec.Template.Spec.Containers, "prometheus"), "/prometheus"); m.SubPath != "" {
					t.Errorf("sub path %q, want none", m.SubPath)
				}
			},
		},
		{
			name: "uses spec.serviceName as the governing Service, which the user provides",
			p: newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
				s.ServiceName = ptrTo("prom-headless")
			})),
			check: func(t *testing.T, objs []workload.Object) {
				if got := only(t, find[*appsv1.StatefulSet](objs)).Spec.ServiceName; got != "prom-headless" {
					t.Errorf("serviceName = %q", got)
				}
				if svcs := find[*corev1.Service](objs); len(svcs) != 0 {
					t.Errorf("created %d Services (%s…), want none: the user's spec.serviceName Service is theirs", len(svcs), svcs[0].Name)
				}
			},
		},
		{
			name: "creates no prometheus-<name> Service unless annotated",
			p:    newPrometheus(),
			check: func(t *testing.T, objs []workload.Object) {
				for _, svc := range find[*corev1.Service](objs) {
					if svc.Name != "prometheus-operated" {
						t.Errorf("unexpected Service %s", svc.Name)
					}
				}
			},
		},
		{
			name: "exposes port web 9090 on the headless Service and web + reloader-web on prometheus-<name> when asked for",
			p: newPrometheus(withShards(2), func(p *monitoringv1.Prometheus) {
				p.Annotations = map[string]string{AnnotationService: "true"}
			}),
			check: func(t *testing.T, objs []workload.Object) {
				gov := serviceNamed(t, objs, "prometheus-operated")
				if p := only(t, gov.Spec.Ports); p.Name != "web" || p.Port != 9090 {
					t.Errorf("governing port %s %d, want web 9090", p.Name, p.Port)
				}
				if gov.Spec.Selector["app.kubernetes.io/name"] != "prometheus" {
					t.Errorf("governing selector %v lacks app.kubernetes.io/name=prometheus", gov.Spec.Selector)
				}
				svc := serviceNamed(t, objs, "prometheus-k8s")
				var ports []string
				for _, p := range svc.Spec.Ports {
					ports = append(ports, p.Name+":"+p.TargetPort.String())
				}
				if want := []string{"web:web", "reloader-web:reloader-web"}; !slices.Equal(ports, want) {
					t.Errorf("ports %v, want %v", ports, want)
				}
				// The Service must reach the pods of every shard.
				for _, sts := range find[*appsv1.StatefulSet](objs) {
					for k, v := range svc.Spec.Selector {
						if sts.Spec.Template.Labels[k] != v {
							t.Errorf("Service selector %s=%s does not match pods of %s", k, v, sts.Name)
						}
					}
					for k, v := range gov.Spec.Selector {
						if sts.Spec.Template.Labels[k] != v {
							t.Errorf("governing selector %s=%s does not match pods of %s", k, v, sts.Name)
						}
					}
				}
			},
		},
		{
			name: "stores the config in Secret prometheus-<name> key prometheus.yaml.gz and the web config next to it",
			p:    newPrometheus(),
			check: func(t *testing.T, objs []workload.Object) {
				cfg := secretNamed(t, objs, "prometheus-k8s")
				if !bytes.Equal(cfg.Data["prometheus.yaml.gz"], fakeConfig) {
					t.Errorf("config Secret data %v", cfg.Data)
				}
				web := secretNamed(t, objs, "prometheus-k8s-web-config")
				if got := string(web.Data["web-config.yaml"]); got != "{}\n" {
					t.Errorf("web config %q, want {}", got)
				}
			},
		},
		{
			name: "wires the reloader between the config Secret and config_out",
			p:    newPrometheus(),
			check: func(t *testing.T, objs []workload.Object) {
				pod := only(t, find[*appsv1.StatefulSet](objs)).Spec.Template.Spec
				if v := volume(t, pod.Volumes, "config"); v.Secret == nil || v.Secret.SecretName != "prometheus-k8s" {
					t.Errorf("config volume %+v", v.VolumeSource)
				}
				prom := container(t, pod.Containers, "prometheus")
				if !slices.Contains(prom.Args, "--config.file=/etc/prometheus/config_out/prometheus.env.yaml") {
					t.Errorf("prometheus args %v", prom.Args)
				}
				if m := mount(t, prom, "/etc/prometheus/config_out"); !m.ReadOnly {
					t.Errorf("prometheus mounts config_out writable")
				}
				for _, c := range []corev1.Container{container(t, pod.Containers, "config-reloader"), container(t, pod.InitContainers, "init-config-reloader")} {
					if !slices.Equal(c.Command, []string{"/bin/lookout-reloader"}) {
						t.Errorf("%s command %v", c.Name, c.Command)
					}
					for _, a := range []string{
						"--config-file=/etc/prometheus/config/prometheus.yaml.gz",
						"--config-envsubst-file=/etc/prometheus/config_out/prometheus.env.yaml",
						"--reload-url=http://127.0.0.1:9090/-/reload",
						"--config-secret=monitoring/prometheus-k8s",
					} {
						if !slices.Contains(c.Args, a) {
							t.Errorf("%s lacks %s in %v", c.Name, a, c.Args)
						}
					}
					if got := slices.Contains(c.Args, "--init-mode"); got != (c.Name == "init-config-reloader") {
						t.Errorf("%s: --init-mode present = %v", c.Name, got)
					}
					if m := mount(t, c, "/etc/prometheus/config"); !m.ReadOnly || m.Name != "config" {
						t.Errorf("%s config mount %+v", c.Name, m)
					}
					if m := mount(t, c, "/etc/prometheus/config_out"); m.ReadOnly {
						t.Errorf("%s cannot write config_out", c.Name)
					}
					for _, env := range []string{"POD_NAME", "POD_NAMESPACE", "SHARD"} {
						if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == env }) {
							t.Errorf("%s lacks env %s", c.Name, env)
						}
					}
				}
			},
		},
		{
			name: "merges podMetadata labels without letting them override the selector",
			p:    newPrometheus(withPodMetadata(map[string]string{"team": "a", "prometheus": "other", "app.kubernetes.io/managed-by": "helm"}, nil)),
			check: func(t *testing.T, objs []workload.Object) {
				l := only(t, find[*appsv1.StatefulSet](objs)).Spec.Template.Labels
				if l["team"] != "a" || l["prometheus"] != "k8s" || l["app.kubernetes.io/managed-by"] != "prometheus-operator" {
					t.Errorf("pod labels %v", l)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, mustObjects(t, tc.p, newOptions()))
		})
	}
}

func TestOwnership(t *testing.T) {
	cases := []struct {
		name string
		opts Options
	}{
		{"gives every object in the Prometheus's namespace an owner reference", newOptions()},
		{"marks RBAC in other namespaces with the owner annotation instead of a cross-namespace owner reference", newOptions(discoveringIn("monitoring", "team-a"))},
		{"marks cluster-scoped RBAC with the owner annotation", newOptions(discoveringEverywhere(), discoveringNodes())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPrometheus()
			for _, o := range mustObjects(t, p, tc.opts) {
				id := o.GetObjectKind().GroupVersionKind().Kind + " " + o.GetNamespace() + "/" + o.GetName()
				if o.GetObjectKind().GroupVersionKind().Version == "" {
					t.Errorf("%s: TypeMeta not set", id)
				}
				refs := o.GetOwnerReferences()
				if o.GetNamespace() != p.Namespace {
					if len(refs) > 0 {
						t.Errorf("%s: owner references %v outside the Prometheus's namespace", id, refs)
					}
					if got := o.GetAnnotations()[AnnotationOwner]; got != "monitoring/k8s" {
						t.Errorf("%s: owner annotation %q, want monitoring/k8s", id, got)
					}
					if o.GetLabels()[LabelPrometheus] != "k8s" || o.GetLabels()[LabelPrometheusNamespace] != "monitoring" {
						t.Errorf("%s: labels %v", id, o.GetLabels())
					}
					continue
				}
				if len(refs) != 1 {
					t.Fatalf("%s: owner references %v, want one", id, refs)
				}
				ref := refs[0]
				if ref.UID != p.UID || ref.Kind != "Prometheus" || ref.APIVersion != "monitoring.coreos.com/v1" || ref.Name != "k8s" {
					t.Errorf("%s: owner reference %+v", id, ref)
				}
				if Shared(o) {
					if ref.Controller != nil && *ref.Controller {
						t.Errorf("%s: shared object has a controller reference", id)
					}
					if _, ok := o.GetLabels()[LabelPrometheus]; ok {
						t.Errorf("%s: shared object carries the per-Prometheus label", id)
					}
					continue
				}
				if ref.Controller == nil || !*ref.Controller || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
					t.Errorf("%s: owner reference %+v, want controller and blockOwnerDeletion", id, ref)
				}
				if o.GetLabels()[LabelPrometheus] != "k8s" {
					t.Errorf("%s: labels %v lack %s=k8s", id, o.GetLabels(), LabelPrometheus)
				}
			}
		})
	}
}

func TestOnlyTheGoverningServiceIsShared(t *testing.T) {
	var shared []string
	for _, o := range mustObjects(t, newPrometheus(), newOptions()) {
		if Shared(o) {
			shared = append(shared, o.GetName())
		}
	}
	if !slices.Equal(shared, []string{"prometheus-operated"}) {
		t.Errorf("shared objects %v, want [prometheus-operated]", shared)
	}
}

func TestRBAC(t *testing.T) {
	type grant struct{ scope, rule string }
	cases := []struct {
		name string
		opts Options
		want []grant
	}{
		{
			name: "grants discovery and the reloader's own Secret in the Prometheus's namespace",
			opts: newOptions(),
			want: []grant{
				{"monitoring", "/endpoints,pods,services get,list,watch"},
				{"monitoring", "discovery.k8s.io/endpointslices get,list,watch"},
				{"monitoring", "networking.k8s.io/ingresses get,list,watch"},
				{"monitoring", "/secrets[prometheus-k8s,prometheus-k8s-scrape-0,prometheus-k8s-scrape-1,prometheus-k8s-scrape-2,prometheus-k8s-scrape-3,prometheus-k8s-scrape-4,prometheus-k8s-scrape-5,prometheus-k8s-scrape-6,prometheus-k8s-scrape-7,prometheus-k8s-scrape-8,prometheus-k8s-scrape-9,prometheus-k8s-scrape-10,prometheus-k8s-scrape-11,prometheus-k8s-scrape-12,prometheus-k8s-scrape-13,prometheus-k8s-scrape-14,prometheus-k8s-scrape-15] get,list,watch"},
			},
		},
		{
			name: "grants discovery in each discovery namespace and the Secret only at home",
			opts: newOptions(discoveringIn("team-b", "team-a", "team-b")),
			want: []grant{
				{"monitoring", "/secrets[prometheus-k8s,prometheus-k8s-scrape-0,prometheus-k8s-scrape-1,prometheus-k8s-scrape-2,prometheus-k8s-scrape-3,prometheus-k8s-scrape-4,prometheus-k8s-scrape-5,prometheus-k8s-scrape-6,prometheus-k8s-scrape-7,prometheus-k8s-scrape-8,prometheus-k8s-scrape-9,prometheus-k8s-scrape-10,prometheus-k8s-scrape-11,prometheus-k8s-scrape-12,prometheus-k8s-scrape-13,prometheus-k8s-scrape-14,prometheus-k8s-scrape-15] get,list,watch"},
				{"team-a", "/endpoints,pods,services get,list,watch"},
				{"team-a", "discovery.k8s.io/endpointslices get,list,watch"},
				{"team-a", "networking.k8s.io/ingresses get,list,watch"},
				{"team-b", "/endpoints,pods,services get,list,watch"},
				{"team-b", "discovery.k8s.io/endpointslices get,list,watch"},
				{"team-b", "networking.k8s.io/ingresses get,list,watch"},
			},
		},
		{
			name: "grants discovery cluster-wide through a ClusterRole for all namespaces, nodes only when asked",
			opts: newOptions(discoveringEverywhere()),
			want: []grant{
				{"cluster", "/endpoints,pods,services get,list,watch"},
				{"cluster", "discovery.k8s.io/endpointslices get,list,watch"},
				{"cluster", "networking.k8s.io/ingresses get,list,watch"},
				{"monitoring", "/secrets[prometheus-k8s,prometheus-k8s-scrape-0,prometheus-k8s-scrape-1,prometheus-k8s-scrape-2,prometheus-k8s-scrape-3,prometheus-k8s-scrape-4,prometheus-k8s-scrape-5,prometheus-k8s-scrape-6,prometheus-k8s-scrape-7,prometheus-k8s-scrape-8,prometheus-k8s-scrape-9,prometheus-k8s-scrape-10,prometheus-k8s-scrape-11,prometheus-k8s-scrape-12,prometheus-k8s-scrape-13,prometheus-k8s-scrape-14,prometheus-k8s-scrape-15] get,list,watch"},
			},
		},
		{
			name: "grants nodes cluster-wide when node discovery is needed",
			opts: newOptions(discoveringNodes()),
			want: []grant{
				{"cluster", "/nodes get,list,watch"},
				{"monitoring", "/endpoints,pods,services get,list,watch"},
				{"monitoring", "discovery.k8s.io/endpointslices get,list,watch"},
				{"monitoring", "networking.k8s.io/ingresses get,list,watch"},
				{"monitoring", "/secrets[prometheus-k8s,prometheus-k8s-scrape-0,prometheus-k8s-scrape-1,prometheus-k8s-scrape-2,prometheus-k8s-scrape-3,prometheus-k8s-scrape-4,prometheus-k8s-scrape-5,prometheus-k8s-scrape-6,prometheus-k8s-scrape-7,prometheus-k8s-scrape-8,prometheus-k8s-scrape-9,prometheus-k8s-scrape-10,prometheus-k8s-scrape-11,prometheus-k8s-scrape-12,prometheus-k8s-scrape-13,prometheus-k8s-scrape-14,prometheus-k8s-scrape-15] get,list,watch"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPrometheus()
			objs := mustObjects(t, p, tc.opts)
			var got []grant
			bound := map[string]bool{}
			describe := func(r rbacv1.PolicyRule) string {
				s := strings.Join(r.APIGroups, ",") + "/" + strings.Join(r.Resources, ",")
				if len(r.ResourceNames) > 0 {
					s += "[" + strings.Join(r.ResourceNames, ",") + "]"
				}
				return s + " " + strings.Join(r.Verbs, ",")
			}
			for _, o := range objs {
				switch o := o.(type) {
				case *rbacv1.ClusterRole:
					for _, r := range o.Rules {
						got = append(got, grant{"cluster", describe(r)})
					}
				case *rbacv1.Role:
					for _, r := range o.Rules {
						got = append(got, grant{o.Namespace, describe(r)})
					}
				case *rbacv1.ClusterRoleBinding:
					checkBinding(t, o.RoleRef, o.Subjects, "ClusterRole", o.Name)
					bound["cluster"] = true
				case *rbacv1.RoleBinding:
					checkBinding(t, o.RoleRef, o.Subjects, "Role", o.Name)
					bound[o.Namespace] = true
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("grants:\n got %v\nwant %v", got, tc.want)
			}
			for _, g := range got {
				if !bound[g.scope] {
					t.Errorf("no binding for %s", g.scope)
				}
			}
		})
	}
}

func checkBinding(t *testing.T, ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, name string) {
	t.Helper()
	if ref.Kind != kind || ref.Name != name || ref.APIGroup != rbacv1.GroupName {
		t.Errorf("binding %s refers to %+v", name, ref)
	}
	// Without spec.serviceAccountName the pods run as "default", which the RBAC binds.
	want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "monitoring"}}
	if !slices.Equal(subjects, want) {
		t.Errorf("binding %s subjects %v, want %v", name, subjects, want)
	}
}

func TestServiceAccount(t *testing.T) {
	cases := []struct {
		name     string
		p        *monitoringv1.Prometheus
		opts     Options
		want     string // generated ServiceAccount, "" for none
		podRunAs string
	}{
		{"runs as the namespace's default account, generating none, when spec.serviceAccountName is empty", newPrometheus(), newOptions(), "", ""},
		{"generates the named ServiceAccount when it does not exist", newPrometheus(withServiceAccountName("custom")), newOptions(), "custom", "custom"},
		{"uses an existing ServiceAccount without generating one", newPrometheus(withServiceAccountName("custom")), newOptions(serviceAccountExists()), "", "custom"},
		{"generates none when told one exists but none is named", newPrometheus(), newOptions(serviceAccountExists()), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := mustObjects(t, tc.p, tc.opts)
			var got string
			if sas := find[*corev1.ServiceAccount](objs); len(sas) > 0 {
				got = only(t, sas).Name
				if i := slices.Index(objs, workload.Object(sas[0])); i > slices.IndexFunc(objs, isRBAC) {
					t.Errorf("the ServiceAccount comes after the RBAC that binds it (at %d)", i)
				}
			}
			if got != tc.want {
				t.Errorf("generated ServiceAccount %q, want %q", got, tc.want)
			}
			pod := only(t, find[*appsv1.StatefulSet](objs)).Spec.Template.Spec
			if pod.ServiceAccountName != tc.podRunAs {
				t.Errorf("pod runs as %q, want %q", pod.ServiceAccountName, tc.podRunAs)
			}
			if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
				t.Errorf("the ServiceAccount token is not mounted")
			}
			// The generated RBAC binds the account the pods run as: "default" when the
			// pod template names none (the apiserver's ServiceAccount admission runs them as
			// that).
			bound := tc.podRunAs
			if bound == "" {
				bound = "default"
			}
			for _, b := range find[*rbacv1.RoleBinding](objs) {
				if b.Subjects[0].Name != bound {
					t.Errorf("RoleBinding %s binds %q, want %q", b.Name, b.Subjects[0].Name, bound)
				}
			}
		})
	}
}

func isRBAC(o workload.Object) bool {
	return o.GetObjectKind().GroupVersionKind().Group == rbacv1.GroupName
}

func TestObjectsOrder(t *testing.T) {
	objs := mustObjects(t, newPrometheus(withShards(2), withServiceAccountName("prometheus-k8s")), newOptions(discoveringEverywhere(), discoveringNodes()))
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
	}
	// The config first: a change reaches it before anything else is written.
	want := []string{
		"Secret/prometheus-k8s",
		"ServiceAccount/prometheus-k8s",
		"ClusterRole/lookout:prometheus:monitoring:k8s",
		"ClusterRoleBinding/lookout:prometheus:monitoring:k8s",
		"Role/lookout:prometheus:monitoring:k8s",
		"RoleBinding/lookout:prometheus:monitoring:k8s",
		"Secret/prometheus-k8s-web-config",
		"Service/prometheus-operated",
		"StatefulSet/prometheus-k8s",
		"StatefulSet/prometheus-k8s-shard-1",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("objects\n got %v\nwant %v", kinds, want)
	}
}

func TestDeterminism(t *testing.T) {
	cases := []struct {
		name string
		a, b Options
	}{
		{"renders the same bytes twice", newOptions(), newOptions()},
		{"does not depend on the order of discovery namespaces", newOptions(discoveringIn("c", "a", "b", "monitoring")), newOptions(discoveringIn("monitoring", "b", "c", "a", "a"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPrometheus(withShards(2), withPodMetadata(map[string]string{"a": "1", "b": "2", "c": "3"}, map[string]string{"x": "1", "y": "2"}),
				withSpec(func(s *monitoringv1.PrometheusSpec) { s.NodeSelector = map[string]string{"z": "1", "y": "2"} }))
			first := marshalObjects(t, mustObjects(t, p, tc.a))
			for range 5 {
				if again := marshalObjects(t, mustObjects(t, p, tc.b)); !bytes.Equal(first, again) {
					t.Fatalf("output changed:\n%s", lineDiff(string(first), string(again)))
				}
			}
		})
	}
}

func TestObjectsShareNoMemoryWithTheInput(t *testing.T) {
	p := newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
		s.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
		s.Tolerations = []corev1.Toleration{{Key: "a"}}
	}))
	opts := newOptions()
	before := marshalObjects(t, mustObjects(t, p, opts))
	objs := mustObjects(t, p, opts)
	pod := &only(t, find[*appsv1.StatefulSet](objs)).Spec.Template.Spec
	pod.NodeSelector["kubernetes.io/os"] = "windows"
	pod.Tolerations[0].Key = "b"
	// The configuration's bytes are shared, not copied: nobody changes them. The map
	// holding them is the result's own.
	data := secretNamed(t, objs, "prometheus-k8s").Data
	if &data["prometheus.yaml.gz"][0] != &opts.ConfigGzip[0] {
		t.Error("the configuration's bytes were copied")
	}
	data["prometheus.yaml.gz"] = []byte("X")
	if after := marshalObjects(t, mustObjects(t, p, opts)); !bytes.Equal(before, after) {
		t.Errorf("changing the result changed the input:\n%s", lineDiff(string(before), string(after)))
	}
}

func TestObjectsRefuses(t *testing.T) {
	cases := []struct {
		name string
		p    *monitoringv1.Prometheus
		opts Options
		want string
	}{
		{"refuses an invalid spec with its SpecError", newPrometheus(withReplicas(-1)), newOptions(), "spec.replicas"},
		{"refuses to render without a configuration", newPrometheus(), Options{ReloaderImage: "r"}, "no configuration"},
		{"refuses to render without a reloader image", newPrometheus(), Options{ConfigGzip: fakeConfig}, "no reloader image"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Objects(tc.p, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	var se *SpecError
	if _, err := Objects(newPrometheus(withReplicas(-1)), newOptions()); !errors.As(err, &se) {
		t.Errorf("error %T is not a *SpecError", err)
	}
}

func only[T any](t *testing.T, items []T) T {
	t.Helper()
	if len(items) != 1 {
		t.Fatalf("got %d items, want 1: %v", len(items), items)
	}
	return items[0]
}

func container(t *testing.T, cs []corev1.Container, name string) corev1.Container {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

func mount(t *testing.T, c corev1.Container, path string) corev1.VolumeMount {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return m
		}
	}
	t.Fatalf("container %s mounts nothing at %s", c.Name, path)
	return corev1.VolumeMount{}
}

func volume(t *testing.T, vs []corev1.Volume, name string) corev1.Volume {
	t.Helper()
	for _, v := range vs {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no volume %q", name)
	return corev1.Volume{}
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func serviceNamed(t *testing.T, objs []workload.Object, name string) *corev1.Service {
	t.Helper()
	for _, s := range find[*corev1.Service](objs) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no Service %q", name)
	return nil
}

func secretNamed(t *testing.T, objs []workload.Object, name string) *corev1.Secret {
	t.Helper()
	for _, s := range find[*corev1.Secret](objs) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no Secret %q", name)
	return nil
}

// TestQueryLimitsOfZeroAreNotFlags: 0 in spec.query means Prometheus's default, as with the
// existing operator; written as a flag, --query.max-samples=0 would refuse every query.
func TestQueryLimitsOfZeroAreNotFlags(t *testing.T) {
	for _, n := range []int32{0, 5} {
		p := newPrometheus(withSpec(func(s *monitoringv1.PrometheusSpec) {
			s.Query = &monitoringv1.QuerySpec{MaxSamples: ptrTo(n)}
		}))
		args := only(t, find[*appsv1.StatefulSet](mustObjects(t, p, newOptions()))).Spec.Template.Spec.Containers[0].Args
		for _, flag := range []string{"--query.max-samples="} {
			has := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, flag) })
			if has != (n > 0) {
				t.Errorf("query limits %d: flag %s present = %v in %v", n, flag, has, args)
			}
		}
	}
}
