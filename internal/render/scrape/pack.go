package scrape

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Group is the jobs of one monitor, or the additional scrape configs, as the items of the
// scrape_configs sequence. The jobs of cached monitors are kept compressed (Packed, about a
// fifth of the size): thousands of monitors' jobs stay in memory between renders, and only
// the piece a change falls into is unpacked again. Exactly one of YAML and Packed is set.
type Group struct {
	Key    string // "<kind>/<namespace>/<name>", or AdditionalGroupKey
	YAML   []byte
	Packed []byte
	Size   int // len of the YAML, packed or not
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

var (
	packers = sync.Pool{New: func() any {
		w, err := flate.NewWriter(io.Discard, flate.BestSpeed)
		if err != nil {
			panic(err)
		}
		return w
	}}
	unpackers sync.Pool
)

// pack compresses b deterministically.
func pack(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/3 + 16)
	w := packers.Get().(*flate.Writer)
	defer packers.Put(w)
	w.Reset(&buf)
	_, _ = w.Write(b) // writes to a bytes.Buffer do not fail
	_ = w.Close()
	return bytes.Clone(buf.Bytes())
}

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
