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
// proves about it holds for the base a user applies.
func TestTheNodeOverlayChangesOnlyTheOperatorsImagesAndPullPolicy(t *testing.T) {
	kubectl, err := controlplane.Kubectl.Ensure(context.Background(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir := t.TempDir()
	imgs := Images{Lookout: "lookout.test/lookout:node-test", Reloader: "lookout.test/lookout-reloader:node-test"}
	if err := WriteOverlay(dir, root, imgs); err != nil {
		t.Fatal(err)
	}
	render := func(d string) map[string]map[string]any {
		out, err := exec.Command(kubectl, "kustomize", d).Output()
		if err != nil {
			t.Fatalf("kubectl kustomize %s: %v", d, err)
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
	base, overlay := render(filepath.Join(root, install.GeneratedRBACDir)), render(dir)
	if len(base) != len(overlay) {
		t.Errorf("the overlay renders %d objects, the base %d", len(overlay), len(base))
	}

	// The base's Deployment with the three changes made by hand.
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
			args[i] = "--reloader-image=" + imgs.Reloader
			replaced++
		}
	}
	if replaced != 1 {
		t.Fatalf("the base's operator has %d --reloader-image arguments: %v", replaced, args)
	}

	for k, o := range base {
		if !reflect.DeepEqual(overlay[k], o) {
			got, _ := yaml.Marshal(overlay[k])
			exp, _ := yaml.Marshal(o)
			t.Errorf("the overlay renders %s as\n%s\nwant\n%s", k, got, exp)
		}
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
