package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRewritingTheDocSectionTwiceChangesNothing: the harness rewrites its section of
// docs/benchmarks.md on every run; what surrounds it must come out as it went in.
func TestRewritingTheDocSectionTwiceChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	before := "# Benchmarks\n\nintro\n\n" + docHeading + "\n\nold table\n" + docEnd + "\n\n\n\n### Next\n\ntext\n"
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := []Result{{Scenario: "s1"}}
	if err := writeDocSection(path, rs); err != nil {
		t.Fatal(err)
	}
	once, _ := os.ReadFile(path)
	if err := writeDocSection(path, rs); err != nil {
		t.Fatal(err)
	}
	twice, _ := os.ReadFile(path)
	if string(once) != string(twice) {
		t.Fatalf("the second rewrite changed the file:\n%s\n---\n%s", once, twice)
	}
	want := docEnd + "\n\n### Next\n\ntext\n"
	if got := string(once); len(got) < len(want) || got[len(got)-len(want):] != want {
		t.Fatalf("what follows the section is not kept as one blank line and the rest:\n%s", got)
	}
}
