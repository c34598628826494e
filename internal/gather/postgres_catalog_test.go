package gather

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the PostgreSQL catalog from this machine's PostgreSQL")

// The catalog built into the operator describes the PostgreSQL lookout-postgres is
// made of: this machine's (internal/image checks the image's own postgres too).
func TestTheBuiltInPostgresCatalogDescribesThisMachinesPostgreSQL(t *testing.T) {
	cat, err := PostgresCatalog()
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Majors()) == 0 {
		t.Fatal("the catalog lists no PostgreSQL major")
	}
	for _, major := range cat.Majors() {
		bin := fmt.Sprintf("/usr/lib/postgresql/%d/bin/postgres", major)
		params, err := DescribePostgres(context.Background(), bin)
		if err != nil {
			t.Fatalf("the catalog lists PostgreSQL %d, which this machine must have to build lookout-postgres: %v", major, err)
		}
		want := CatalogFile(major, params)
		if *update {
			if err := os.WriteFile(filepath.Join("postgres-catalog", fmt.Sprintf("%d.txt", major)), want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got := CatalogFile(major, cat.Parameters[major]); string(got) != string(want) {
			t.Errorf("the catalog of PostgreSQL %d differs from %s --describe-config; run go test ./internal/gather -run TestTheBuiltInPostgresCatalog -update", major, bin)
		}
	}
}

func TestPostgresForFallsBackToTheCatalogWithoutBinaries(t *testing.T) {
	inst, from, err := PostgresFor(context.Background(), filepath.Join(t.TempDir(), "*", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inst.Majors()) == 0 || !inst.Parameters[inst.Majors()[0]]["shared_buffers"] {
		t.Errorf("without binaries: majors %v, want the catalog's with shared_buffers", inst.Majors())
	}
	if from != "the catalog of the lookout-postgres image built in" {
		t.Errorf("from = %q", from)
	}
	inst, from, err = PostgresFor(context.Background(), "/usr/lib/postgresql/*/bin")
	if err != nil || len(inst.Majors()) == 0 || from != "bin directories /usr/lib/postgresql/*/bin" {
		t.Errorf("with this machine's binaries: majors %v from %q, %v", inst.Majors(), from, err)
	}
}
