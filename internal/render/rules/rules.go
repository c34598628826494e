// Package rules renders the rule files of one Prometheus from the PrometheusRules it selects and
// packs them into the data of its rule ConfigMaps.
//
// It is pure: the same Input always gives the same bytes, and nothing here talks to a cluster.
// Each PrometheusRule becomes one rule file, checked with Prometheus's own rule-file parser; a
// PrometheusRule whose file Prometheus would refuse, or that does not fit, is left out alone and
// reported through its Verdict; the rest still ship.
package rules

import (
	"errors"
	"fmt"
	"sort"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Input is what the generator needs for one Prometheus, or for one ThanosRuler.
type Input struct {
	Prometheus *monitoringv1.Prometheus
	// ThanosRuler, set instead of Prometheus, renders the files in Thanos Ruler's dialect: a
	// group's partial_response_strategy is written (Prometheus refuses it).
	ThanosRuler *monitoringv1.ThanosRuler
	Rules       []*monitoringv1.PrometheusRule // already selected by the caller; any order
}

// Verdict says whether one PrometheusRule made it into a rule ConfigMap.
type Verdict struct {
	Kind       string // "PrometheusRule"
	Namespace  string
	Name       string
	Generation int64
	Accepted   bool
	Reason     string // CamelCase machine reason when rejected, see the Reason* constants
	Message    string // human sentence naming the group and the rule (numbered from 1, as Prometheus does)
	UID        types.UID
}

// Result is the data of the rule ConfigMaps plus a verdict for every PrometheusRule.
type Result struct {
	// ConfigMaps holds the data of each rule ConfigMap in order: index i becomes ConfigMap
	// prometheus-<name>-rulefiles-<i>. Keys are file names "<namespace>-<name>-<uid>.yaml" (see
	// FileName); each map's data size (keys plus values, in bytes) is at most MaxConfigMapBytes.
	// There is always at least one map, empty when no rule is accepted, as the existing operator
	// always writes rulefiles-0. At most MaxConfigMaps maps.
	ConfigMaps []map[string]string
	Verdicts   []Verdict // exactly one per non-nil input rule, sorted by namespace/name
}

const (
	// MaxConfigMapBytes is how much rule file data one ConfigMap holds: half of the 1 MiB
	// object limit, leaving room for metadata and for the managed fields of the apply.
	MaxConfigMapBytes = 512 * 1024
	// MaxConfigMaps is how many rule ConfigMap names the pod mounts (as optional volumes, so
	// the count changing does not roll pods).
	MaxConfigMaps = 8
)

// Reasons a PrometheusRule is rejected with (Verdict.Reason).
const (
	ReasonInvalidPromQL   = "InvalidPromQL"   // an expr is empty or does not parse
	ReasonInvalidDuration = "InvalidDuration" // interval, query_offset, for or keep_firing_for does not parse
	ReasonDuplicateGroup  = "DuplicateGroup"  // two groups of the same PrometheusRule share a name
	ReasonInvalidRules    = "InvalidRules"    // anything else Prometheus's rule-file parser refuses (names, labels, templates...)
	ReasonTooLarge        = "TooLarge"        // the rule file alone is larger than MaxConfigMapBytes
	ReasonTooManyRules    = "TooManyRules"    // all MaxConfigMaps ConfigMaps are full
	ReasonDuplicate       = "Duplicate"       // the same namespace/name, or the same file name, given twice
	ReasonNameTooLong     = "NameTooLong"     // the file name is longer than a ConfigMap key may be
)

const (
	prometheusRuleKind = monitoringv1.PrometheusRuleKind
	// maxKeyLength is the longest ConfigMap data key the API server accepts.
	maxKeyLength = 253
)

// FileName is the rule file (and ConfigMap key) of a PrometheusRule: "<ns>-<name>-<uid>.yaml".
// The UID keeps a deleted and recreated object from reusing the old file name, as in the
// existing operator.
func FileName(r *monitoringv1.PrometheusRule) string {
	return fmt.Sprintf("%s-%s-%s.yaml", r.Namespace, r.Name, r.UID)
}

// Generate renders one rule file per PrometheusRule and packs the files into ConfigMap data.
// It returns an error only for a nil Prometheus or an invalid Prometheus-level setting
// (nameValidationScheme, enforcedNamespaceLabel); a bad PrometheusRule is rejected on its own
// through its Verdict and the rest still ship.
func Generate(in Input) (*Result, error) {
	var (
		owner string
		spec  settings
	)
	switch {
	case in.Prometheus != nil:
		owner, spec = "Prometheus "+in.Prometheus.Namespace+"/"+in.Prometheus.Name, prometheusSettings(in.Prometheus)
	case in.ThanosRuler != nil:
		owner, spec = "ThanosRuler "+in.ThanosRuler.Namespace+"/"+in.ThanosRuler.Name, thanosRulerSettings(in.ThanosRuler)
	default:
		return nil, errors.New("render rule files: no Prometheus or ThanosRuler given")
	}
	r, err := newRendererWith(spec)
	if err != nil {
		return nil, fmt.Errorf("render rule files for %s: %w", owner, err)
	}
	return r.generate(in.Rules), nil
}

// ruleFile is one rendered PrometheusRule waiting to be packed.
type ruleFile struct {
	verdict int // index into Result.Verdicts
	name    string
	content string
}

// size is what the file adds to a ConfigMap's data.
func (f *ruleFile) size() int { return len(f.name) + len(f.content) }

func (r *renderer) generate(in []*monitoringv1.PrometheusRule) *Result {
	prs := sortedRules(in)
	res := &Result{Verdicts: make([]Verdict, 0, len(prs))}
	files := make([]*ruleFile, 0, len(prs))
	seen := make(map[string]struct{}, len(prs))
	fileOwners := make(map[string]string, len(prs))

	for _, pr := range prs {
		res.Verdicts = append(res.Verdicts, Verdict{
			Kind:       prometheusRuleKind,
			Namespace:  pr.Namespace,
			Name:       pr.Name,
			Generation: pr.Generation,
			UID:        pr.UID,
		})
		v := &res.Verdicts[len(res.Verdicts)-1]
		prKey := pr.Namespace + "/" + pr.Name
		if _, dup := seen[prKey]; dup {
			v.Reason = ReasonDuplicate
			v.Message = fmt.Sprintf("PrometheusRule %s was given more than once; only the first is used", prKey)
			continue
		}
		seen[prKey] = struct{}{}

		name := FileName(pr)
		// Different objects can only share a file name when UIDs are missing (files given to
		// the CLI) and dashes line up: "a-b"/"c" and "a"/"b-c".
		if owner, taken := fileOwners[name]; taken {
			v.Reason = ReasonDuplicate
			v.Message = fmt.Sprintf("rule file name %q is already used by PrometheusRule %s", name, owner)
			continue
		}
		fileOwners[name] = prKey
		if len(name) > maxKeyLength {
			v.Reason = ReasonNameTooLong
			v.Message = fmt.Sprintf("rule file name %q is %d characters long; a ConfigMap key may have at most %d", name, len(name), maxKeyLength)
			continue
		}

		content, rej := r.renderFile(pr)
		if rej != nil {
			v.Reason, v.Message = rej.reason, rej.message
			continue
		}
		f := &ruleFile{verdict: len(res.Verdicts) - 1, name: name, content: string(content)}
		if f.size() > MaxConfigMapBytes {
			v.Reason = ReasonTooLarge
			v.Message = fmt.Sprintf("the rule file is %d bytes with its name, more than the %d one rule ConfigMap holds; split the PrometheusRule", f.size(), MaxConfigMapBytes)
			continue
		}
		files = append(files, f)
	}

	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	cms, fitted := pack(files)
	for _, f := range files[:fitted] {
		res.Verdicts[f.verdict].Accepted = true
	}
	for _, f := range files[fitted:] {
		v := &res.Verdicts[f.verdict]
		v.Reason = ReasonTooManyRules
		v.Message = fmt.Sprintf("all %d rule ConfigMaps are full (%d bytes each) before rule file %q; rule files are packed in file name order", MaxConfigMaps, MaxConfigMapBytes, f.name)
	}
	res.ConfigMaps = cms
	return res
}

// pack fills ConfigMap i in order until the next file would exceed MaxConfigMapBytes, then
// starts ConfigMap i+1. It returns the data and how many files fitted; once the last ConfigMap
// is full the remaining files are all left out, so that a later, smaller file never takes the
// place of an earlier one. Every file is at most MaxConfigMapBytes.
func pack(files []*ruleFile) ([]map[string]string, int) {
	cms := []map[string]string{{}}
	used := 0
	for i, f := range files {
		if used+f.size() > MaxConfigMapBytes {
			if len(cms) == MaxConfigMaps {
				return cms, i
			}
			cms = append(cms, map[string]string{})
			used = 0
		}
		cms[len(cms)-1][f.name] = f.content
		used += f.size()
	}
	return cms, len(files)
}

// sortedRules drops nil entries and orders by "namespace/name". Ties (the same object given
// twice) are broken by UID and resourceVersion so that the one kept does not depend on the
// input order.
func sortedRules(in []*monitoringv1.PrometheusRule) []*monitoringv1.PrometheusRule {
	out := make([]*monitoringv1.PrometheusRule, 0, len(in))
	for _, pr := range in {
		if pr != nil {
			out = append(out, pr)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		ka, kb := a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name
		if ka != kb {
			return ka < kb
		}
		if a.UID != b.UID {
			return a.UID < b.UID
		}
		return a.ResourceVersion < b.ResourceVersion
	})
	return out
}
