package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
)

func TestCacheTransformKeepsOnlyWhatIsRead(t *testing.T) {
	meta := func(labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "x", UID: "u", ResourceVersion: "7", Labels: labels,
			Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...a large document...}"},
			OwnerReferences: []metav1.OwnerReference{{UID: "owner"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		}}
	}

	foreign, err := transform(meta(map[string]string{"owner": "helm"}))
	if err != nil {
		t.Fatal(err)
	}
	f := foreign.(*metav1.PartialObjectMetadata)
	if f.Labels != nil || f.Annotations != nil || f.OwnerReferences != nil || f.ManagedFields != nil {
		t.Errorf("a Secret Lookout did not generate keeps metadata nobody reads: %+v", f.ObjectMeta)
	}
	if f.Name != "x" || f.Namespace != "ns" || f.UID != "u" || f.ResourceVersion != "7" {
		t.Errorf("identity lost: %+v", f.ObjectMeta)
	}

	ours, _ := transform(meta(map[string]string{promrender.LabelPrometheus: "main"}))
	o := ours.(*metav1.PartialObjectMetadata)
	if o.Labels[promrender.LabelPrometheus] != "main" || o.Annotations == nil || len(o.OwnerReferences) != 1 || o.ManagedFields != nil {
		t.Errorf("a generated Secret must keep labels, annotations and owners (and lose managedFields): %+v", o.ObjectMeta)
	}

	typed, _ := transform(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}})
	if s := typed.(*corev1.Service); s.Labels["a"] != "b" || s.ManagedFields != nil {
		t.Errorf("fully cached objects keep their metadata and lose managedFields: %+v", s.ObjectMeta)
	}
}
