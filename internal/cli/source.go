// Package cli implements the commands users run by hand: render and explain.
// They use the controller's own gather, selection and render code, so what
// they print is what the operator would write.
package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/lookout-operator/lookout/internal/scheme"
)

// ReadFiles decodes every Kubernetes object in the given files and
// directories (recursively; *.yaml, *.yml, *.json), including List kinds.
// Objects of kinds Lookout does not know are skipped.
func ReadFiles(paths []string) ([]client.Object, error) {
	var files []string
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			if path == p || strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".json") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
	}
	sort.Strings(files)
	var out []client.Object
	for _, f := range files {
		var b []byte
		var err error
		if f == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, err
		}
		objs, err := decode(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

func decode(b []byte) ([]client.Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []client.Object
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				obj, err := typed(&list.Items[i])
				if err != nil {
					return nil, err
				}
				if obj != nil {
					out = append(out, obj)
				}
			}
			continue
		}
		obj, err := typed(u)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
}

func typed(u *unstructured.Unstructured) (client.Object, error) {
	gvk := u.GroupVersionKind()
	if !scheme.Scheme.Recognizes(gvk) {
		return nil, nil
	}
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
	}
	co := obj.(client.Object)
	if s, ok := co.(*corev1.Secret); ok {
		applyStringData(s)
	}
	if co.GetNamespace() == "" && namespaced(gvk.Kind) {
		co.SetNamespace("default")
	}
	return co, nil
}

// applyStringData does what the apiserver does on a write: each key of stringData
// goes into data, over a key of the same name there (kube-prometheus writes its
// alertmanager-main Secret with stringData).
func applyStringData(s *corev1.Secret) {
	if len(s.StringData) == 0 {
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

func namespaced(kind string) bool {
	switch kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Node":
		return false
	}
	return true
}

// FileReader serves objects read from files with the semantics of the
// controller's cache (label selectors, namespaces), so the controller's
// gather code reads files unchanged.
func FileReader(objs []client.Object) (client.Client, error) {
	b := fake.NewClientBuilder().WithScheme(scheme.Scheme)
	seen := map[string]bool{}
	var unique []client.Object
	for _, o := range objs {
		gvk, err := apiGVK(o)
		if err != nil {
			return nil, err
		}
		key := gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if seen[key] {
			return nil, fmt.Errorf("%s %s/%s is given twice", gvk.Kind, o.GetNamespace(), o.GetName())
		}
		seen[key] = true
		// The in-memory store refuses objects that carry a resourceVersion.
		o.SetResourceVersion("")
		unique = append(unique, o)
	}
	return b.WithObjects(unique...).WithStatusSubresource(unique...).Build(), nil
}

func apiGVK(o client.Object) (schemaGVK, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		return schemaGVK{}, fmt.Errorf("unknown kind %T: %v", o, err)
	}
	return schemaGVK{Kind: gvks[0].Kind}, nil
}

type schemaGVK struct{ Kind string }
