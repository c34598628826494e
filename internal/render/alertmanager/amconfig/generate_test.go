package amconfig

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	amcfg "github.com/prometheus/alertmanager/config"
	"github.com/prometheus/alertmanager/dispatch"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var updateGenerate = flag.Bool("update", false, "rewrite the golden files in testdata/generate")

// caseInput reads testdata/generate/<name>/input.yaml: one Alertmanager, the
// AlertmanagerConfigs it selects (all of them, the one its
// spec.alertmanagerConfiguration names too), its user Secret and the referenced Secrets and
// ConfigMaps.
func caseInput(t testing.TB, dir string) Input {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := decodeInput(raw)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return in
}

func decodeInput(raw []byte) (Input, error) {
	in := Input{Secrets: map[string]*corev1.Secret{}, ConfigMaps: map[string]*corev1.ConfigMap{}}
	var configs []*monitoringv1alpha1.AlertmanagerConfig
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return in, err
		}
		switch meta.Kind {
		case "Alertmanager":
			in.Alertmanager = &monitoringv1.Alertmanager{}
			if err := yaml.UnmarshalStrict(doc, in.Alertmanager); err != nil {
				return in, err
			}
		case "AlertmanagerConfig":
			c := &monitoringv1alpha1.AlertmanagerConfig{}
			if err := yaml.UnmarshalStrict(doc, c); err != nil {
				return in, err
			}
			if c.Namespace == "" {
				c.Namespace = "default"
			}
			configs = append(configs, c)
		case "Secret":
			s := &corev1.Secret{}
			if err := yaml.UnmarshalStrict(doc, s); err != nil {
				return in, err
			}
			in.Secrets[s.Namespace+"/"+s.Name] = s
		case "ConfigMap":
			c := &corev1.ConfigMap{}
			if err := yaml.UnmarshalStrict(doc, c); err != nil {
				return in, err
			}
			in.ConfigMaps[c.Namespace+"/"+c.Name] = c
		default:
			return in, fmt.Errorf("unexpected kind %q", meta.Kind)
		}
	}
	if in.Alertmanager == nil {
		return in, errors.New("no Alertmanager")
	}
	am := in.Alertmanager
	userSecret := am.Namespace + "/" + "alertmanager-" + am.Name
	if am.Spec.ConfigSecret != "" {
		userSecret = am.Namespace + "/" + am.Spec.ConfigSecret
	}
	if s := in.Secrets[userSecret]; s != nil {
		in.Base = map[string][]byte{}
		for k, v := range s.StringData {
			in.Base[k] = []byte(v)
		}
		for k, v := range s.Data {
			in.Base[k] = v
		}
	}
	// Like the gather, the global AlertmanagerConfig is both Global and, when the
	// selector matches it, one of Configs.
	for _, c := range configs {
		if ac := am.Spec.AlertmanagerConfiguration; ac != nil && c.Namespace == am.Namespace && c.Name == ac.Name {
			in.Global = c
		}
		in.Configs = append(in.Configs, c)
	}
	return in, nil
}

func formatVerdicts(vs []Verdict) string {
	var b strings.Builder
	for _, v := range vs {
		if v.Accepted {
			fmt.Fprintf(&b, "%s/%s: Accepted\n", v.Namespace, v.Name)
		} else {
			fmt.Fprintf(&b, "%s/%s: %s: %s\n", v.Namespace, v.Name, v.Reason, v.Message)
		}
	}
	return b.String()
}

// TestGenerateGolden runs every case under testdata/generate: the generated config and
// the verdicts must equal the goldens, and every generated config must load with
// Alertmanager's own parser. A case whose base config is refused has error.golden instead.
func TestGenerateGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/generate/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			in := caseInput(t, dir)
			res, err := Generate(in)
			var got map[string]string
			if err != nil {
				var be *BaseConfigError
				if !errors.As(err, &be) {
					t.Fatalf("Generate: %v (not a BaseConfigError)", err)
				}
				got = map[string]string{"error.golden": be.Reason + ": " + be.Message + "\n"}
			} else {
				if _, err := amcfg.Load(string(res.Config)); err != nil {
					t.Fatalf("Alertmanager refuses the generated config: %v\n%s", err, res.Config)
				}
				got = map[string]string{"alertmanager.golden.yaml": string(res.Config), "verdicts.golden": formatVerdicts(res.Verdicts)}
				for name, content := range res.Files {
					got["file-"+name+".golden"] = string(content)
				}
			}
			for name, content := range got {
				path := filepath.Join(dir, name)
				if *updateGenerate {
					if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if string(want) != content {
					t.Errorf("%s differs from the golden file; got:\n%s", path, content)
				}
			}
			// No stale goldens of another kind.
			existing, _ := filepath.Glob(filepath.Join(dir, "*golden*"))
			for _, p := range existing {
				if _, ok := got[filepath.Base(p)]; !ok {
					if *updateGenerate {
						_ = os.Remove(p)
						continue
					}
					t.Errorf("%s is a golden file the case no longer produces", p)
				}
			}
		})
	}
}

