package pginstance

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// syncSet is the synchronous standby set a primary runs with: a commit is
// acknowledged once Count of Standbys flushed it (synchronous_standby_names
// `ANY Count (Standbys...)`). Count 0 is asynchronous replication. The set in
// force is recorded in the Lease (see lease.go) before postgres uses it, as
// Patroni records its /sync key: whoever takes over reads from the Lease which
// instances hold every acknowledged commit.
type syncSet struct {
	Standbys []string
	Count    int
}

func (s syncSet) async() bool { return s.Count == 0 || len(s.Standbys) == 0 }

func (s syncSet) equal(o syncSet) bool {
	if s.async() && o.async() {
		return true
	}
	return s.Count == o.Count && slices.Equal(s.Standbys, o.Standbys)
}

// covers reports whether a record of s is safe while postgres runs with o:
// every commit acknowledged under o is on Count members of s.
func (s syncSet) covers(o syncSet) bool {
	if o.async() {
		return true
	}
	if s.async() || o.Count < s.Count {
		return false
	}
	for _, n := range o.Standbys {
		if !slices.Contains(s.Standbys, n) {
			return false
		}
	}
	return true
}

// union is the record that covers both s and o.
func (s syncSet) union(o syncSet) syncSet {
	if s.async() {
		return o
	}
	if o.async() {
		return s
	}
	names := append(slices.Clone(s.Standbys), o.Standbys...)
	sort.Strings(names)
	return syncSet{Standbys: slices.Compact(names), Count: min(s.Count, o.Count)}
}

