package pgharness

import (
	"bufio"
	"os"
	"strings"
	"time"
)

// Steps are when the new primary logged each step of taking over after a
// fault (zero when it did not log it: a switchover hands over instead).
type Steps struct {
	// PrimaryLost: it concluded the primary is gone (detection), and why
	// (the Lease expired, or which proof of death).
	PrimaryLost time.Time
	LostReason  string
	// LeaseTaken: its write of the Lease returned, LeaseWrite after it
	// started; before that it chose itself (peers' positions, the
	// synchronous set applied).
	LeaseTaken time.Time
	LeaseWrite time.Duration
	// Promoted: postgres left recovery and accepts writes.
	Promoted time.Time
	// HandingOver and HandedOver are the old primary's, in a switchover:
	// it starts (checkpoint, shutdown) and has written the Lease for the
	// target.
	HandingOver, HandedOver time.Time
}

// readSteps reads the steps the manager logged at path after since (the
// slog text lines of `lookout instance`).
func readSteps(path string, since time.Time) Steps {
	var s Steps
	f, err := os.Open(path)
	if err != nil {
		return s
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		at, err := time.Parse(time.RFC3339Nano, field(line, "time"))
		if err != nil || at.Before(since) {
			continue
		}
		switch field(line, "msg") {
		case "Primary lost":
			if s.PrimaryLost.IsZero() {
				s.PrimaryLost, s.LostReason = at, field(line, "reason")
			}
		case "Took the lease":
			s.LeaseTaken = at
			s.LeaseWrite, _ = time.ParseDuration(field(line, "write"))
		case "Promoted":
			s.Promoted = at
		case "Switchover: handing over":
			s.HandingOver = at
		case "Switchover: lease handed over":
			s.HandedOver = at
		}
	}
	return s
}

// field is the value of key in a slog text line (unquoted).
func field(line, key string) string {
	i := strings.Index(line, key+"=")
	if i < 0 || (i > 0 && line[i-1] != ' ') {
		return ""
	}
	v := line[i+len(key)+1:]
	if strings.HasPrefix(v, `"`) {
		if j := strings.Index(v[1:], `"`); j >= 0 {
			return v[1 : j+1]
		}
		return ""
	}
	if j := strings.IndexByte(v, ' '); j >= 0 {
		return v[:j]
	}
	return v
}