// TestGenerateIsDeterministic: the order the configs arrive in does not matter.
func TestGenerateIsDeterministic(t *testing.T) {
	in := caseInput(t, "testdata/generate/several-namespaces-rejections")
	first, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		shuffled := in
		shuffled.Configs = slices.Clone(in.Configs)
		slices.Reverse(shuffled.Configs)
		if i%2 == 1 {
			shuffled.Configs = append(shuffled.Configs[1:], shuffled.Configs[0])
		}
		got, err := Generate(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Config, got.Config) || formatVerdicts(first.Verdicts) != formatVerdicts(got.Verdicts) {
			t.Fatalf("the output depends on the order of the configs")
		}
	}
}

// TestLateSecretTurnsRejectionIntoAcceptance: a config rejected for a missing Secret is
// accepted once the Secret exists, and SecretKeys names that Secret from the start, so
// the caller watches it.
func TestLateSecretTurnsRejectionIntoAcceptance(t *testing.T) {
	in := caseInput(t, "testdata/generate/several-namespaces-rejections")
	late := "team-b/slack-late"
	if !slices.Contains(SecretKeys(in), late) {
		t.Fatalf("SecretKeys %v lacks %s", SecretKeys(in), late)
	}
	res, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	v := verdictOf(t, res, "team-b", "missing-secret")
	if v.Accepted || v.Reason != ReasonSecretNotFound {
		t.Fatalf("verdict %+v, want SecretNotFound", v)
	}
	in.Secrets[late] = &corev1.Secret{Data: map[string][]byte{"url": []byte("https://hooks.slack.example/late")}}
	res, err = Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	if v := verdictOf(t, res, "team-b", "missing-secret"); !v.Accepted {
		t.Fatalf("verdict %+v after the Secret appeared", v)
	}
	if !bytes.Contains(res.Config, []byte("https://hooks.slack.example/late")) {
		t.Fatalf("the late Secret's URL is not in the config:\n%s", res.Config)
	}
}

func verdictOf(t *testing.T, res *Result, ns, name string) Verdict {
	t.Helper()
	for _, v := range res.Verdicts {
		if v.Namespace == ns && v.Name == name {
			return v
		}
	}
	t.Fatalf("no verdict for %s/%s", ns, name)
	return Verdict{}
}

// FuzzGenerate: any AlertmanagerConfig spec, merged into a base config, never panics, and
// whatever Generate returns loads in Alertmanager; a rejected config carries a reason.
// The seeds are every AlertmanagerConfig of the golden cases.
func FuzzGenerate(f *testing.F) {
	dirs, _ := filepath.Glob("testdata/generate/*")
	for _, dir := range dirs {
		in := caseInput(f, dir)
		for _, c := range in.Configs {
			spec, err := yaml.Marshal(c.Spec)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(string(spec))
		}
	}
	base := caseInput(f, "testdata/generate/several-namespaces-rejections")
	f.Fuzz(func(t *testing.T, spec string) {
		c := &monitoringv1alpha1.AlertmanagerConfig{}
		c.Namespace, c.Name = "fuzz", "config"
		if err := yaml.Unmarshal([]byte(spec), &c.Spec); err != nil {
			return
		}
		in := base
		in.Configs = append(slices.Clone(base.Configs), c)
		_ = SecretKeys(in)
		_ = ConfigMapKeys(in)
		res, err := Generate(in)
		if err != nil {
			t.Fatalf("Generate fails as a whole for one bad AlertmanagerConfig: %v", err)
		}
		if _, err := amcfg.Load(string(res.Config)); err != nil {
			t.Fatalf("Alertmanager refuses the generated config: %v", err)
		}
		for _, v := range res.Verdicts {
			if !v.Accepted && (v.Reason == "" || v.Message == "") {
				t.Fatalf("rejected without a reason: %+v", v)
			}
		}
	})
}

