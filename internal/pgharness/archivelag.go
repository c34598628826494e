package pgharness

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// ArchiveLag writes a row every 100 ms to instance primary for dur (a
// trickle, which fills a segment far slower than archive_timeout switches
// it) and measures, for a commit every second, the time until the segment
// holding it is archived (pg_stat_archiver: in the repository). It returns
// the lags, sorted, and how many segments were archived meanwhile.
func (c *Cluster) ArchiveLag(primary string, dur time.Duration) ([]time.Duration, int) {
	c.T.Helper()
	ctx := context.Background()
	conn := c.Connect(c.SuperuserConnString(primary, "postgres"))
	defer conn.Close(ctx)
	watch := c.Connect(c.SuperuserConnString(primary, "postgres"))
	defer watch.Close(ctx)
	table := pgx.Identifier{"trickle_" + RandomString(6)}.Sanitize() // RandomString may give "-"
	_, err := conn.Exec(ctx, `CREATE TABLE `+table+` (id bigint PRIMARY KEY, at timestamptz DEFAULT clock_timestamp())`)
	c.must(err)

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
		_, err := conn.Exec(ctx, `INSERT INTO `+table+` (id) VALUES ($1)`, id)
		c.must(err)
		if id%10 == 0 {
			var seg string
			c.must(conn.QueryRow(ctx, `SELECT pg_walfile_name(pg_current_wal_lsn())`).Scan(&seg))
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
	lags := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		at, _ := archived(s.seg)
		lags = append(lags, at.Sub(s.at))
	}
	slices.Sort(lags)
	return lags, len(archivedSegs)
}

// Quantile is the nearest-rank quantile q (0 … 1) of sorted durations.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}
