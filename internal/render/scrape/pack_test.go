package scrape

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

func TestCRC32CombineIsTheChecksumOfTheJoinedBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 7, 8, 255, 256, 4096, 100_000} {
		for _, m := range []int{0, 1, 5, 64, 1000, 70_000} {
			a, b := randomBytes(r, n), randomBytes(r, m)
			want := crc32.ChecksumIEEE(append(append([]byte{}, a...), b...))
			if got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), len(b)); got != want {
				t.Fatalf("len %d + %d: combined %08x, want %08x", n, m, got, want)
			}
		}
	}
}

// TestAChainIsOneGzipMemberOfItsGroups reads what a Chain joins with the standard reader,
// which checks the CRC and the size, in single-member mode: one gzip member holding the
// prefix and every group's YAML in order.
func TestAChainIsOneGzipMemberOfItsGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := map[string][][]byte{
		"no groups":         nil,
		"one empty-ish job": {[]byte("- job_name: a\n")},
		// Bigger than flate's window and block sizes, and text that refers back a lot.
		"large and repetitive": {bytes.Repeat([]byte("- job_name: serviceMonitor/ns/name/0\n  honor_labels: false\n"), 5000)},
		"random":               {randomBytes(r, 1), randomBytes(r, 70_000), randomBytes(r, 33), randomBytes(r, 300_000)},
	}
	var many [][]byte
	for i := range 500 {
		many = append(many, fmt.Appendf(nil, "- job_name: serviceMonitor/ns-%d/app/0\n  scrape_interval: 30s\n", i))
	}
	cases["many"] = many
	for name, yamls := range cases {
		t.Run(name, func(t *testing.T) {
			prefix := []byte("scrape_configs:\n")
			want := append([]byte{}, prefix...)
			var groups []Group
			for i, y := range yamls {
				want = append(want, y...)
				if i%3 == 2 { // the additional scrape configs come as YAML
					groups = append(groups, Group{Key: "k", YAML: y, Size: len(y)})
					continue
				}
				groups = append(groups, Group{Key: "k", Packed: pack(y), Size: len(y), CRC: crc32.ChecksumIEEE(y)})
			}
			if got := gunzipOne(t, (&Chain{}).Gzip(prefix, groups)); !bytes.Equal(got, want) {
				t.Fatalf("the chain holds %d bytes, want the %d of the prefix and the groups in order", len(got), len(want))
			}
			for _, g := range groups {
				if g.Packed == nil {
					continue
				}
				if back := g.Bytes(); len(back) != g.Size || crc32.ChecksumIEEE(back) != g.CRC {
					t.Fatalf("a packed group does not unpack to its own bytes")
				}
			}
		})
	}
}

// TestAChainIsTheSameBytesHoweverItGotItsGroups changes a chain's groups at random (new,
// changed and removed groups, at the start, in the middle and at the end) and checks after
// each change that it is byte for byte what a new chain makes of the same groups, and that
// it holds their YAML.
func TestAChainIsTheSameBytesHoweverItGotItsGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	job := func(key string, v int) Group {
		y := fmt.Appendf(nil, "- job_name: %s\n  scrape_interval: %ds\n  relabel_configs:\n  - source_labels: [__meta_kubernetes_service_label_app]\n    regex: %s\n", key, v, key)
		if v%7 == 0 {
			y = append(y, randomBytes(r, 40_000)...) // longer than the window
		}
		return Group{Key: key, Packed: pack(y), Size: len(y), CRC: crc32.ChecksumIEEE(y)}
	}
	var groups []Group
	for i := range 60 {
		groups = append(groups, job(fmt.Sprintf("serviceMonitor/ns/app-%03d", i*2), i))
	}
	var chain Chain
	prefix := []byte("scrape_configs:\n")
	for step := range 200 {
		i := r.IntN(len(groups) + 1)
		switch op := r.IntN(3); {
		case op == 0 || len(groups) < 2: // a new group, keys staying unique
			key := fmt.Sprintf("serviceMonitor/ns/app-%03d-%d", i, step)
			groups = append(groups[:i:i], append([]Group{job(key, step)}, groups[i:]...)...)
		case op == 1 && i < len(groups):
			groups = append(groups[:i:i], append([]Group{job(groups[i].Key, step)}, groups[i+1:]...)...)
		case i < len(groups):
			groups = append(groups[:i:i], groups[i+1:]...)
		}
		if step%50 == 49 {
			groups = append(groups[:0:0], groups...) // the same groups, in a new slice
		}
		got := chain.Gzip(prefix, groups)
		if fresh := (&Chain{}).Gzip(prefix, groups); !bytes.Equal(got, fresh) {
			t.Fatalf("step %d: the chain differs from a new one of the same %d groups", step, len(groups))
		}
		want := append([]byte{}, prefix...)
		for _, g := range groups {
			want = append(want, g.Bytes()...)
		}
		if !bytes.Equal(gunzipOne(t, got), want) {
			t.Fatalf("step %d: the chain does not hold its groups' YAML", step)
		}
	}
}

// TestAChainComparesWithOneCompressionOfTheWhole: groups alike compress about as well
// linked as in one stream.
func TestAChainComparesWithOneCompressionOfTheWhole(t *testing.T) {
	var groups []Group
	whole := []byte("scrape_configs:\n")
	for i := range 400 {
		y := fmt.Appendf(nil, "- job_name: serviceMonitor/team-%03d/app-%05d/0\n  honor_labels: false\n  kubernetes_sd_configs:\n  - role: endpointslice\n    namespaces:\n      names:\n      - team-%03d\n  scrape_interval: 30s\n  relabel_configs:\n  - source_labels: [job]\n    target_label: __tmp_prometheus_job_name\n  - action: keep\n    source_labels: [__meta_kubernetes_service_label_app, __meta_kubernetes_service_labelpresent_app]\n    regex: (app-%05d);true\n", i%50, i, i%50, i)
		whole = append(whole, y...)
		groups = append(groups, Group{Key: fmt.Sprint(i), Packed: pack(y), Size: len(y), CRC: crc32.ChecksumIEEE(y)})
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, _ = zw.Write(whole)
	_ = zw.Close()
	chained := (&Chain{}).Gzip([]byte("scrape_configs:\n"), groups)
	t.Logf("%d bytes of YAML: %d gzipped whole at the fastest level, %d chained", len(whole), buf.Len(), len(chained))
	if len(chained) > 2*buf.Len() {
		t.Fatalf("chained %d bytes, more than twice the %d of one compression", len(chained), buf.Len())
	}
}

func gunzipOne(t *testing.T, gz []byte) []byte {
	t.Helper()
	br := bytes.NewReader(gz)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("read the gzip member: %v", err)
	}
	if br.Len() != 0 {
		t.Fatalf("%d bytes follow the gzip member", br.Len())
	}
	return got
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