// TestRoutingOfTheGeneratedConfig asks Alertmanager's own router where alerts go: each
// namespace's alerts reach its AlertmanagerConfig's receiver (and, because the sub-routes
// continue, the base config's routes still see them), other namespaces' alerts do not.
func TestRoutingOfTheGeneratedConfig(t *testing.T) {
	for _, tc := range []struct {
		dir    string
		labels model.LabelSet
		want   []string
	}{
		{"user-secret-one-config", model.LabelSet{"namespace": "team-a", "severity": "page"}, []string{"team-a/webhook/hook"}},
		{"user-secret-one-config", model.LabelSet{"namespace": "team-b", "severity": "page"}, []string{"default"}},
		{"user-secret-one-config", model.LabelSet{"namespace": "team-a", "severity": "critical"}, []string{"critical"}},
		{"except-alertmanager-namespace", model.LabelSet{"namespace": "anything"}, []string{"monitoring/platform/all"}},
		{"except-alertmanager-namespace", model.LabelSet{"namespace": "team-a"}, []string{"monitoring/platform/all", "team-a/own/mine"}},
		{"strategy-none", model.LabelSet{"namespace": "elsewhere", "team": "a"}, []string{"team-a/own/mine"}},
		{"strategy-none", model.LabelSet{"namespace": "team-a", "team": "b"}, []string{`"null"`}},
		{"nested-routes-intervals-inhibit", model.LabelSet{"namespace": "team-a", "service": "api", "team": "legacy-x", "severity": "critical"}, []string{"team-a/tree/pager"}},
		{"nested-routes-intervals-inhibit", model.LabelSet{"namespace": "team-b", "service": "api", "team": "legacy-x", "severity": "critical"}, []string{`"null"`}},
		{"global-alertmanager-configuration", model.LabelSet{"namespace": "team-a", "severity": "critical"}, []string{"team-a/own/mine", "monitoring/global/critical"}},
	} {
		in := caseInput(t, filepath.Join("testdata/generate", tc.dir))
		res, err := Generate(in)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := amcfg.Load(string(res.Config))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range dispatch.NewRoute(cfg.Route, nil).Match(tc.labels) {
			name := r.RouteOpts.Receiver
			if name == nullReceiver {
				name = `"null"`
			}
			got = append(got, name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v goes to %v, want %v", tc.dir, tc.labels, got, tc.want)
		}
	}
}

// kube-prometheus's v0.28.1 Alertmanager and an AlertmanagerConfig whose webhook sets a
// v0.32 field: the field is left out and named, the namespace's route stays.
func TestATooNewFieldIsDroppedAndTheAlertmanagerConfigStays(t *testing.T) {
	in := baseInput("", &monitoringv1alpha1.AlertmanagerConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a"},
		Spec: monitoringv1alpha1.AlertmanagerConfigSpec{
			Route: &monitoringv1alpha1.Route{Receiver: "hook"},
			Receivers: []monitoringv1alpha1.Receiver{{Name: "hook", WebhookConfigs: []monitoringv1alpha1.WebhookConfig{{
				URL: ptrTo("https://hooks.example.com/a"), Payload: ptrTo(`{"a": 1}`)}}}},
		},
	})
	in.Alertmanager.Spec.Version = "v0.28.1"
	res, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verdicts[0]
	if !v.Accepted || v.Reason != ReasonFieldsDropped || !strings.Contains(v.Message, "spec.receivers[0].webhookConfigs[0].payload") {
		t.Errorf("verdict %+v, want accepted with the payload named as dropped", v)
	}
	cfg, err := amcfg.Load(string(res.Config))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Route.Routes) != 1 || cfg.Route.Routes[0].Receiver != "team/a/hook" {
		t.Errorf("the AlertmanagerConfig's route is not there:\n%s", res.Config)
	}
	if strings.Contains(string(res.Config), "payload") {
		t.Errorf("the v0.32 field is written for v0.28.1:\n%s", res.Config)
	}
}
