package thanos

import (
	"fmt"

	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Gate is a Thanos flag Lookout passes for a spec field, and the Thanos release that
// introduced it: an older Thanos exits at start on a flag it does not know.
type Gate struct {
	Field        string // the spec field asking for the flag
	Set          bool   // whether the spec sets it
	Flag         string // the flag, without dashes
	Major, Minor int    // the first Thanos release with the flag
}

// Version is the Thanos version a container runs: its spec.version, or the default.
type Version struct {
	workload.Version
	// Field is the spec field holding it ("spec.version", "spec.thanos.version").
	Field string
}

// ParseVersion parses version (DefaultVersion when empty) for the spec field that holds it.
func ParseVersion(field, version string) (Version, *workload.SpecError) {
	v, err := ImageSpec(nil, version).ParsedVersion()
	if err != nil {
		return Version{}, workload.Invalid(field, "%v", err)
	}
	return Version{Version: v, Field: field}, nil
}

// Check refuses, by name, the first field set whose flag v's Thanos does not have. The
// existing operator leaves such a flag out and the field without effect; Lookout says so.
func (v Version) Check(gates ...Gate) *workload.SpecError {
	for _, g := range gates {
		if g.Set && !v.AtLeast(g.Major, g.Minor) {
			return &workload.SpecError{Field: g.Field, Reason: workload.ReasonUnsupportedField,
				Message: fmt.Sprintf("%s: needs Thanos v%d.%d.0 or later (its --%s flag), %s is %s", g.Field, g.Major, g.Minor, g.Flag, v.Field, v.Tag())}
		}
	}
	return nil
}