// standbyNames is the value of synchronous_standby_names.
func (s syncSet) standbyNames() string {
	if s.async() {
		return ""
	}
	quoted := make([]string, len(s.Standbys))
	for i, n := range s.Standbys {
		if n == "*" {
			quoted[i] = n
			continue
		}
		quoted[i] = `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
	}
	return fmt.Sprintf("ANY %d (%s)", s.Count, strings.Join(quoted, ", "))
}

func (s syncSet) annotation() (names, count string) {
	if s.async() {
		return "", "0"
	}
	return strings.Join(s.Standbys, ","), strconv.Itoa(s.Count)
}

func parseSyncSet(names, count string) syncSet {
	n, _ := strconv.Atoi(count)
	var standbys []string
	if names != "" {
		standbys = strings.Split(names, ",")
	}
	return syncSet{Standbys: standbys, Count: n}
}

// desiredSyncSet is the set a primary wants from the instances streaming to
// it. Strict mode never falls back to asynchronous: with too few streaming
// it names every other instance, so commits wait until enough come back.
func desiredSyncSet(enabled, strict bool, want int, streaming, others []string) syncSet {
	if !enabled {
		return syncSet{}
	}
	if want < 1 {
		want = 1
	}
	streaming = sortedCopy(streaming)
	if !strict {
		return syncSet{Standbys: streaming, Count: min(want, len(streaming))}
	}
	names := streaming
	if len(names) < want {
		names = sortedCopy(append(slices.Clone(streaming), others...))
		names = slices.Compact(names)
	}
	if len(names) == 0 {
		names = []string{"*"}
	}
	return syncSet{Standbys: names, Count: min(want, len(names))}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// syncStep is the next move from what is recorded and what postgres runs
// with toward what is desired, in the order that keeps the record covering
// postgres at every moment: widen the record, change postgres, then narrow
// the record.
func syncStep(recorded, applied, desired syncSet) (record *syncSet, apply *syncSet) {
	switch {
	case !recorded.covers(desired):
		u := recorded.union(desired)
		return &u, nil
	case !applied.equal(desired):
		return nil, &desired
	case !recorded.equal(desired):
		return &desired, nil
	}
	return nil, nil
}

// peer is what a candidate knows of one instance while the primary is lost.
type peer struct {
	Name string
	LSN  uint64
}

// electable decides whether candidate may take over: it must be the most
// advanced of the instances it heard from and, when a synchronous set was in
// force, provably hold every acknowledged commit: a member of the set that
// heard from enough members that any Count of them include one it heard from
// (R + W > N). Knowing the old primary's own position settles it directly.
// maxLag (bytes, 0 = no limit) bounds how far behind the old primary's last
// known position an asynchronous candidate may be.
//
// Under a synchronous set, what the old primary (restarted, or back after a
// cut) holds beyond a candidate that proves it holds every acknowledged
// commit was never acknowledged: that candidate is preferred, and the old
// primary rewinds, as it would had it not come back before the election.
func electable(candidate string, known []peer, oldPrimary string, recorded syncSet, maxLag int64, primaryLSN uint64) (bool, string) {
	var mine *peer
	for i := range known {
		if known[i].Name == candidate {
			mine = &known[i]
		}
	}
	if mine == nil {
		return false, "its own position is unknown"
	}
	synchronous := !recorded.async()
	for _, p := range known {
		if p.Name == candidate || (synchronous && p.Name == oldPrimary) {
			continue
		}
		if ahead(p, *mine, oldPrimary) {
			return false, fmt.Sprintf("%s is further ahead or preferred (%s, this instance %s)", p.Name, formatLSN(p.LSN), formatLSN(mine.LSN))
		}
	}
	if candidate == oldPrimary {
		if synchronous {
			replicas := slices.DeleteFunc(slices.Clone(known), func(p peer) bool { return p.Name == oldPrimary })
			for _, p := range replicas {
				if ok, _ := electable(p.Name, replicas, oldPrimary, recorded, maxLag, primaryLSN); ok {
					return false, fmt.Sprintf("%s proves it holds every acknowledged commit: the old primary follows it", p.Name)
				}
			}
		}
		return true, "" // every acknowledged commit came from its WAL
	}
	for _, p := range known {
		if p.Name == oldPrimary && !ahead(p, *mine, oldPrimary) {
			return true, "" // the old primary's own WAL is no further
		}
	}
	if recorded.async() {
		if maxLag > 0 && primaryLSN > mine.LSN && int64(primaryLSN-mine.LSN) > maxLag {
			return false, fmt.Sprintf("%d bytes behind the primary's last known position %s, over maximumLagOnFailover %d", primaryLSN-mine.LSN, formatLSN(primaryLSN), maxLag)
		}
		return true, ""
	}
	wildcard := slices.Contains(recorded.Standbys, "*")
	if !wildcard && !slices.Contains(recorded.Standbys, candidate) {
		return false, fmt.Sprintf("not in the synchronous set %s", strings.Join(recorded.Standbys, ","))
	}
	heard := 0
	for _, p := range known {
		if wildcard || slices.Contains(recorded.Standbys, p.Name) {
			heard++
		}
	}
	need := len(recorded.Standbys) - recorded.Count + 1
	if wildcard {
		need = 1
	}
	if heard < need {
		for _, p := range known {
			if p.Name == oldPrimary {
				return false, fmt.Sprintf("%s, the old primary, is further ahead (%s, this instance %s) and this instance heard from %d of the synchronous set %s (ANY %d), not the %d that prove no acknowledged commit is missing",
					p.Name, formatLSN(p.LSN), formatLSN(mine.LSN), heard, strings.Join(recorded.Standbys, ","), recorded.Count, need)
			}
		}
		return false, fmt.Sprintf("heard from %d of the synchronous set %s (ANY %d); %d are needed to prove no acknowledged commit is missing", heard, strings.Join(recorded.Standbys, ","), recorded.Count, need)
	}
	return true, ""
}

// ahead orders candidates: the higher position first; on a tie an instance
// that was not the old primary, then the lower name.
func ahead(a, b peer, oldPrimary string) bool {
	if a.LSN != b.LSN {
		return a.LSN > b.LSN
	}
	if (a.Name == oldPrimary) != (b.Name == oldPrimary) {
		return b.Name == oldPrimary
	}
	return a.Name < b.Name
}

// parseLSN reads "16/B374D848".
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("malformed LSN %q", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("malformed LSN %q", s)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("malformed LSN %q", s)
	}
	return h<<32 | l, nil
}

func formatLSN(v uint64) string { return fmt.Sprintf("%X/%X", v>>32, uint32(v)) }
