package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// kube-prometheus's alertmanager-main Secret, written with stringData as it ships.
const kubePrometheusAlertmanager = `apiVersion: monitoring.coreos.com/v1
kind: Alertmanager
metadata:
  name: main
  namespace: monitoring
spec:
  replicas: 3
  version: 0.28.1
---
apiVersion: v1
kind: Secret
metadata:
  name: alertmanager-main
  namespace: monitoring
stringData:
  alertmanager.yaml: |-
    route:
      receiver: Default
      group_by: [namespace]
      routes:
      - receiver: Watchdog
        matchers: [alertname = Watchdog]
    receivers:
    - name: Default
    - name: Watchdog
data:
  other.tmpl: b2xk
type: Opaque
`

func TestAStringDataSecretIsReadAsTheAPIServerStoresIt(t *testing.T) {
	objs, err := decode([]byte(kubePrometheusAlertmanager + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: both, namespace: x}\ndata: {k: b2xk}\nstringData: {k: new}\n"))
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]*corev1.Secret{}
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok {
			secrets[s.Name] = s
		}
	}
	am := secrets["alertmanager-main"]
	if am == nil || !strings.Contains(string(am.Data["alertmanager.yaml"]), "receiver: Default") || string(am.Data["other.tmpl"]) != "old" || am.StringData != nil {
		t.Errorf("alertmanager-main: data %q stringData %q, want alertmanager.yaml moved into data next to other.tmpl", am.Data, am.StringData)
	}
	if both := secrets["both"]; both == nil || string(both.Data["k"]) != "new" {
		t.Errorf("stringData must win over data for the same key: %+v", both)
	}
}

func TestRenderAlertmanagerUsesTheStringDataBaseConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "am.yaml"), []byte(kubePrometheusAlertmanager), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := Render(context.Background(), RenderOptions{Files: []string{dir}, Output: OutputAlertmanager, ReloaderImage: "r:1"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"receiver: Default", "name: Watchdog"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("render -o alertmanager lacks %q (the user's base config):\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), `"null"`) {
		t.Errorf("render -o alertmanager fell back to the null receiver:\n%s", out.String())
	}
}
