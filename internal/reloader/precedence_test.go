package reloader

import (
	"testing"
	"time"
)

// step drives the arbiter the way the main loop does. For "file", "api" and "recheck",
// want says whether the value is applied; an applied value is marked as such. The value
// "-" is a piece's absence (file missing, or the API saying the Secret does not exist).
type step struct {
	do   string // file, api, empty, lost, recheck
	v    string
	at   time.Duration
	want bool
}

func TestArbiter(t *testing.T) {
	const delay = 2 * time.Minute
	cases := []struct {
		name  string
		steps []step
	}{
		{"applies the file when there is no API source", []step{
			{do: "file", v: "v1", want: true},
			{do: "file", v: "v2", want: true},
			{do: "file", v: "v1", want: true},
		}},
		{"applies the file before the API has listed, then the newer API value", []step{
			{do: "file", v: "v1", want: true},
			{do: "api", v: "v2", want: true},
		}},
		{"does not apply the API value the file already delivered", []step{
			{do: "file", v: "v1", want: true},
			{do: "api", v: "v1", want: false},
		}},
		{"ignores an older file value read after the API delivered a newer one", []step{
			{do: "api", v: "v2", want: true},
			{do: "file", v: "v1", want: false},
		}},
		{"ignores an intermediate file value while the kubelet catches up", []step{
			{do: "file", v: "v1", want: true},
			{do: "api", v: "v2", want: true},
			{do: "api", v: "v3", want: true},
			{do: "file", v: "v2", want: false},
			{do: "file", v: "v3", want: false},
		}},
		{"applies an API revert to a value applied before", []step{
			{do: "api", v: "v1", want: true},
			{do: "api", v: "v2", want: true},
			{do: "api", v: "v1", want: true},
		}},
		{"holds the file back while the watch has been broken for less than the trust delay", []step{
			{do: "api", v: "v1", want: true},
			{do: "lost", at: time.Second},
			{do: "file", v: "v2", at: time.Minute, want: false},
			{do: "recheck", at: time.Second + delay - time.Millisecond, want: false},
		}},
		{"trusts the file once the watch has been broken for longer than the trust delay", []step{
			{do: "api", v: "v1", want: true},
			{do: "lost", at: time.Second},
			{do: "file", v: "v2", at: time.Minute, want: false},
			{do: "recheck", v: "v2", at: time.Second + delay, want: true},
			{do: "file", v: "v1", at: 3 * time.Minute, want: true},
		}},
		{"a second failure does not restart the trust delay", []step{
			{do: "api", v: "v1", want: true},
			{do: "lost", at: 0},
			{do: "lost", at: time.Minute},
			{do: "file", v: "v2", at: delay, want: true},
		}},
		{"re-applies the API value when the watch comes back", []step{
			{do: "api", v: "v1", want: true},
			{do: "lost", at: 0},
			{do: "file", v: "v0", at: delay, want: true},
			{do: "api", v: "v1", at: delay + time.Second, want: true},
			{do: "file", v: "v2", at: delay + 2*time.Second, want: false},
		}},
		{"trusts the file when the Secret does not exist", []step{
			{do: "empty"},
			{do: "file", v: "v1", want: true},
		}},
		{"trusts the held-back file when the Secret is deleted", []step{
			{do: "api", v: "v1", want: true},
			{do: "file", v: "v2", want: false},
			{do: "empty"},
			{do: "recheck", v: "v2", want: true},
		}},
		{"trusts the file when the watch never synced", []step{
			{do: "lost"},
			{do: "file", v: "v1", want: true},
		}},
		{"applies a piece's absence from the file when there is no API source", []step{
			{do: "file", v: "-", want: true},
			{do: "file", v: "v1", want: true},
			{do: "file", v: "-", want: true},
		}},
		{"tells an absent piece from an empty one", []step{
			{do: "file", v: "", want: true},
			{do: "file", v: "-", want: true},
			{do: "api", v: "", want: true},
		}},
		{"applies a piece's absence from the API before the file", []step{
			{do: "file", v: "v1", want: true},
			{do: "api", v: "v1", want: false},
			{do: "api", v: "-", want: true},
			{do: "file", v: "v1", want: false},
			{do: "file", v: "-", want: false},
		}},
		{"does not let the missing file remove a piece the API already delivered", []step{
			{do: "file", v: "-", want: true},
			{do: "api", v: "v1", want: true},
			{do: "file", v: "-", want: false},
		}},
		{"trusts the file about an absent piece once the watch has been broken long enough", []step{
			{do: "api", v: "-", want: true},
			{do: "lost", at: 0},
			{do: "file", v: "v1", at: time.Second, want: false},
			{do: "recheck", v: "v1", at: delay, want: true},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := arbiter{trustDelay: delay}
			start := time.Unix(1_700_000_000, 0)
			for i, s := range c.steps {
				now := start.Add(s.at)
				in := newInput(SourceFile, []byte(s.v))
				if s.v == "-" {
					in = absentInput(SourceFile)
				}
				var got bool
				switch s.do {
				case "file":
					got = a.fromFile(in, now)
				case "api":
					in.source = SourceAPI
					got = a.fromAPI(in)
				case "empty":
					a.apiEmpty()
					continue
				case "lost":
					a.apiLost(now)
					continue
				case "recheck":
					var pending input
					pending, got = a.pendingFile(now)
					if got && pending.state() != in.state() {
						t.Fatalf("step %d: pending file is %s, want %s", i, pending.state(), s.v)
					}
					if d, waiting := a.waitForFile(now); !got && waiting && d <= 0 {
						t.Fatalf("step %d: waitForFile says now but pendingFile says no", i)
					}
				default:
					t.Fatalf("unknown step %q", s.do)
				}
				if got != s.want {
					t.Fatalf("step %d (%s %s at %v): applied = %v, want %v", i, s.do, s.v, s.at, got, s.want)
				}
				if got {
					a.markApplied(in.state())
				}
			}
		})
	}
}
