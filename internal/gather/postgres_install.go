package gather

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// DefaultPostgresBinDirs is where Debian installs each major's binaries
// (/usr/lib/postgresql/<major>/bin), as a glob.
const DefaultPostgresBinDirs = "/usr/lib/postgresql/*/bin"

var majorDir = regexp.MustCompile(`(?:^|/)(\d+)/bin/?$`)

// PostgresInstallation finds the PostgreSQL majors whose binaries match the
// globs (each a bin directory named <...>/<major>/bin) and asks each
// `postgres --describe-config` for the parameters it accepts. A directory
// whose postgres does not answer is left out.
func PostgresInstallation(ctx context.Context, globs ...string) (pgrender.Installation, error) {
	inst := pgrender.Installation{Parameters: map[int]map[string]bool{}}
	for _, g := range globs {
		dirs, err := filepath.Glob(g)
		if err != nil {
			return inst, fmt.Errorf("PostgreSQL bin directories %q: %w", g, err)
		}
		for _, dir := range dirs {
			m := majorDir.FindStringSubmatch(filepath.ToSlash(dir))
			if m == nil {
				continue
			}
			major, _ := strconv.Atoi(m[1])
			params, err := describeConfig(ctx, filepath.Join(dir, "postgres"))
			if err != nil {
				continue
			}
			inst.Parameters[major] = params
		}
	}
	return inst, nil
}

// describeConfig lists the parameter names a postgres binary knows: the
// first column of `postgres --describe-config`.
func describeConfig(ctx context.Context, postgres string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, postgres, "--describe-config").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --describe-config: %w", postgres, err)
	}
	params := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		name, _, _ := strings.Cut(sc.Text(), "\t")
		if name != "" {
			params[strings.ToLower(name)] = true
		}
	}
	if len(params) == 0 {
		return nil, fmt.Errorf("%s --describe-config listed no parameters", postgres)
	}
	return params, sc.Err()
}
