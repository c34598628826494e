package scrape

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
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
	b, err := unpack(g.Packed, g.Size)
	if err != nil {
		// Only bytes pack produced are unpacked: this is a bug, not input.
		panic(fmt.Sprintf("unpack the jobs of %s: %v", g.Key, err))
	}
	return b
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

func unpack(p []byte, size int) ([]byte, error) {
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
	out := make([]byte, 0, size)
	buf := bytes.NewBuffer(out)
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	if buf.Len() != size {
		return nil, fmt.Errorf("unpacked %d bytes, want %d", buf.Len(), size)
	}
	return buf.Bytes(), nil
}
