package scrape

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"slices"
	"sync"
)

// Group is the jobs of one monitor, or the additional scrape configs, as the items of the
// scrape_configs sequence. The jobs of cached monitors are kept compressed (Packed, about a
// fifth of the size): thousands of monitors' jobs stay in memory between renders, and only
// the groups a change touches are unpacked again (Chain). Exactly one of YAML and Packed is
// set.
type Group struct {
	Key    string // "<kind>/<namespace>/<name>", or AdditionalGroupKey
	YAML   []byte
	Packed []byte
	Size   int    // len of the YAML, packed or not
	CRC    uint32 // CRC-32 (IEEE) of the YAML when Packed is set
	// KeyHash is HashKey(Key), made once with a monitor's cache entry so that a render of
	// thousands of groups does not hash every key again; 0: not made.
	KeyHash uint32
}

// HashKey is the 32-bit FNV-1a hash of a group's key (computed here rather than through
// hash/fnv, which would allocate for each of thousands of groups).
func HashKey(key string) uint32 {
	const offset, prime = 2166136261, 16777619
	h := uint32(offset)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * prime
	}
	return h
}

// Bytes is the group's YAML.
func (g Group) Bytes() []byte {
	if g.Packed == nil {
		return g.YAML
	}
	return g.AppendTo(make([]byte, 0, g.Size))
}

// AppendTo appends the group's YAML to dst, unpacking straight into it.
func (g Group) AppendTo(dst []byte) []byte {
	if g.Packed == nil {
		return append(dst, g.YAML...)
	}
	out, err := unpackTo(dst, g.Packed, g.Size)
	if err != nil {
		// Only bytes pack produced are unpacked: this is a bug, not input.
		panic(fmt.Sprintf("unpack the jobs of %s: %v", g.Key, err))
	}
	return out
}

// Data is what the group holds, packed or not: two groups with the same Data have the same
// YAML, and while a Cache keeps a monitor's entry its Data is the same slice.
func (g Group) Data() []byte {
	if g.Packed == nil {
		return g.YAML
	}
	return g.Packed
}

// writers keeps compressors of one level for reuse. A compressor weighs hundreds of KiB,
// and a change needs one or two: a sync.Pool loses them at every other collection, which
// under a stream of changes means allocating them again every few changes. These stay:
// up to one per core, idle or not.
type writers struct {
	level int
	idle  chan *flate.Writer
}

func newWriters(level int) *writers {
	return &writers{level: level, idle: make(chan *flate.Writer, runtime.GOMAXPROCS(0))}
}

func (ws *writers) get(dst io.Writer) *flate.Writer {
	select {
	case w := <-ws.idle:
		w.Reset(dst)
		return w
	default:
		w, err := flate.NewWriter(dst, ws.level)
		if err != nil {
			panic(err) // only for a level out of range
		}
		return w
	}
}

func (ws *writers) put(w *flate.Writer) {
	select {
	case ws.idle <- w:
	default:
	}
}

var (
	packers   = newWriters(flate.BestSpeed)
	unpackers sync.Pool
	// linkers compress the links of a Chain one level above the fastest: links are short
	// blocks, where the fastest level always writes its own Huffman tables and this one
	// may use the fixed ones, for about two thirds of the size at about the same speed.
	linkers = newWriters(flate.BestSpeed + 1)
)

// pack compresses b deterministically.
func pack(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/3 + 16)
	w := packers.get(&buf)
	defer packers.put(w)
	_, _ = w.Write(b) // writes to a bytes.Buffer do not fail
	_ = w.Close()
	return bytes.Clone(buf.Bytes())
}

// A Chain is one gzip member holding a prefix and the YAML of groups, in order, kept so that a
// change to a few of its groups compresses only those again.
//
// Each group's YAML is compressed as it follows the YAML of the group before it: DEFLATE
// blocks that end on a byte boundary with no final block (a flush), which may refer back into
// the group before, as one compression of the whole would, and into nothing further. So a
// group's blocks (its link) depend on its own YAML and on the YAML of the group before it
// alone, the links of a chain follow one another as one DEFLATE stream, and the member is the
// same bytes however the chain came to hold its groups. A change to a group compresses that
// group and the one after it again; the others are copied. The checksum of the whole is
// combined from the groups' own.
type Chain struct {
	prefix []byte
	groups []Group
	links  [][]byte // links[i] holds groups[i]'s YAML
	gz     []byte
}

// Groups are the groups the chain holds: the slice last given to Gzip that changed it.
func (c *Chain) Groups() []Group { return c.groups }

// Gzip makes the chain hold prefix and groups, and returns its gzip member. It keeps
// groups when they differ from those it held, and leaves groups alone otherwise.
func (c *Chain) Gzip(prefix []byte, groups []Group) []byte {
	if c.gz != nil && bytes.Equal(c.prefix, prefix) && sameGroups(c.groups, groups) {
		return c.gz
	}
	at := make(map[string]int, len(c.groups))
	for i, g := range c.groups {
		at[g.Key] = i
	}
	samePrefix := bytes.Equal(c.prefix, prefix)
	// The YAML of groups[i-1] when groups[i] must be linked again: each group is unpacked
	// at most twice, once for itself and once for the group after it.
	var lastAt = -1
	var last []byte
	yamlOf := func(i int) []byte {
		if i < 0 {
			return prefix
		}
		if i != lastAt {
			lastAt, last = i, groups[i].Bytes()
		}
		return last
	}
	links := make([][]byte, len(groups))
	for i, g := range groups {
		if o, ok := at[g.Key]; ok && sameData(c.groups[o], g) {
			before := o == 0 && i == 0 && samePrefix ||
				o > 0 && i > 0 && c.groups[o-1].Key == groups[i-1].Key && sameData(c.groups[o-1], groups[i-1])
			if before {
				links[i] = c.links[o]
				continue
			}
		}
		ctx := yamlOf(i - 1)
		links[i] = link(ctx, yamlOf(i))
	}
	c.prefix, c.groups, c.links = bytes.Clone(prefix), groups, links
	c.gz = joinGzip(link(nil, prefix), prefix, groups, links)
	return c.gz
}

