package node

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/lookout-operator/lookout/internal/controlplane"
	"github.com/lookout-operator/lookout/internal/install"
)

// The overlay is the base with the node's images and nothing else: what the node test
// proves about it holds for the base a user applies. So is the PostgreSQL-only one, with
// --postgres-image naming the imported lookout-postgres.
func TestTheNodeOverlayChangesOnlyTheOperatorsImagesAndPullPolicy(t *testing.T) {
	kubectl, err := controlplane.Kubectl.Ensure(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	imgs := Images{Lookout: "lookout.test/lookout:node-test", Reloader: "lookout.test/lookout-reloader:node-test"}
	const postgres = "lookout.test/lookout-postgres:node-test"
	cases := []struct {
		name, base, reloader string
		extra                []any
		write                func(dir string) error
	}{
		{"the generated-RBAC base", install.GeneratedRBACDir, imgs.Reloader, nil,
			func(dir string) error { return WriteOverlay(dir, root, imgs) }},
		{"the PostgreSQL-only base", install.PostgresOnlyDir, "", []any{"--postgres-image=" + postgres},
			func(dir string) error { return WritePostgresOverlay(dir, root, imgs.Lookout, postgres) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.write(dir); err != nil {
				t.Fatal(err)
			}
			base, overlay := renderKustomize(t, kubectl, filepath.Join(root, tc.base)), renderKustomize(t, kubectl, dir)
			if len(base) != len(overlay) {
				t.Errorf("the overlay renders %d objects, the base %d", len(overlay), len(base))
			}
			// The base's Deployment with the changes made by hand.
			key := "Deployment " + OperatorNamespace + "/" + OperatorDeployment
			want := base[key]
			if want == nil {
				t.Fatalf("the base has no %s", key)
			}
			c := want["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			if c["image"] != install.ImageRepo+":"+install.Version {
				t.Fatalf("the base's operator image is %v", c["image"])
			}
			c["image"] = imgs.Lookout
			c["imagePullPolicy"] = "Never"
			args := c["args"].([]any)
			replaced := 0
			for i, a := range args {
				if strings.HasPrefix(a.(string), "--reloader-image=") {
					if tc.reloader != "" {
						args[i] = "--reloader-image=" + tc.reloader
					}
					replaced++
				}
			}
			if replaced != 1 {
				t.Fatalf("the base's operator has %d --reloader-image arguments: %v", replaced, args)
			}
			c["args"] = append(args, tc.extra...)
			for k, o := range base {
				if !reflect.DeepEqual(overlay[k], o) {
					got, _ := yaml.Marshal(overlay[k])
					exp, _ := yaml.Marshal(o)
					t.Errorf("the overlay renders %s as\n%s\nwant\n%s", k, got, exp)
				}
			}
		})
	}
}

// renderKustomize is `kubectl kustomize dir`, by kind, namespace and name.
func renderKustomize(t *testing.T, kubectl, dir string) map[string]map[string]any {
	t.Helper()
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	objs := map[string]map[string]any{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		md, _ := o["metadata"].(map[string]any)
		objs[o["kind"].(string)+" "+str(md["namespace"])+"/"+str(md["name"])] = o
	}
	return objs
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
