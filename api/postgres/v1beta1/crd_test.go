package v1beta1_test

import (
	"os"
	"path/filepath"
	"testing"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"sigs.k8s.io/yaml"
)

// The generated CRD is a structural schema the apiserver takes, small enough
// to apply client-side and to commit, with PGO's name and Lookout's short name.
func TestTheGeneratedCRDIsStructuralAndSmall(t *testing.T) {
	path := filepath.Join("..", "..", "..", "config", "postgres", "crd", "postgres-operator.crunchydata.com_postgresclusters.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 256*1024 {
		t.Errorf("the CRD is %d bytes; keep it under 256 KiB (client-side apply's annotation limit)", len(b))
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		t.Fatal(err)
	}
	if crd.Name != "postgresclusters.postgres-operator.crunchydata.com" || len(crd.Spec.Names.ShortNames) != 1 || crd.Spec.Names.ShortNames[0] != "pgc" {
		t.Errorf("name %s, short names %v", crd.Name, crd.Spec.Names.ShortNames)
	}
	for _, v := range crd.Spec.Versions {
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := structuralschema.NewStructural(&internal); err != nil {
			t.Fatalf("version %s: %v", v.Name, err)
		}
		if errs := structuralschema.ValidateStructural(nil, mustStructural(t, &internal)); len(errs) > 0 {
			t.Errorf("version %s is not structural: %v", v.Name, errs.ToAggregate())
		}
	}
}

func mustStructural(t *testing.T, s *apiextensions.JSONSchemaProps) *structuralschema.Structural {
	st, err := structuralschema.NewStructural(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
