package reloader

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
)

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestExpandEnv(t *testing.T) {
	env := envMap(map[string]string{"POD_NAME": "prometheus-k8s-0", "SHARD": "2", "EMPTY": ""})
	cases := []struct {
		name, in, want string
	}{
		{"substitutes the pod name and the shard", "replica: $(POD_NAME)\nregex: $(SHARD);|.+;.+", "replica: prometheus-k8s-0\nregex: 2;|.+;.+"},
		{"a missing env var leaves $(X) untouched", "a: $(X) b: $(SHARD)", "a: $(X) b: 2"},
		{"substitutes a variable set to the empty string", "a: [$(EMPTY)]", "a: []"},
		{"leaves a reference that is not a variable name alone", "regex: $(foo|bar) $(1X) $()", "regex: $(foo|bar) $(1X) $()"},
		{"leaves an unterminated reference alone", "a: $(SHARD", "a: $(SHARD"},
		{"does not touch relabel replacements", "replacement: $1 ${1} $$", "replacement: $1 ${1} $$"},
		{"substitutes adjacent references", "$(SHARD)$(SHARD)-$(POD_NAME)", "22-prometheus-k8s-0"},
		{"does not substitute inside a substituted value", "$(SHARD)", "2"},
		{"returns input without references unchanged", "global: {}", "global: {}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(expandEnv([]byte(c.in), env)); got != c.want {
				t.Errorf("expandEnv(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestExpandEnvDoesNotRescanValues(t *testing.T) {
	env := envMap(map[string]string{"A": "$(B)", "B": "boom"})
	if got := string(expandEnv([]byte("x $(A)"), env)); got != "x $(B)" {
		t.Errorf("got %q, want the value of A verbatim", got)
	}
}

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeConfig(t *testing.T) {
	t.Run("gunzips a .gz name", func(t *testing.T) {
		got, err := decodeConfig("prometheus.yaml.gz", gz(t, "global: {}"))
		if err != nil || string(got) != "global: {}" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("reads any other name as plain text", func(t *testing.T) {
		got, err := decodeConfig("prometheus.yaml", []byte("global: {}"))
		if err != nil || string(got) != "global: {}" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("rejects a truncated gzip stream", func(t *testing.T) {
		b := gz(t, "global: {}")
		if _, err := decodeConfig("x.gz", b[:len(b)-5]); err == nil {
			t.Fatal("want an error")
		}
	})
}

func TestWriteIfChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prometheus.env.yaml")
	for i, c := range []struct {
		data        string
		wantWritten bool
	}{{"a", true}, {"a", false}, {"b", true}} {
		written, err := writeIfChanged(path, []byte(c.data))
		if err != nil {
			t.Fatal(err)
		}
		if written != c.wantWritten {
			t.Errorf("write %d (%q): written = %v, want %v", i, c.data, written, c.wantWritten)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != outputMode {
		t.Errorf("mode = %v, want %v", fi.Mode().Perm(), os.FileMode(outputMode))
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the output (no temporary files left)", len(entries))
	}
}

func TestAtomicWriteNeverShowsAPartialFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prometheus.env.yaml")
	a := bytes.Repeat([]byte("a"), 1<<20)
	b := bytes.Repeat([]byte("b"), 1<<20+17)
	if err := writeFileAtomic(path, a, outputMode); err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			got, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("read: %v", err)
				return
			}
			if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
				t.Errorf("observed a partial file of %d bytes", len(got))
				return
			}
			reads.Add(1)
		}
	}()
	for i := 0; i < 50; i++ {
		data := a
		if i%2 == 0 {
			data = b
		}
		if err := writeFileAtomic(path, data, outputMode); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Error("the reader never ran")
	}
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func FuzzExpandEnv(f *testing.F) {
	for _, seed := range []string{"$(POD_NAME)", "a $(SHARD) $(X) $(", "$($(SHARD))", "$$(SHARD)", "${SHARD} $1", ""} {
		f.Add(seed)
	}
	env := envMap(map[string]string{"POD_NAME": "p-0", "SHARD": "$(POD_NAME)", "E": ""})
	f.Fuzz(func(t *testing.T, in string) {
		if got := string(expandEnv([]byte(in), envMap(nil))); got != in {
			t.Fatalf("with no environment: %q became %q", in, got)
		}
		want := envRef.ReplaceAllStringFunc(in, func(ref string) string {
			if v, ok := env(ref[2 : len(ref)-1]); ok {
				return v
			}
			return ref
		})
		if got := string(expandEnv([]byte(in), env)); got != want {
			t.Fatalf("expandEnv(%q) = %q, want %q", in, got, want)
		}
	})
}
