package integration

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestEveryMonitoringCRDIsEstablished(t *testing.T) {
	want := []string{
		"alertmanagerconfigs", "alertmanagers", "podmonitors", "probes", "prometheusagents",
		"prometheuses", "prometheusrules", "scrapeconfigs", "servicemonitors", "thanosrulers",
	}
	c, err := client.New(cp.RESTConfig, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = apiextensionsv1.AddToScheme(c.Scheme())
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(testCtx, &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, crd := range list.Items {
		if crd.Spec.Group != "monitoring.coreos.com" {
			continue
		}
		got = append(got, crd.Spec.Names.Plural)
		established := false
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		if !established {
			t.Errorf("CRD %s is not Established: %+v", crd.Name, crd.Status.Conditions)
		}
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("monitoring.coreos.com CRDs = %v, want %v", got, want)
	}
}

func TestOneObjectOfEachKindFromExamplesIsAccepted(t *testing.T) {
	ns := newNamespace(t)
	objs := readExamples(t)
	kinds := map[string]bool{}
	for _, obj := range objs {
		if obj.GetAPIVersion() == "v1" || !strings.HasPrefix(obj.GetAPIVersion(), "monitoring.coreos.com/") {
			continue
		}
		obj.SetNamespace(ns)
		if err := k8s.Create(testCtx, obj); err != nil {
			t.Errorf("create %s %s from examples: %v", obj.GetKind(), obj.GetName(), err)
			continue
		}
		kinds[obj.GetKind()] = true
	}
	if len(kinds) != 10 {
		t.Errorf("examples/ created %d kinds (%v), want all 10", len(kinds), kinds)
	}
}

func TestInvalidObjectsAreRefusedWithTheAPIServerMessage(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		name string
		yaml string
		want string
	}{
		{
			name: "a ServiceMonitor whose endpoints field is a string instead of a list",
			yaml: `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: wrong-type}
spec:
  selector: {}
  endpoints: "metrics"`,
			want: `spec.endpoints: Invalid value: "string"`,
		},
		{
			name: "a Prometheus whose scrapeInterval is not a duration",
			yaml: `apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: bad-interval}
spec:
  scrapeInterval: banana`,
			want: `spec.scrapeInterval: Invalid value: "banana"`,
		},
		{
			name: "a Prometheus with negative shards",
			yaml: `apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: negative-shards}
spec:
  shards: -1`,
			want: "spec.shards",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := utilyaml.Unmarshal([]byte(tc.yaml), &obj.Object); err != nil {
				t.Fatal(err)
			}
			obj.SetNamespace(ns)
			err := k8s.Create(testCtx, obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: err = %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestObjectWithOwnerReferenceIsGarbageCollected(t *testing.T) {
	ns := newNamespace(t)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	if err := k8s.Create(testCtx, owner); err != nil {
		t.Fatal(err)
	}
	child := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: "child", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
	}}
	if err := k8s.Create(testCtx, child); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(testCtx, owner); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(testCtx, 100*time.Millisecond, 30*time.Second, true, func(ctx2 testContext) (bool, error) {
		err := k8s.Get(ctx2, client.ObjectKeyFromObject(child), &corev1.Secret{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("the child Secret was not garbage-collected within 30s after its owner was deleted")
	}
}

// readExamples decodes every document in examples/*.yaml.
func readExamples(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(exampleDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s: %v", exampleDir, err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("decode %s: %v", f, err)
			}
			if len(obj.Object) > 0 {
				out = append(out, obj)
			}
		}
	}
	return out
}
