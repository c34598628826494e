package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/cli"
	"github.com/lookout-operator/lookout/internal/scheme"
)

func TestRenderFromFilesIsByteIdenticalToWhatTheControllerWrote(t *testing.T) {
	ns := newNamespace(t)
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
		Data: map[string][]byte{"user": []byte("scraper"), "pass": []byte("s3cret")}})
	mustCreate(t, newServiceMonitor(ns, "with-auth", func(sm *monitoringv1.ServiceMonitor) {
		sm.Spec.Endpoints[0].BasicAuth = &monitoringv1.BasicAuth{
			Username: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "user"},
			Password: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "pass"},
		}
	}))
	mustCreate(t, newServiceMonitor(ns, "bad", withRelabeling(monitoringv1.RelabelConfig{
		SourceLabels: []monitoringv1.LabelName{"__address__"}, Regex: "(", Action: "keep"})))
	mustCreate(t, newRule(ns, "rules", "sum(up)"))
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alerting"},
		Data: map[string][]byte{"relabel.yaml": []byte("- target_label: cluster\n  replacement: eu-1\n")}})
	p := newPrometheus(ns, "main", func(p *monitoringv1.Prometheus) {
		p.Spec.RuleSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		p.Spec.Alerting = &monitoringv1.AlertingSpec{Alertmanagers: []monitoringv1.AlertmanagerEndpoints{{
			Name: "alertmanager-main", Port: intstr.FromString("web"),
			BasicAuth: &monitoringv1.BasicAuth{
				Username: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "user"},
				Password: corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "pass"},
			},
		}}}
		p.Spec.AdditionalAlertRelabelConfigs = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "alerting"}, Key: "relabel.yaml"}
	})
	mustCreate(t, p)
	eventually(t, "the controller wrote config and rules", func() (bool, error) {
		cfg, err := configOf(ns, "main")
		var cm corev1.ConfigMap
		return err == nil && strings.Contains(cfg, "with-auth") && strings.Contains(cfg, "replacement: eu-1") &&
			k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "prometheus-main-rulefiles-0"}, &cm) == nil && len(cm.Data) == 1, nil
	})

	// The user exports the objects (as `kubectl get -o yaml` would) ...
	var objs []client.Object
	collect := func(list client.ObjectList) {
		if err := k8s.List(testCtx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, _ := metaItems(list)
		objs = append(objs, items...)
	}
	collect(&monitoringv1.PrometheusList{})
	collect(&monitoringv1.ServiceMonitorList{})
	collect(&monitoringv1.PrometheusRuleList{})
	for _, name := range []string{"creds", "alerting"} {
		var s corev1.Secret
		if err := k8s.Get(testCtx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &s)
	}
	dir := exportObjects(t, objs)

	// ... and renders them offline.
	var out, errOut bytes.Buffer
	err := cli.Render(testCtx, cli.RenderOptions{Files: []string{dir}, Prometheus: ns + "/main",
		Output: cli.OutputConfig, ReloaderImage: "lookout-reloader:test"}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := configOf(ns, "main")
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != cluster {
		t.Errorf("rendered config differs from the controller's:\n--- render\n%s\n--- controller\n%s", out.String(), cluster)
	}
	if !strings.Contains(errOut.String(), "rejected: ServiceMonitor "+ns+"/bad") {
		t.Errorf("render did not report the rejected monitor on stderr: %q", errOut.String())
	}

	// Every object, not only the config: compare the data of each Secret
	// and ConfigMap the controller applied with render's.
	fileObjs, err := cli.ReadFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := cli.FileReader(fileObjs)
	if err != nil {
		t.Fatal(err)
	}
	var fromFiles monitoringv1.Prometheus
	if err := reader.Get(testCtx, client.ObjectKey{Namespace: ns, Name: "main"}, &fromFiles); err != nil {
		t.Fatal(err)
	}
	d, err := cli.RenderOne(testCtx, reader, &fromFiles, "lookout-reloader:test")
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, want := range d.Objects {
		switch w := want.(type) {
		case *corev1.Secret:
			var got corev1.Secret
			if err := k8s.Get(testCtx, client.ObjectKeyFromObject(w), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Data, w.Data) {
				t.Errorf("Secret %s: rendered data differs from the cluster's", w.Name)
			}
			compared++
		case *corev1.ConfigMap:
			var got corev1.ConfigMap
			if err := k8s.Get(testCtx, client.ObjectKeyFromObject(w), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Data, w.Data) {
				t.Errorf("ConfigMap %s: rendered data differs from the cluster's", w.Name)
			}
			compared++
		}
	}
	if compared < 3 {
		t.Errorf("compared %d Secrets/ConfigMaps, want config, web-config and rules", compared)
	}
}

// exportObjects writes objs into a directory as `kubectl get -o yaml` would, for render -f.
func exportObjects(t *testing.T, objs []client.Object) string {
	t.Helper()
	dir := t.TempDir()
	var buf bytes.Buffer
	for _, o := range objs {
		gvks, _, _ := scheme.Scheme.ObjectKinds(o)
		o.GetObjectKind().SetGroupVersionKind(gvks[0])
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	if err := os.WriteFile(filepath.Join(dir, "export.yaml"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := list.(type) {
	case *monitoringv1.PrometheusList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *monitoringv1.ServiceMonitorList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *monitoringv1.PrometheusRuleList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out, nil
}
