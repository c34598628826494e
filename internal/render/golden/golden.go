// Package golden compares rendered objects with golden files in tests: the objects as
// YAML documents, rewritten with the test binary's -update flag.
package golden

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Objects checks objs, as YAML documents in order, against the file at path.
func Objects[T any](t testing.TB, path string, objs []T) {
	t.Helper()
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
	}
	Bytes(t, path, buf.Bytes())
}

// Bytes checks got against the file at path.
func Bytes(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update to accept):\n%s", path, got)
	}
}
