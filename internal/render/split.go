package render

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/scrape"
)

// MaxSecretDataBytes is how much gzipped configuration one Secret may carry:
// the API refuses objects over 1 MiB, and metadata needs room too.
const MaxSecretDataBytes = 768 * 1024

// SplitThreshold is the uncompressed size above which the scrape jobs leave
// the main config for piece Secrets. It is far below what one Secret could
// hold: the point is that a change among thousands of monitors rewrites,
// compresses and ships one small piece, not the whole configuration.
const SplitThreshold = 256 * 1024

const emptyScrapeConfigs = "scrape_configs: []\n"

// split decides where the scrape jobs go. A config up to SplitThreshold stays
// whole (main = whole, no pieces). A larger one keeps its head (global,
// rule_files) and its tail (alerting, remote_write, remote_read) in the main
// config, which loads the jobs with scrape_config_files from ConfigPieceSlots
// pieces, gzipped, one Secret each.
//
// Each group (one monitor's jobs, or the additional scrape configs) goes to
// the piece its key hashes to. So the split depends on nothing but the input
// (`lookout render` gives the same pieces as the controller), and a change to
// one monitor changes exactly one piece: adding or removing a monitor never
// moves the others. The price is that the jobs are no longer in one sorted
// list across the files; Prometheus gives job order no meaning, and the
// whole config (Desired.Config, `lookout render -o config`) keeps the order.
// Should a piece not fit a Secret, the groups are packed in order instead,
// as many per piece as fit.
func split(res *scrape.Result, c *pieceCache) (main []byte, pieces [][]byte, err error) {
	if res.Size <= SplitThreshold {
		return res.Config(), nil, nil
	}
	slots := c.slots(len(res.Groups))
	for _, g := range res.Groups {
		h := g.KeyHash
		if h == 0 {
			h = scrape.HashKey(g.Key)
		}
		i := int(h % prometheus.ConfigPieceSlots)
		slots[i] = append(slots[i], g)
	}
	pieces = c.pieces(slots)
	fits := true
	for _, p := range pieces {
		fits = fits && len(p) <= MaxSecretDataBytes
	}
	if !fits {
		c.reset()
		if pieces, err = pack(res.Groups, res.Size); err != nil {
			return nil, nil, err
		}
	}
	main = append(append([]byte{}, res.Head...), "scrape_config_files:\n- "+prometheus.ConfigPiecesGlob+"\n"...)
	main = append(main, res.Tail...)
	return main, pieces, nil
}

// pieceOf is the piece a group with the key goes to: the 32-bit FNV-1a hash of
// the key (scrape.HashKey), modulo the number of slots.
func pieceOf(key string) int { return int(scrape.HashKey(key) % prometheus.ConfigPieceSlots) }

// pack fills pieces with groups in order, each piece up to about half of what
// a Secret holds once gzipped, halving any that still does not fit.
func pack(groups []scrape.Group, size int) ([][]byte, error) {
	var all [][]byte
	for _, g := range groups {
		all = append(all, g.Bytes())
	}
	gz, err := Gzip(bytes.Join(all, nil))
	if err != nil {
		return nil, err
	}
	ratio := float64(size) / float64(max(len(gz), 1))
	target := int(ratio * MaxSecretDataBytes / 2)
	var chunks [][][]byte
	var cur [][]byte
	n := 0
	for _, y := range all {
		if n+len(y) > target && len(cur) > 0 {
			chunks = append(chunks, cur)
			cur, n = nil, 0
		}
		cur = append(cur, y)
		n += len(y)
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	var pieces [][]byte
	for _, ch := range chunks {
		ps, err := compressChunk(ch)
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, ps...)
	}
	if len(pieces) > prometheus.ConfigPieceSlots {
		return nil, fmt.Errorf("the configuration needs %d Secrets of %d KiB gzipped, more than the %d the pod mounts",
			len(pieces), MaxSecretDataBytes/1024, prometheus.ConfigPieceSlots)
	}
	return pieces, nil
}

// compressChunk gzips one chunk of groups as a scrape_configs document,
// halving it until every part fits.
func compressChunk(groups [][]byte) ([][]byte, error) {
	doc := append([]byte("scrape_configs:\n"), bytes.Join(groups, nil)...)
	gz, err := Gzip(doc)
	if err != nil {
		return nil, err
	}
	if len(gz) <= MaxSecretDataBytes {
		return [][]byte{gz}, nil
	}
	if len(groups) == 1 {
		return nil, fmt.Errorf("the jobs of one monitor are %d bytes gzipped, more than a Secret can hold", len(gz))
	}
	a, err := compressChunk(groups[:len(groups)/2])
	if err != nil {
		return nil, err
	}
	b, err := compressChunk(groups[len(groups)/2:])
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}

// pieceCache keeps a Chain per piece slot, so that a piece whose groups did
// not change is not assembled again, and one that did compresses only the
// groups that changed and the ones right after them. The groups' data are the
// scrape cache's own slices, so an unchanged group is recognised without
// copying or hashing its bytes. A nil pieceCache assembles every piece.
type pieceCache struct {
	chains []scrape.Chain
	// spare holds, for each slot, the groups slice its chain no longer holds, emptied:
	// the slots of the next render, which are thousands of groups on every change
	// otherwise.
	spare [][]scrape.Group
}

// slots returns a slot per piece to sort n groups into, empty.
func (c *pieceCache) slots(n int) [][]scrape.Group {
	slots := make([][]scrape.Group, prometheus.ConfigPieceSlots)
	for i := range slots {
		if c != nil && i < len(c.spare) && c.spare[i] != nil {
			slots[i], c.spare[i] = c.spare[i], nil
			continue
		}
		slots[i] = make([]scrape.Group, 0, n/len(slots)*5/4+8) // the keys hash evenly
	}
	return slots
}

// pieces assembles the piece of every slot, on every core when several
// pieces changed (a start compresses every group).
func (c *pieceCache) pieces(slots [][]scrape.Group) [][]byte {
	if c == nil {
		c = &pieceCache{}
	}
	if len(c.chains) != len(slots) {
		c.chains = make([]scrape.Chain, len(slots))
	}
	if len(c.spare) != len(slots) {
		c.spare = make([][]scrape.Group, len(slots))
	}
	out := make([][]byte, len(slots))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, items := range slots {
		prefix := []byte(emptyScrapeConfigs)
		if len(items) > 0 {
			prefix = []byte("scrape_configs:\n")
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			held := c.chains[i].Groups()
			out[i] = c.chains[i].Gzip(prefix, items)
			if unsafe.SliceData(c.chains[i].Groups()) == unsafe.SliceData(items) {
				c.spare[i] = emptied(held)
			} else {
				c.spare[i] = emptied(items)
			}
		})
	}
	wg.Wait()
	return out
}

func (c *pieceCache) reset() {
	if c != nil {
		c.chains, c.spare = nil, nil
	}
}

// emptied clears groups whole, so that it holds on to no group's data, and returns it
// empty.
func emptied(groups []scrape.Group) []scrape.Group {
	clear(groups[:cap(groups)])
	return groups[:0]
}
