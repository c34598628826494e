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
// Hashes are over the decompressed configuration, before substitution, so both sources
// compare equal for the same Secret content.
type arbiter struct {
	trustDelay time.Duration

	applied    digest
	hasApplied bool

	apiSynced bool      // a list succeeded and the watch has not failed since
	apiValue  bool      // the last API state held the configuration key
	apiLostAt time.Time // when the watch last fell out of sync

	file *input // latest file value, kept for rule 4
}

func (a *arbiter) differs(h digest) bool { return !a.hasApplied || h != a.applied }

// fileTrusted reports whether the file decides at now.
func (a *arbiter) fileTrusted(now time.Time) bool {
	if !a.apiValue {
		return true
	}
	return !a.apiSynced && now.Sub(a.apiLostAt) >= a.trustDelay
}

// fromAPI records the Secret's current configuration and reports whether to apply it.
func (a *arbiter) fromAPI(in input) bool {
	a.apiSynced, a.apiValue = true, true
	return a.differs(in.hash)
}

// apiEmpty records that the API is in sync but holds no configuration (no Secret, or no
// key), so it has nothing to say against the file.
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
	return a.fileTrusted(now) && a.differs(in.hash)
}

// pendingFile returns the latest file value when it should be applied now; the main loop
// calls it when waitForFile says the file may have become trusted.
func (a *arbiter) pendingFile(now time.Time) (input, bool) {
	if a.file == nil || !a.fileTrusted(now) || !a.differs(a.file.hash) {
		return input{}, false
	}
	return *a.file, true
}

// waitForFile reports how long until a file value that is being held back becomes
// trusted by rule 4.
func (a *arbiter) waitForFile(now time.Time) (time.Duration, bool) {
	if a.file == nil || !a.differs(a.file.hash) || !a.apiValue || a.apiSynced {
		return 0, false
	}
	return max(a.trustDelay-now.Sub(a.apiLostAt), 0), true
}

// markApplied records that in is now the output.
func (a *arbiter) markApplied(h digest) {
	a.applied, a.hasApplied = h, true
}
