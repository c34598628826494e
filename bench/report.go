package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// Results is the JSON file: the latest result of each scenario.
type Results struct {
	Scenarios []Result `json:"scenarios"`
}

// mergeJSON replaces the scenarios in path that were run again and keeps the
// others, so `-scenario s1` does not throw away the last S2 figures.
func mergeJSON(path string, fresh []Result) ([]Result, error) {
	var old Results
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &old); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	byName := map[string]Result{}
	for _, r := range old.Scenarios {
		byName[r.Scenario] = r
	}
	for _, r := range fresh {
		byName[r.Scenario] = r
	}
	var merged Results
	for _, r := range byName {
		merged.Scenarios = append(merged.Scenarios, r)
	}
	sort.Slice(merged.Scenarios, func(i, j int) bool { return merged.Scenarios[i].Scenario < merged.Scenarios[j].Scenario })
	out, err := json.MarshalIndent(merged, "", "  ")
	if err != nil {
		return nil, err
	}
	return merged.Scenarios, os.WriteFile(path, append(out, '\n'), 0o644)
}

func markdownTable(rs []Result) string {
	var b strings.Builder
	b.WriteString("| figure |")
	for _, r := range rs {
		fmt.Fprintf(&b, " %s |", strings.ToUpper(r.Scenario))
	}
	b.WriteString(" target |\n|---|")
	for range rs {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	row := func(name, target string, cell func(r Result) string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, r := range rs {
			fmt.Fprintf(&b, " %s |", cell(r))
		}
		fmt.Fprintf(&b, " %s |\n", target)
	}
	f1 := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	num := func(v float64) string { return groupThousands(int64(v + 0.5)) }
	changes := func(f func(r Result) string) func(r Result) string {
		return func(r Result) string {
			if r.ChangeSamples == 0 {
				return "–"
			}
			return f(r)
		}
	}
	row("objects created before the operator starts", "", func(r Result) string {
		return fmt.Sprintf("%s in %.0f s", num(float64(r.SetupObjects)), r.SetupSeconds)
	})
	row("operator start → /readyz (s)", "", func(r Result) string { return f1(r.ReadySeconds) })
	row("start → every job in the config Secret(s) (s)", "", func(r Result) string { return f1(r.ConfigSeconds) })
	row("start → every monitor's binding Accepted (s)", "", func(r Result) string { return f1(r.BindingsSeconds) })
	row("**cold start → converged (s)**", "≤ 30", func(r Result) string { return "**" + f1(r.ColdStartSeconds) + "**" })
	row("config Secrets written (main + pieces)", "", func(r Result) string { return num(float64(r.ConfigSecrets)) })
	row("CPU during convergence (s, user+sys)", "", func(r Result) string { return f1(r.ConvergeCPUSeconds) })
	row("kube-apiserver / etcd / harness CPU during convergence (s)", "", func(r Result) string {
		if r.APIServerConvergeCPUSeconds == 0 && r.EtcdConvergeCPUSeconds == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f / %.1f / %.1f", r.APIServerConvergeCPUSeconds, r.EtcdConvergeCPUSeconds, r.HarnessConvergeCPUSeconds)
	})
	row("machine CPU busy during convergence (% of all cores)", "", func(r Result) string {
		if r.HostBusyPercentConverge == 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f %% of %d", r.HostBusyPercentConverge, r.CPUs)
	})
	row("reconciles during convergence", "", func(r Result) string { return num(r.ConvergeReconciles) })
	row("API requests during convergence", "", func(r Result) string { return byMethod(r.ConvergeRequests) })
	row("API writes during convergence", "", func(r Result) string { return num(r.ConvergeWrites) })
	row("client rate-limiter wait during convergence (s, summed over requests)", "", func(r Result) string {
		if r.ConvergePatchMeanMs == 0 {
			return "–"
		}
		return f1(r.ConvergeThrottledSeconds)
	})
	row("PATCH round trip during convergence, mean (ms)", "", func(r Result) string {
		if r.ConvergePatchMeanMs == 0 {
			return "–"
		}
		return f1(r.ConvergePatchMeanMs)
	})
	row("changes in the first minute after the config was complete (back to back)", "", changes(func(r Result) string { return num(float64(r.EarlyChangeSamples)) }))
	row("first minute: change → job in config, p50 (ms)", "", changes(func(r Result) string { return num(r.EarlyChangeP50Ms) }))
	row("**first minute: worst change → job in config (ms)**", "≤ 1000 (S1)", changes(func(r Result) string { return "**" + num(r.EarlyChangeMaxMs) + "**" }))
	row("change samples (monitor created, controller idle)", "", changes(func(r Result) string { return num(float64(r.ChangeSamples)) }))
	row("**change → job in config, p50 (ms)**", "", changes(func(r Result) string { return "**" + num(r.ChangeP50Ms) + "**" }))
	row("**change → job in config, p99 (ms)**", "≤ 50 (S1)", changes(func(r Result) string { return "**" + num(r.ChangeP99Ms) + "**" }))
	row("change → job in config, max (ms)", "", changes(func(r Result) string { return num(r.ChangeMaxMs) }))
	row("reconciles per change", "", changes(func(r Result) string { return fmt.Sprintf("%.2f", r.ReconcilesPerChange) }))
	row("of a change: create call incl. webhook, p50 (ms)", "", changes(func(r Result) string { return optNum(r.ChangeCreateP50Ms, "%.1f") }))
	row("of a change: reconcile duration, mean (ms)", "", changes(func(r Result) string { return optNum(r.ChangeReconcileMs, "%.1f") }))
	row("of a change: reconcile phases, mean", "", changes(func(r Result) string { return phaseText(r.ChangePhaseMs) }))
	row("CPU per change (s)", "", changes(func(r Result) string { return fmt.Sprintf("%.2f", r.ChangeCPUSecondsPer) }))
	row("RSS when converged (MiB)", "", func(r Result) string { return num(r.ConvergedRSSMiB) })
	row("**peak RSS, VmHWM (MiB)**", "≤ 150 (S1)", func(r Result) string { return "**" + num(r.PeakRSSMiB) + "**" })
	row("steady RSS after the idle window (MiB)", "", func(r Result) string { return num(r.SteadyRSSMiB) })
	row("idle window (s)", "600", func(r Result) string { return num(r.IdleSeconds) })
	row("CPU while idle (s)", "", func(r Result) string { return fmt.Sprintf("%.2f", r.IdleCPUSeconds) })
	row("API requests while idle (operator)", "", func(r Result) string { return byMethod(r.IdleRequests) })
	row("writes while idle (operator, incl. leader-election renewals)", "", func(r Result) string { return num(r.IdleWrites) })
	row("writes while idle by resource (apiserver)", "", func(r Result) string { return byMethod(r.IdleWritesByRes) })
	row("**writes while idle, leases excluded**", "0", func(r Result) string { return "**" + num(r.IdleNonLeaseWrts) + "**" })
	row("commit", "", func(r Result) string { return shortCommit(r.Commit) })
	row("date (UTC)", "", func(r Result) string { return r.Date })
	return b.String()
}

func shortCommit(c string) string {
	if len(c) >= 40 {
		return c[:12] + c[40:]
	}
	return c
}

func byMethod(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if k == "" {
			k = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s %s", k, groupThousands(int64(m[k]+0.5))))
	}
	return strings.Join(parts, ", ")
}

func groupThousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []string
	for len(s) > 3 {
		out = append([]string{s[len(s)-3:]}, out...)
		s = s[:len(s)-3]
	}
	out = append([]string{s}, out...)
	r := strings.Join(out, ",")
	if neg {
		r = "-" + r
	}
	return r
}

