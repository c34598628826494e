package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestPrometheusPodFieldsReachTheStatefulSetAndARefusedFieldKeepsIt: a container patch, an
// added sidecar, an extra volume and its mount, and a config section (spec.tsdb) reach the
// applied StatefulSet and config; then a field the named version does not know turns the
// Prometheus Reconciled=False with an Event naming it and the minimum version, and the
// running StatefulSet and config stay as they were.
func TestPrometheusPodFieldsReachTheStatefulSetAndARefusedFieldKeepsIt(t *testing.T) {
	ns := newNamespace(t)
	p := newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) {
		p.Spec.Version = "v3.5.0"
		p.Spec.Containers = []corev1.Container{
			{Name: "prometheus", Env: []corev1.EnvVar{{Name: "GOMEMLIMIT", Value: "1GiB"}}},
			{Name: "sidecar", Image: "example.com/sidecar:v1", VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}},
		}
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		p.Spec.TSDB = &monitoringv1.TSDBSpec{OutOfOrderTimeWindow: ptrTo(monitoringv1.Duration("30m"))}
	})
	mustCreate(t, p)

	key := client.ObjectKey{Namespace: ns, Name: "prometheus-main"}
	var sts appsv1.StatefulSet
	eventually(t, "the applied StatefulSet has the patch, the sidecar and the volume", func() (bool, error) {
		if err := k8s.Get(testCtx, key, &sts); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		pod := &sts.Spec.Template.Spec
		var names []string
		var prom *corev1.Container
		for i := range pod.Containers {
			names = append(names, pod.Containers[i].Name)
			if pod.Containers[i].Name == "prometheus" {
				prom = &pod.Containers[i]
			}
		}
		if !slices.Equal(names, []string{"prometheus", "config-reloader", "sidecar"}) || prom == nil {
			return false, nil
		}
		env := slices.ContainsFunc(prom.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" && e.Value == "1GiB" })
		mount := slices.ContainsFunc(prom.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "scratch" && m.MountPath == "/scratch" })
		vol := slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "scratch" && v.EmptyDir != nil })
		// The patch merges into the generated container: its image and args are kept.
		return env && mount && vol && strings.HasPrefix(prom.Image, "quay.io/prometheus/prometheus:v3.5.0") && len(prom.Args) > 0, nil
	})
	eventually(t, "storage.tsdb reaches the config", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		return err == nil && strings.Contains(cfg, "\nstorage:\n  tsdb:\n    out_of_order_time_window: 30m\n"), err
	})
	eventually(t, "the Prometheus is Reconciled", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue && c.ObservedGeneration == p.Generation, nil
	})
	before := sts.DeepCopy()
	cfgBefore, err := configOf(ns, "main")
	if err != nil {
		t.Fatal(err)
	}

	// A chunk encoding Prometheus v3.5 does not know: refused, nothing written.
	update(t, p, func(p *monitoringv1.Prometheus) {
		p.Spec.TSDB.ChunkEncoding = &monitoringv1.ChunkEncodingSpec{Floats: ptrTo(monitoringv1.ChunkEncodingFloatsXor2)}
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "more", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	})
	const want = "spec.tsdb.chunkEncoding: requires Prometheus v3.13.0 or later, spec.version is v3.5.0"
	eventually(t, "Reconciled=False names the field and the minimum version", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionFalse && c.ObservedGeneration == p.Generation &&
			c.Reason == "UnsupportedField" && strings.Contains(c.Message, want), nil
	})
	eventually(t, "a Warning Event on the Prometheus says the same", func() (bool, error) {
		var evs eventsv1.EventList
		if err := k8s.List(testCtx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == monitoringv1.PrometheusesKind && e.Regarding.Name == "main" && e.Type == corev1.EventTypeWarning &&
				e.Reason == "UnsupportedField" && strings.Contains(e.Note, want) {
				return true, nil
			}
		}
		return false, nil
	})
	var after appsv1.StatefulSet
	if err := k8s.Get(testCtx, key, &after); err != nil {
		t.Fatal(err)
	}
	if after.Generation != before.Generation || slices.ContainsFunc(after.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "more" }) {
		t.Errorf("the running StatefulSet changed while the spec was refused: generation %d → %d", before.Generation, after.Generation)
	}
	if cfg, _ := configOf(ns, "main"); cfg != cfgBefore {
		t.Errorf("the config changed while the spec was refused:\n%s", cfg)
	}
}

// TestPrometheusWebTLSWaitsForItsSecretThenServesHTTPS: web.tlsConfig naming a Secret that
// does not exist yet is reported (not a pod stuck mounting it); once the Secret exists the
// StatefulSet projects it, probes use HTTPS and the reloader reloads over https.
func TestPrometheusWebTLSWaitsForItsSecretThenServesHTTPS(t *testing.T) {
	ns := newNamespace(t)
	sel := func(key string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "web-tls"}, Key: key}
	}
	p := newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) {
		p.Spec.Web = &monitoringv1.PrometheusWebSpec{WebConfigFileFields: monitoringv1.WebConfigFileFields{TLSConfig: &monitoringv1.WebTLSConfig{
			Cert: monitoringv1.SecretOrConfigMap{Secret: sel("tls.crt")}, KeySecret: *sel("tls.key"),
		}}}
	})
	mustCreate(t, p)
	eventually(t, "Reconciled=False names the missing Secret", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionFalse && c.Reason == "SecretNotFound" &&
			strings.Contains(c.Message, "spec.web.tlsConfig.cert.secret: Secret "+ns+"/web-tls not found"), nil
	})

	pem := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(repoRoot, "internal", "render", "scrape", "testdata", "tls", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	mustCreate(t, &corev1.Secret{ObjectMeta: metaName(ns, "web-tls"),
		Data: map[string][]byte{"tls.crt": pem("client.crt"), "tls.key": pem("client.key")}})
	key := client.ObjectKey{Namespace: ns, Name: "prometheus-main"}
	eventually(t, "the StatefulSet projects the Secret and probes over HTTPS", func() (bool, error) {
		var sts appsv1.StatefulSet
		if err := k8s.Get(testCtx, key, &sts); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		pod := &sts.Spec.Template.Spec
		projected := slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "web-tls" && v.Projected != nil })
		prom, reloader := pod.Containers[0], pod.Containers[1]
		https := prom.ReadinessProbe != nil && prom.ReadinessProbe.HTTPGet.Scheme == corev1.URISchemeHTTPS
		return projected && https && slices.Contains(reloader.Args, "--reload-url=https://127.0.0.1:9090/-/reload"), nil
	})
	eventually(t, "the Prometheus is Reconciled", func() (bool, error) {
		if err := k8s.Get(testCtx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		c := condition(p, monitoringv1.Reconciled)
		return c != nil && c.Status == monitoringv1.ConditionTrue, nil
	})
}
