package pg

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// Archive lag under a steady trickle of writes (a row every 100 ms, which
// fills a segment far slower than archive_timeout switches it): for a
// commit every second, the time until the segment holding it is archived
// (pg_stat_archiver, that is, in the S3 repository). Asserts the 99th
// percentile within 60 s. LOOKOUT_ARCHIVE_LAG_SECONDS sets how long it
// writes (60 by default).
func TestArchiveLagUnderSteadyWrites(t *testing.T) {
	dur := 60 * time.Second
	if v, err := strconv.Atoi(os.Getenv("LOOKOUT_ARCHIVE_LAG_SECONDS")); err == nil && v > 0 {
		dur = time.Duration(v) * time.Second
	}
	s3 := startS3(t)
	c := newCluster(t, 1, backupConfig(s3), s3.Credentials("repo1"))
	primary := c.WaitHealthy(3 * time.Minute)
	waitStanza(c, primary)
	ctx := context.Background()
	conn := c.Connect(c.SuperuserConnString(primary, "postgres"))
	defer conn.Close(ctx)
	watch := c.Connect(c.SuperuserConnString(primary, "postgres"))
	defer watch.Close(ctx)
	_, err := conn.Exec(ctx, `CREATE TABLE trickle (id bigint PRIMARY KEY, at timestamptz DEFAULT clock_timestamp())`)
	must(t, err)

	type sample struct {
		at  time.Time
		seg string
	}
	var samples []sample
	archivedAt := map[string]time.Time{} // first seen as the last archived segment
	var archivedSegs []string
	poll := func() {
		var last *string
		if err := watch.QueryRow(ctx, `SELECT last_archived_wal FROM pg_stat_archiver`).Scan(&last); err == nil && last != nil {
			if _, ok := archivedAt[*last]; !ok {
				archivedAt[*last] = time.Now()
				archivedSegs = append(archivedSegs, *last)
			}
		}
	}
	// archived is when seg was archived: the first time a segment at or
	// after it was seen archived (segments are archived in order).
	archived := func(seg string) (time.Time, bool) {
		for _, a := range archivedSegs {
			if len(a) == 24 && a >= seg {
				return archivedAt[a], true
			}
		}
		return time.Time{}, false
	}
	// The writer's pace: a row per tick.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	start, id := time.Now(), 0
	for time.Since(start) < dur {
		<-tick.C
		id++
		_, err := conn.Exec(ctx, `INSERT INTO trickle (id) VALUES ($1)`, id)
		must(t, err)
		if id%10 == 0 {
			var seg string
			must(t, conn.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&seg))
			samples = append(samples, sample{time.Now(), seg})
		}
		poll()
	}
	last := samples[len(samples)-1]
	c.WaitFor(3*time.Minute, "the last sample's segment archived", func() (bool, string) {
		poll()
		_, ok := archived(last.seg)
		return ok, fmt.Sprint(archivedSegs)
	})
	var lags []time.Duration
	for _, s := range samples {
		at, _ := archived(s.seg)
		lags = append(lags, at.Sub(s.at))
	}
	slices.Sort(lags)
	q := func(p float64) time.Duration { return lags[int(p*float64(len(lags)-1))].Round(10 * time.Millisecond) }
	t.Logf("archive lag over %d commits in %s (%d segments archived): p50 %s, p99 %s, max %s",
		len(lags), dur, len(archivedSegs), q(0.5), q(0.99), lags[len(lags)-1].Round(10*time.Millisecond))
	if q(0.99) > 60*time.Second {
		t.Errorf("archive lag p99 %s, want at most 60 s", q(0.99))
	}
}
