// Command testsummary reads `go test -json` on stdin and prints every test's
// result as it finishes, the full output of failures, and a final summary.
// It exits non-zero when any test or package failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	start := time.Now()
	outputs := map[string]*strings.Builder{} // package/test → output
	var passed, failed, skipped int
	var failures []string
	pkgFailed := map[string]bool{}
	pkgs := map[string]string{}

	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// Build errors arrive as plain text.
			fmt.Println(string(line))
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "build-output":
			fmt.Print(e.Output)
		case "output":
			b := outputs[key]
			if b == nil {
				b = &strings.Builder{}
				outputs[key] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				label := strings.ToUpper(e.Action)
				if e.Action == "skip" {
					label = "----" // a package without tests
				}
				pkgs[e.Package] = fmt.Sprintf("%-4s %s (%.1fs)", label, e.Package, e.Elapsed)
				if e.Action == "fail" {
					pkgFailed[e.Package] = true
					if b := outputs[key]; b != nil {
						fmt.Print(b.String())
					}
				}
				fmt.Println(pkgs[e.Package])
				continue
			}
			fmt.Printf("    %-4s %s %s (%.2fs)\n", strings.ToUpper(e.Action), short(e.Package), e.Test, e.Elapsed)
			switch e.Action {
			case "pass":
				passed++
			case "skip":
				skipped++
				if b := outputs[key]; b != nil {
					fmt.Print(indent(b.String()))
				}
			case "fail":
				failed++
				failures = append(failures, short(e.Package)+" "+e.Test)
				if b := outputs[key]; b != nil {
					fmt.Print(indent(b.String()))
				}
			}
			delete(outputs, key)
		}
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	fmt.Println("\n=== Summary ===")
	for _, p := range names {
		fmt.Println(pkgs[p])
	}
	fmt.Printf("\n%d passed, %d failed, %d skipped in %d packages (%s)\n", passed, failed, skipped, len(pkgs), time.Since(start).Round(time.Second))
	for _, f := range failures {
		fmt.Println("FAILED:", f)
	}
	if failed > 0 || len(pkgFailed) > 0 {
		os.Exit(1)
	}
}

func short(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/lookout-operator/lookout/")
}

func indent(s string) string {
	return "        " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n        ") + "\n"
}
