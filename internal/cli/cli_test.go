package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderEmitsTheRuleFilesOfTheExamples(t *testing.T) {
	var out, errOut bytes.Buffer
	err := Render(context.Background(), RenderOptions{Files: []string{"../../examples"}, Output: OutputRules, ReloaderImage: "r:1"}, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# ConfigMap prometheus-platform-rulefiles-0, file default-example-rules-.yaml", "record: job:up:sum", "alert: TargetDown"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("render -o rules lacks %q:\n%s", want, out.String())
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("unexpected rejections: %s", errOut.String())
	}
}

func TestRenderOfObjectsIsDeterministic(t *testing.T) {
	var a, b, errOut bytes.Buffer
	for _, buf := range []*bytes.Buffer{&a, &b} {
		if err := Render(context.Background(), RenderOptions{Files: []string{"../../examples"}, ReloaderImage: "r:1"}, buf, &errOut); err != nil {
			t.Fatal(err)
		}
	}
	if a.String() != b.String() || !strings.Contains(a.String(), "kind: StatefulSet") {
		t.Error("two renders of the same files differ, or hold no StatefulSet")
	}
}

func TestExplainNamesTheLabelThatDoesNotMatch(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"prom.yaml": `apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: k8s, namespace: monitoring}
spec:
  serviceMonitorSelector: {matchLabels: {team: platform}}
  serviceMonitorNamespaceSelector: {}
`,
		"sm.yaml": `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: checkout, namespace: shop, labels: {team: payments}}
spec:
  selector: {matchLabels: {app: checkout}}
  endpoints: [{port: metrics}]
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := explainFiles(t, []string{dir}, ExplainOptions{Kind: "servicemonitor", Key: "shop/checkout"})
	want := `✗ Prometheus monitoring/k8s does not select it: serviceMonitorSelector: label team=platform is required but the value is "payments"`
	if !strings.Contains(out, want) {
		t.Errorf("explain said:\n%s\nwant a line with:\n%s", out, want)
	}
}