// window is how far back DEFLATE may refer.
const window = 32 << 10

// link compresses b as it follows ctx (of which only the last window counts): the blocks of b
// alone, flushed.
func link(ctx, b []byte) []byte {
	ctx = ctx[max(len(ctx)-window, 0):]
	var buf bytes.Buffer
	buf.Grow(len(ctx)/3 + len(b)/3 + 32)
	w := linkers.get(&buf)
	defer linkers.put(w)
	n := 0
	if len(ctx) > 0 {
		_, _ = w.Write(ctx) // writes to a bytes.Buffer do not fail
		_ = w.Flush()
		n = buf.Len()
	}
	_, _ = w.Write(b)
	_ = w.Flush()
	return bytes.Clone(buf.Bytes()[n:])
}

// joinGzip writes the gzip member of the prefix (compressed as head) followed by the groups
// (compressed as links): a final empty block ends the DEFLATE stream, and the CRC-32 and size
// of the whole are combined from the parts'.
func joinGzip(head, prefix []byte, groups []Group, links [][]byte) []byte {
	n := len(gzipHeader) + len(head) + len(finalEmptyBlock) + 8
	for _, l := range links {
		n += len(l)
	}
	out := append(make([]byte, 0, n), gzipHeader...)
	out = append(out, head...)
	sum, size := crc32.ChecksumIEEE(prefix), uint32(len(prefix))
	for i, g := range groups {
		out = append(out, links[i]...)
		crc := g.CRC
		if g.Packed == nil {
			crc = crc32.ChecksumIEEE(g.YAML)
		}
		sum = crc32Combine(sum, crc, g.Size)
		size += uint32(g.Size)
	}
	out = append(out, finalEmptyBlock...)
	out = binary.LittleEndian.AppendUint32(out, sum)
	return binary.LittleEndian.AppendUint32(out, size) // the size modulo 2^32, as gzip has it
}

func sameGroups(a, b []Group) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !sameData(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameData tells whether two groups hold the same YAML, by the identity of what they hold
// first: a monitor's entry keeps the same packed slice for as long as it is cached.
func sameData(a, b Group) bool {
	da, db := a.Data(), b.Data()
	if (a.Packed == nil) != (b.Packed == nil) || len(da) != len(db) {
		return false
	}
	if len(da) == 0 || &da[0] == &db[0] {
		return true
	}
	return bytes.Equal(da, db)
}

var (
	// gzipHeader: magic, deflate, no flags, no modification time, no extra flags, unknown OS.
	gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}
	// finalEmptyBlock is a final block with fixed codes holding only its end: the bits 1
	// (final), 01 (fixed Huffman codes) and the seven zero bits of end-of-block.
	finalEmptyBlock = []byte{0x03, 0x00}
)

// crc32Combine is the CRC-32 (IEEE) of a followed by b, from the CRC-32 of each and the
// length of b. A CRC is the message's polynomial times x^32 modulo the generator, with the
// register's initial and final inversions; appending lenB bytes to a multiplies a's share
// by x^(8·lenB), and the inversions of the two parts cancel out in the exclusive or.
func crc32Combine(a, b uint32, lenB int) uint32 {
	if lenB == 0 {
		return a
	}
	return crc32MulMod(crc32XPow8n(uint64(lenB)), a) ^ b
}

// The polynomials below are in the reflected order hash/crc32 uses for IEEE: the bit for
// x^0 is the highest (1<<31), the bit for x^31 the lowest.

// crc32MulMod is a·b modulo the IEEE generator.
func crc32MulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		// b times x
		if b&1 != 0 {
			b = b>>1 ^ crc32.IEEE
		} else {
			b >>= 1
		}
	}
	return p
}

// crc32XPow8n is x^(8n) modulo the IEEE generator, by squaring: crc32XPow2k[k] is x^(2^k).
func crc32XPow8n(n uint64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = crc32MulMod(crc32XPow2k[k], p)
		}
	}
	return p
}

var crc32XPow2k = func() (t [64]uint32) {
	t[0] = 1 << 30 // x^1
	for k := 1; k < len(t); k++ {
		t[k] = crc32MulMod(t[k-1], t[k-1])
	}
	return t
}()

// unpackTo appends the size bytes packed in p to dst.
func unpackTo(dst, p []byte, size int) ([]byte, error) {
	var r io.ReadCloser
	if v := unpackers.Get(); v != nil {
		r = v.(io.ReadCloser)
		if err := r.(flate.Resetter).Reset(bytes.NewReader(p), nil); err != nil {
			return nil, err
		}
	} else {
		r = flate.NewReader(bytes.NewReader(p))
	}
	defer unpackers.Put(r)
	dst = slices.Grow(dst, size)
	n := len(dst)
	if _, err := io.ReadFull(r, dst[n:n+size]); err != nil {
		return nil, err
	}
	var one [1]byte
	if k, _ := r.Read(one[:]); k != 0 {
		return nil, fmt.Errorf("more than the %d bytes expected", size)
	}
	return dst[:n+size], nil
}
