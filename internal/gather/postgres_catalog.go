package gather

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// The operator decides what a PostgresCluster may ask for (its major, its
// parameters) from the PostgreSQL the instances run, which lives in the
// lookout-postgres image, not in the operator's: the operator image is built
// from Go for every platform and carries no PostgreSQL. So the image's
// PostgreSQL is described in catalog files, one per major, built into the
// operator binary: the parameter names `postgres --describe-config` of that
// major lists. The lookout-postgres image of the same version carries exactly
// that PostgreSQL, which its test checks (the image's own postgres asked in a
// chroot), and so does the test of this package against this machine's.

//go:embed postgres-catalog/*.txt
var catalogFiles embed.FS

const catalogHeader = "# The parameters PostgreSQL %d accepts, as `postgres --describe-config` of the\n" +
	"# lookout-postgres image lists them (its first column, lower case, sorted):\n" +
	"# regenerate with go test ./internal/gather -run TestTheBuiltInPostgresCatalog -update\n"

// PostgresCatalog is the PostgreSQL of the lookout-postgres image of this
// version: its majors and the parameters each accepts.
func PostgresCatalog() (pgrender.Installation, error) {
	inst := pgrender.Installation{Parameters: map[int]map[string]bool{}}
	files, err := catalogFiles.ReadDir("postgres-catalog")
	if err != nil {
		return inst, err
	}
	for _, f := range files {
		major, err := strconv.Atoi(strings.TrimSuffix(f.Name(), ".txt"))
		if err != nil {
			return inst, fmt.Errorf("catalog file %s is not named <major>.txt", f.Name())
		}
		data, err := catalogFiles.ReadFile(path.Join("postgres-catalog", f.Name()))
		if err != nil {
			return inst, err
		}
		params := map[string]bool{}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				params[line] = true
			}
		}
		if len(params) == 0 {
			return inst, fmt.Errorf("catalog file %s lists no parameters", f.Name())
		}
		inst.Parameters[major] = params
	}
	return inst, nil
}

// CatalogFile is the catalog file of major listing params.
func CatalogFile(major int, params map[string]bool) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, catalogHeader, major)
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	return b.Bytes()
}

// DescribePostgres lists the parameter names the postgres program accepts
// (`postgres --describe-config`, lower case).
func DescribePostgres(ctx context.Context, postgres string) (map[string]bool, error) {
	return describeConfig(ctx, postgres)
}

// PostgresFor is what the operator can run: the PostgreSQL in the bin
// directories globs when it finds any (an operator on a host with
// PostgreSQL, as the demo and the tests on local pods run it), else the
// catalog of the lookout-postgres image (the operator's own image has no
// PostgreSQL). from says which.
func PostgresFor(ctx context.Context, globs ...string) (inst pgrender.Installation, from string, err error) {
	inst, err = PostgresInstallation(ctx, globs...)
	if err != nil || len(inst.Parameters) > 0 {
		return inst, "bin directories " + strings.Join(globs, ","), err
	}
	inst, err = PostgresCatalog()
	return inst, "the catalog of the lookout-postgres image built in", err
}
