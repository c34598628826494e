package webhook

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// expectErrors fails unless errs has exactly one error per want entry, in
// order, each containing its entry (field path and message).
func expectErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(errs), len(want), listErrors(errs))
	}
	for i, w := range want {
		if got := errs[i].Error(); !strings.Contains(got, w) {
			t.Errorf("error %d = %q\nwant it to contain %q", i, got, w)
		}
	}
}

func listErrors(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("  " + e.Error() + "\n")
	}
	return b.String()
}

func ptrTo[T any](v T) *T { return &v }
