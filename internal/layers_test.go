// Package layers_test keeps the layering of docs/architecture.md true: a package may
// import packages of its own layer and of the layers below it, never one above. Tests
// may reach up (a test checks its package against what uses it): only the package's own
// files count.
package layers_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// layers are the repository's packages, bottom first, as docs/architecture.md draws them.
// An entry is a package path (relative to the module) or, ending in "/...", a package
// and everything below it; a package takes the layer of its exact entry, else of its
// longest "/..." entry. A new package is placed by adding one line here (and one in the
// document); entries may name packages that do not exist yet.
var layers = []struct {
	name     string
	packages []string
}{
	{"foundations: the API, its names, and machinery that knows no kind", []string{
		".", // the files the operator binary embeds (config/crd)
		"api/...",
		"internal/crds",
		"internal/scheme",
		"internal/version",
		"internal/pgcontract",
		"internal/controlplane",
		"internal/testhost",
		"internal/image",
		"internal/reloader",
	}},
	{"selection and the render's shared parts", []string{
		"internal/selection",
		"internal/render/workload",
		"internal/render/keyref",
		"internal/render/golden",
	}},
	{"render, one package per kind (pure)", []string{
		"internal/render/...",
	}},
	{"render, the entry points per kind (pure)", []string{
		"internal/render",
	}},
	{"gather and apply", []string{
		"internal/gather",
		"internal/apply",
	}},
	{"controllers, webhook, the CLI's commands, the instance manager", []string{
		"internal/controller/...",
		"internal/webhook",
		"internal/cli",
		"internal/pginstance/...", // the PostgreSQL instance manager
		"internal/pgbouncer",      // the PgBouncer pods' entrypoint
	}},
	{"install: what runs the operator in a cluster", []string{
		"internal/install",
	}},
	{"local runs: pods as processes, the demo's and the tests' environment, a real node", []string{
		"internal/localpod",
		"internal/devenv",
		"internal/pgharness", // instance managers as pods, and their faults (test/pg, the bench)
		"internal/node/...",
	}},
	{"programs and tests", []string{
		"cmd/...",
		"hack/...",
		"bench/...",
		"test/...",
	}},
}

func TestNoPackageImportsOneAboveIt(t *testing.T) {
	root, module := moduleRoot(t)
	imports, err := readImports(root, module)
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 20 {
		t.Fatalf("found only %d packages under %s: the walk is broken", len(imports), root)
	}
	for _, problem := range check(imports) {
		t.Error(problem)
	}
}

// The check itself: it names both packages and both layers of an import that goes up,
// and a package no layer holds.
func TestTheLayerCheckNamesBothPackagesOfAnUpwardImport(t *testing.T) {
	got := check(map[string][]string{
		"internal/render/scrape": {"internal/render/workload", "internal/gather"},
		"internal/gather":        {"internal/render"},
		"internal/newthing":      nil,
	})
	want := []string{
		`internal/newthing is in no layer: place it by adding one line to layers in internal/layers_test.go (and to docs/architecture.md)`,
		`internal/render/scrape (layer 3, render, one package per kind (pure)) imports internal/gather (layer 5, gather and apply), a layer above it: ` +
			`move what it needs down, or the importer up (docs/architecture.md)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("check:\n got %q\nwant %q", got, want)
	}
}

// layerOf is the index in layers of pkg, or -1.
func layerOf(pkg string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, entry := range l.packages {
			if entry == pkg {
				return i
			}
			if base, ok := strings.CutSuffix(entry, "/..."); ok && (pkg == base || strings.HasPrefix(pkg, base+"/")) && len(base) > bestLen {
				best, bestLen = i, len(base)
			}
		}
	}
	return best
}

// check returns one message per package in no layer and per import that goes up,
// sorted.
func check(imports map[string][]string) []string {
	var problems []string
	for pkg, deps := range imports {
		from := layerOf(pkg)
		if from < 0 {
			problems = append(problems, fmt.Sprintf("%s is in no layer: place it by adding one line to layers in internal/layers_test.go (and to docs/architecture.md)", pkg))
			continue
		}
		for _, dep := range deps {
			to := layerOf(dep)
			if to > from {
				problems = append(problems, fmt.Sprintf("%s (layer %d, %s) imports %s (layer %d, %s), a layer above it: move what it needs down, or the importer up (docs/architecture.md)",
					pkg, from+1, layers[from].name, dep, to+1, layers[to].name))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// moduleRoot is the directory of the repository's go.mod (this test's parent) and the
// module's path.
func moduleRoot(t *testing.T) (string, string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(line, "module "); ok {
			return root, strings.TrimSpace(m)
		}
	}
	t.Fatalf("no module line in %s/go.mod", root)
	return "", ""
}

// readImports parses the imports of every .go file of the module but tests, by package
// directory relative to root, keeping the module's own packages only. Nested
// modules (tools/*), testdata and directories starting with "." or "_" are not the
// module's.
func readImports(root, module string) (map[string][]string, error) {
	imports := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" || fileExists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		deps := imports[pkg]
		for _, spec := range f.Imports {
			p := strings.Trim(spec.Path.Value, `"`)
			if dep, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(deps, dep) {
				deps = append(deps, dep)
			}
		}
		imports[pkg] = deps
		return nil
	})
	return imports, err
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
