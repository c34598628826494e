package pg

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lookout-operator/lookout/internal/pgharness"
)

// Archive lag under a steady trickle of writes (pgharness's ArchiveLag: a
// row every 100 ms, and for a commit every second the time until the
// segment holding it is in the S3 repository). Asserts the 99th percentile
// within 60 s. LOOKOUT_ARCHIVE_LAG_SECONDS sets how long it writes (60 by
// default).
func TestArchiveLagUnderSteadyWrites(t *testing.T) {
	dur := 60 * time.Second
	if v, err := strconv.Atoi(os.Getenv("LOOKOUT_ARCHIVE_LAG_SECONDS")); err == nil && v > 0 {
		dur = time.Duration(v) * time.Second
	}
	s3 := startS3(t)
	c := newCluster(t, 1, backupConfig(s3), s3.Credentials("repo1"))
	primary := c.WaitHealthy(3 * time.Minute)
	waitStanza(c, primary)
	lags, segments := c.ArchiveLag(primary, dur)
	q := func(p float64) time.Duration { return pgharness.Quantile(lags, p).Round(10 * time.Millisecond) }
	t.Logf("archive lag over %d commits in %s (%d segments archived): p50 %s, p99 %s, max %s",
		len(lags), dur, segments, q(0.5), q(0.99), q(1))
	if q(0.99) > 60*time.Second {
		t.Errorf("archive lag p99 %s, want at most 60 s", q(0.99))
	}
}
