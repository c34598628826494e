package reloader

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxConfigBytes caps the decompressed configuration so a corrupt or hostile input cannot
// exhaust the sidecar's memory; generated configs are far below it.
const maxConfigBytes = 256 << 20

// digest identifies a decompressed configuration, whichever source delivered it.
type digest [sha256.Size]byte

func digestOf(b []byte) digest { return sha256.Sum256(b) }

func (d digest) String() string { return hex.EncodeToString(d[:6]) }

// Source names where a configuration came from; it is the "source" metric label.
type Source string

// The two sources of the configuration.
const (
	SourceFile Source = "file"
	SourceAPI  Source = "api"
)

// input is one state of a document delivered by a source: its decoded configuration,
// or, for a piece, its absence (the file missing, the Secret or its key not found).
type input struct {
	source Source
	absent bool
	config []byte
	hash   digest
}

func newInput(source Source, config []byte) input {
	return input{source: source, config: config, hash: digestOf(config)}
}

func absentInput(source Source) input { return input{source: source, absent: true} }

func (in input) state() state { return state{absent: in.absent, hash: in.hash} }

// state is what the arbiter compares: the content's digest, or absence. An absent piece
// and a piece whose content is empty are different states.
type state struct {
	absent bool
	hash   digest
}

func (s state) String() string {
	if s.absent {
		return "absent"
	}
	return s.hash.String()
}

// decodeConfig gunzips raw when name ends in .gz and returns it unchanged otherwise.
func decodeConfig(name string, raw []byte) ([]byte, error) {
	if !strings.HasSuffix(name, ".gz") {
		return raw, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("gunzip %s: %w", name, err)
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("gunzip %s: %w", name, err)
	}
	if len(out) > maxConfigBytes {
		return nil, fmt.Errorf("gunzip %s: larger than %d bytes", name, maxConfigBytes)
	}
	return out, nil
}

// expandEnv replaces every $(NAME) whose NAME is set in the environment with its value.
// References to unset variables, and anything that is not a valid name, are left as they
// are: the configuration may legitimately contain "$(" (in a regex, say), and a missing
// variable must not stop Prometheus from getting a configuration. There is no escape
// syntax; nothing the generator emits needs one.
func expandEnv(in []byte, lookup func(string) (string, bool)) []byte {
	var out []byte // allocated on the first substitution
	last := 0
	for i := 0; i+1 < len(in); i++ {
		if in[i] != '$' || in[i+1] != '(' {
			continue
		}
		// Scan the name in place so the whole pass stays linear in the input.
		j := i + 2
		for j < len(in) && isEnvNameByte(in[j], j == i+2) {
			j++
		}
		if j == i+2 || j == len(in) || in[j] != ')' {
			continue
		}
		value, ok := lookup(string(in[i+2 : j]))
		if !ok {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(in))
		}
		out = append(out, in[last:i]...)
		out = append(out, value...)
		last = j + 1
		i = j
	}
	if out == nil {
		return in
	}
	return append(out, in[last:]...)
}

// isEnvNameByte accepts C identifiers: letters, digits and underscores, no leading digit.
func isEnvNameByte(c byte, first bool) bool {
	switch {
	case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		return true
	case '0' <= c && c <= '9':
		return !first
	}
	return false
}

// outputMode matches the Secret volume the input comes from (defaultMode 0644), so the
// output is no more exposed than the input already is.
const outputMode = 0o644

// writeIfChanged writes data to path unless path already holds exactly data. It reports
// whether it wrote.
func writeIfChanged(path string, data []byte) (bool, error) {
	current, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(current, data):
		return false, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := writeFileAtomic(path, data, outputMode); err != nil {
		return false, err
	}
	return true, nil
}

// writeFileAtomic replaces path with data so that a reader sees either the old or the new
// content, never a prefix: the bytes go to a temporary file in the same directory (same
// filesystem, so rename is atomic), which is synced and then renamed over path. The
// directory is synced too, so the rename itself survives a crash.
func writeFileAtomic(path string, data []byte, mode os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// removeIfExists removes path and reports whether there was anything to remove.
func removeIfExists(path string) (bool, error) {
	err := os.Remove(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("remove %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	syncDir(dir)
	return true, nil
}

// syncDir makes a rename or removal in dir survive a crash.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		// Some filesystems refuse to sync a directory; the change is in place either way.
		_ = d.Sync()
		d.Close()
	}
}
