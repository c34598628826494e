package reloader

import "time"

// arbiter decides which delivered configuration becomes the output when both the mounted
// file and the Secret watch are running. It is pure: the caller passes the time.
//
// The file is a delayed copy of the Secret (the kubelet syncs Secret volumes every minute
// or two), so whenever the API has something to say it is at least as new as the file:
// a list is a consistent read and a watch delivers changes in order. The rule:
//
//  1. A value from the API is applied whenever it differs from the applied one. It is
//     the newest there is, even when it equals something applied before (a revert).
//  2. While the watch is in sync and the Secret exists, the file is ignored. A file that
//     still shows an older value, or catches up through an intermediate one, therefore
//     cannot roll anything back; once it catches up it matches and nothing happens.
//  3. The file decides whenever the API cannot: --config-secret unset, no in-cluster
//     credentials, access forbidden, the Secret not found, or no successful list yet.
//  4. When the watch breaks after having synced, the file is trusted again only once it
//     has been broken for longer than FileTrustDelay (longer than a kubelet sync
//     period): by then the file reflects the Secret as of after the last API value, so
//     it cannot be older. Its latest value is re-examined at that moment.
//  5. When the watch comes back, its list result is applied by rule 1, which heals
//     anything the file decided in between.
//
// For a piece, absence is a state like any content: the API reporting the Secret (or its
// key) missing is a value under rule 1, and a missing file is a file value. So a deleted
// piece is removed as soon as the watch says so, and the file the kubelet has not
// emptied yet cannot bring it back (rule 2). "The Secret not found" in rule 3 is about
// the main configuration only, which is never removed: there the file decides.
//
// Hashes are over the decompressed configuration, before substitution, so both sources
// compare equal for the same Secret content.
type arbiter struct {
	trustDelay time.Duration

	applied    state
	hasApplied bool

	apiSynced bool      // a list succeeded and the watch has not failed since
	apiValue  bool      // the last API state is authoritative (content, or a piece's absence)
	apiLostAt time.Time // when the watch last fell out of sync

	file *input // latest file value, kept for rule 4
}

func (a *arbiter) differs(s state) bool { return !a.hasApplied || s != a.applied }

// fileTrusted reports whether the file decides at now.
func (a *arbiter) fileTrusted(now time.Time) bool {
	if !a.apiValue {
		return true
	}
	return !a.apiSynced && now.Sub(a.apiLostAt) >= a.trustDelay
}

// fromAPI records the Secret's current state and reports whether to apply it.
func (a *arbiter) fromAPI(in input) bool {
	a.apiSynced, a.apiValue = true, true
	return a.differs(in.state())
}

// apiEmpty records that the API is in sync but holds no main configuration (no Secret,
// or no key), so it has nothing to say against the file. For a piece, the caller passes
// an absent input to fromAPI instead.
func (a *arbiter) apiEmpty() {
	a.apiSynced, a.apiValue = true, false
}

// apiLost records that the watch failed at now.
func (a *arbiter) apiLost(now time.Time) {
	if a.apiSynced {
		a.apiSynced = false
		a.apiLostAt = now
	}
}

// fromFile records a new file value and reports whether to apply it.
func (a *arbiter) fromFile(in input, now time.Time) bool {
	a.file = &in
	return a.fileTrusted(now) && a.differs(in.state())
}

// pendingFile returns the latest file value when it should be applied now; the main loop
// calls it when waitForFile says the file may have become trusted.
func (a *arbiter) pendingFile(now time.Time) (input, bool) {
	if a.file == nil || !a.fileTrusted(now) || !a.differs(a.file.state()) {
		return input{}, false
	}
	return *a.file, true
}

// waitForFile reports how long until a file value that is being held back becomes
// trusted by rule 4.
func (a *arbiter) waitForFile(now time.Time) (time.Duration, bool) {
	if a.file == nil || !a.differs(a.file.state()) || !a.apiValue || a.apiSynced {
		return 0, false
	}
	return max(a.trustDelay-now.Sub(a.apiLostAt), 0), true
}

// markApplied records that s is now the output.
func (a *arbiter) markApplied(s state) {
	a.applied, a.hasApplied = s, true
}
