package crds

import (
	"slices"
	"testing"

	"github.com/lookout-operator/lookout/internal/controller"
)

// The operator's --install-crds rights name the CRDs it applies, and no
// other: a CRD added to the API without its name in controller.CRDNames
// would be refused at start.
func TestTheInstallCRDsRightsNameEveryEmbeddedCRD(t *testing.T) {
	all, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	got := Names(all)
	slices.Sort(got)
	want := slices.Sorted(slices.Values(controller.CRDNames))
	if !slices.Equal(got, want) {
		t.Fatalf("embedded CRDs %v, controller.CRDNames %v", got, want)
	}
}