const (
	docHeading = "## Scale harness (make bench)"
	docEnd     = "<!-- end of the make bench section: everything above, from its heading, is rewritten by go run ./bench -->"
)

// writeDocSection replaces the harness's section of the markdown file (from
// its heading to the end marker) or appends it.
func writeDocSection(path string, rs []Result) error {
	return replaceDocSection(path, docHeading, docEnd, docSection(rs))
}

// replaceDocSection replaces the section of the markdown file that starts at
// heading and ends at the end marker with section, or appends section.
func replaceDocSection(path, heading, end, section string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	if i := strings.Index(doc, heading); i >= 0 {
		rest := doc[i:]
		j := strings.Index(rest, end)
		if j >= 0 {
			// One blank line after the marker, however many there were: a rewrite
			// changes nothing but the section.
			rest = "\n" + strings.TrimLeft(rest[j+len(end):], "\n")
		} else if k := strings.Index(rest[len(heading):], "\n## "); k >= 0 {
			rest = rest[len(heading)+k:]
		} else {
			rest = "\n"
		}
		doc = doc[:i] + section + rest
	} else {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section + "\n"
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

func docSection(rs []Result) string {
	var b strings.Builder
	b.WriteString(docHeading + "\n\n")
	b.WriteString("```sh\nmake bench                                   # go run ./bench -scenario all -out docs/bench-results.json\ngo run ./bench -scenario s1 -idle 60s        # one scenario, a shorter idle window\n```\n\n")
	b.WriteString(`Not a ` + "`go test`" + ` benchmark: a program that starts the local control plane (etcd +
kube-apiserver, no kube-controller-manager — no pods are needed), creates every object of the
scenario from 32 goroutines, and only then starts ` + "`lookout operator`" + ` as its own process
(` + "`devenv.StartOperator`" + `, metrics on a loopback port), so that the cold start is what an
operator restarted in a populated cluster sees. The harness follows the config Secrets (the main
one and the ` + "`prometheus-<name>-scrape-<i>`" + ` pieces) and every ServiceMonitor's
` + "`status.bindings`" + ` through watches; converged = every job in the config and every monitor
Accepted. RSS and CPU come from ` + "`/proc/<pid>`" + ` of the operator; API requests from its
` + "`rest_client_requests_total`" + `; writes while idle also from the apiserver's
` + "`apiserver_request_total`" + ` by resource (nothing else writes in that window, so the leases are
the operator's leader-election renewals and the apiserver's own lease). The CPU of kube-apiserver
and etcd comes from their ` + "`/proc/<pid>`" + `, the machine's from ` + "`/proc/stat`" + `; the time requests
waited for the operator's client-side rate limiter from its
` + "`rest_client_rate_limiter_duration_seconds`" + `. Results also go to
` + "`docs/bench-results.json`" + `, stamped with the commit and the date. The operator's CPU profiles
(start → converged, and the change phase) and heap profiles (converged, after the changes, after
the idle window) go to ` + "`-profiles`" + ` (` + "`bench/out/profiles/<scenario>/`" + `), with
` + "`go tool pprof -top`" + ` of each in ` + "`top.txt`" + ` there and in the run's output.

`)
	for _, r := range rs {
		fmt.Fprintf(&b, "- **%s**: %s.\n", strings.ToUpper(r.Scenario), r.Description)
	}
	b.WriteString(`
The same noisy 2-core VM as above, shared with other work, with etcd, kube-apiserver, the operator
and the harness all on it: every column is one run (the change latencies are percentiles within
it); read the figures as orders of magnitude and ratios, not as absolutes. Change latency is timed from the create call (which passes the operator's validating
webhook) until a watch delivers a config Secret holding the new job, each change made while the
prometheus controller is idle.

`)
	b.WriteString(markdownTable(rs))
	b.WriteString("\n" + docEnd + "\n")
	return b.String()
}

// optNum formats v, or "–" for a figure an older result does not have.
func optNum(v float64, format string) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}
