// Package v1beta1 holds Lookout's own Go types for Crunchy PGO's
// postgres-operator.crunchydata.com/v1beta1 API: the PostgresCluster fields
// Lookout honours are typed, the other documented ones are kept so that a
// manifest written for PGO applies unchanged, and the controller refuses each
// of them by name when it is set.
//
// +kubebuilder:object:generate=true
// +groupName=postgres-operator.crunchydata.com
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of PGO's API.
	GroupVersion = schema.GroupVersion{Group: "postgres-operator.crunchydata.com", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kind is the kind of PostgresCluster.
const Kind = "PostgresCluster"
