package pginstance

import (
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSeekProof(t *testing.T) {
	lease := 5 * time.Second
	cases := []struct {
		name          string
		silent        time.Duration
		following     string
		receiving     bool
		sinceReceived time.Duration
		want          bool
	}{
		{"waits while the lease is renewed and the replica streams", 500 * time.Millisecond, "pg-0", true, 0, false},
		{"looks once the lease has been silent for 3/10 of its duration", 1600 * time.Millisecond, "pg-0", true, 0, true},
		{"looks at once when the WAL receiver just lost the primary", 100 * time.Millisecond, "pg-0", false, 300 * time.Millisecond, true},
		{"does not look early for a replica that follows another instance", 100 * time.Millisecond, "pg-1", false, 300 * time.Millisecond, false},
		{"does not look early for a replica that has not streamed for a lease", 100 * time.Millisecond, "pg-0", false, 6 * time.Second, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := seekProof(c.silent, lease, c.following, "pg-0", c.receiving, c.sinceReceived); got != c.want {
				t.Fatalf("seekProof = %v, want %v", got, c.want)
			}
		})
	}
}

func TestHandoverStarted(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	seen := now.Add(-300 * time.Millisecond)
	lease := func(v string) *coordv1.Lease {
		return &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{annotationHandoverStarted: v}}}
	}
	cases := []struct {
		name  string
		lease *coordv1.Lease
		want  time.Time
	}{
		{"takes the old primary's start of the pause", lease(now.Add(-1200 * time.Millisecond).Format(time.RFC3339Nano)), now.Add(-1200 * time.Millisecond)},
		{"falls back to when the handover was seen without one", lease(""), seen},
		{"falls back to when the handover was seen for a time after now (another clock)", lease(now.Add(time.Second).Format(time.RFC3339Nano)), seen},
		{"falls back to when the handover was seen for a time over an hour old", lease(now.Add(-2 * time.Hour).Format(time.RFC3339Nano)), seen},
		{"falls back to when the handover was seen without a lease", nil, seen},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := handoverStarted(c.lease, seen, now); !got.Equal(c.want) {
				t.Fatalf("handoverStarted = %s, want %s", got, c.want)
			}
		})
	}
}
