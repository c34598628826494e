package scrape

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v2"
)

// AdditionalConfigError means Input.AdditionalScrapeConfigs cannot ship: it is not a YAML list
// of scrape configs, or Prometheus refuses the config with it. Its jobs cannot be left out
// alone the way a monitor is, so no config is produced; the caller reports it (Reconciled=False)
// and keeps the config it applied before.
type AdditionalConfigError struct {
	Message string
}

func (e *AdditionalConfigError) Error() string { return e.Message }

func additionalError(format string, args ...any) *AdditionalConfigError {
	return &AdditionalConfigError{Message: "additionalScrapeConfigs: " + fmt.Sprintf(format, args...)}
}

// additional is the additional scrape configs, parsed.
type additional struct {
	shipped []byte // the jobs as given, as items of the scrape_configs sequence
	// The same jobs for the config loader of this binary, without the discovery configs of
	// Prometheus mechanisms it does not link (ec2_sd_configs...): those cannot be checked here,
	// and refusing them would refuse configs Prometheus takes.
	check []byte
	jobs  []additionalJob
}

type additionalJob struct {
	name  string
	check []byte // check, for this job alone
}

// additionalJobs parses the additional scrape configs; nil when there are none. When
// sharded (more than one shard, or shards kept after a scale-down), each job that does not
// shard itself (no hashmod relabeling) gets the sharding rules the generated jobs have, as
// with the existing operator: otherwise every shard would scrape all its targets.
func additionalJobs(raw []byte, shards uint64, sharded bool) (*additional, *AdditionalConfigError) {
	jobs, msg := yamlList(raw, "scrape config", "job_name")
	if msg != "" {
		return nil, additionalError("%s", msg)
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	out := &additional{jobs: make([]additionalJob, len(jobs))}
	checked := make([]yaml.MapSlice, len(jobs))
	for i, job := range jobs {
		if sharded {
			jobs[i] = withSharding(job, shards)
			job = jobs[i]
		}
		for _, item := range job {
			if key, _ := item.Key.(string); key == "job_name" {
				out.jobs[i].name = fmt.Sprint(item.Value)
			}
		}
		checked[i] = checkable(job)
	}
	// Re-encoding with the library Prometheus decodes with keeps every key and value; comments
	// and formatting are not kept.
	var err error
	if out.shipped, err = yaml.Marshal(jobs); err != nil {
		return nil, additionalError("cannot encode the scrape configs: %v", err)
	}
	if out.check, err = yaml.Marshal(checked); err != nil {
		return nil, additionalError("cannot encode the scrape configs: %v", err)
	}
	for i := range checked {
		if out.jobs[i].check, err = yaml.Marshal(checked[i : i+1]); err != nil {
			return nil, additionalError("cannot encode the scrape configs: %v", err)
		}
	}
	return out, nil
}

// yamlList decodes raw as one YAML list of mappings, each one item (what: "scrape config") whose
// usual first key is key; nil when raw holds nothing. A message says why raw is not such a list.
func yamlList(raw []byte, what, key string) ([]yaml.MapSlice, string) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, ""
	}
	var items []yaml.MapSlice
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.SetStrict(true)
	if err := dec.Decode(&items); err != nil && err != io.EOF {
		var single yaml.MapSlice
		if yaml.Unmarshal(raw, &single) == nil {
			return nil, fmt.Sprintf("not a YAML list of %ss: got a mapping; write each %s as a list item (- %s: ...)", what, what, key)
		}
		return nil, fmt.Sprintf("not a YAML list of %ss: %s", what, oneLine(err))
	}
	// A second document would be dropped by a plain decode; Prometheus never sees it either.
	var next any
	if err := dec.Decode(&next); err != io.EOF && (err != nil || next != nil) {
		return nil, fmt.Sprintf("more than one YAML document; put all %ss in one list", what)
	}
	for i, item := range items {
		if len(item) == 0 {
			return nil, fmt.Sprintf("item %d is not a %s", i, what)
		}
	}
	return items, ""
}

// checkable is item without the discovery configs of Prometheus mechanisms this binary does
// not link (ec2_sd_configs...): those cannot be checked here, and refusing them would refuse
// configs Prometheus takes.
func checkable(item yaml.MapSlice) yaml.MapSlice {
	out := make(yaml.MapSlice, 0, len(item))
	for _, kv := range item {
		if key, _ := kv.Key.(string); unlinkedSD(key) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// refused explains why the loader refuses the config with the additional jobs (err): it names
// the job refused on its own, if one is.
func (g *generator) refused(a *additional, err error) *AdditionalConfigError {
	for i, job := range a.jobs {
		if jerr := g.load(job.check); jerr != nil {
			return additionalError("item %d (job %q): Prometheus refuses it: %s", i, job.name, loaderMessage(jerr))
		}
	}
	return additionalError("Prometheus refuses the configuration with them: %s", loaderMessage(err))
}

var yamlLine = regexp.MustCompile(`line \d+: `)

// loaderMessage is the loader's error on one line, without the line numbers: they count lines of
// the generated file, not of what the user wrote.
func loaderMessage(err error) string {
	return yamlLine.ReplaceAllString(oneLine(err), "")
}

// oneLine is a YAML error on one line, for a status message.
func oneLine(err error) string {
	parts := strings.Split(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n"), "\n")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return strings.Join(parts, "; ")
}

// unlinkedSD says whether key is the `<name>_sd_configs` of a discovery mechanism Prometheus
// has but this binary does not link.
func unlinkedSD(key string) bool {
	name, ok := strings.CutSuffix(key, "_sd_configs")
	if !ok {
		return false
	}
	linked, known := linkedSD()[name]
	return known && !linked
}

// withSharding appends the sharding rules to job's relabel_configs unless it has a hashmod
// rule of its own.
func withSharding(job yaml.MapSlice, shards uint64) yaml.MapSlice {
	idx := -1
	var rules []any
	for i, item := range job {
		if key, _ := item.Key.(string); key == "relabel_configs" {
			idx = i
			rules, _ = item.Value.([]any)
		}
	}
	for _, r := range rules {
		m, _ := r.(yaml.MapSlice)
		for _, kv := range m {
			if key, _ := kv.Key.(string); key == "action" && strings.EqualFold(fmt.Sprint(kv.Value), "hashmod") {
				return job
			}
		}
	}
	rules = slices.Clone(rules)
	for _, r := range shardingRules(shards, "__address__") {
		rules = append(rules, r)
	}
	out := slices.Clone(job)
	if idx < 0 {
		return append(out, yaml.MapItem{Key: "relabel_configs", Value: rules})
	}
	out[idx].Value = rules
	return out
}
