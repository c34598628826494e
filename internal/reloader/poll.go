package reloader

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Without inotify the files are polled. A poll is a stat per file: contents are read and
// hashed only when size, modification time or inode changed, which is what the kubelet's
// atomic volume update (a new directory behind the ..data symlink) does to every file it
// touches. Every fullPassEvery polls the contents are read regardless, for filesystems
// whose metadata does not move.
const fullPassEvery = 60

func sameStat(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// configPoller watches one document's input file and yields each new state once.
type configPoller struct {
	path string
	log  *slog.Logger
	// optional makes a missing file a state of its own (a piece whose Secret does not
	// exist); otherwise a missing file is waited for and the last state stands.
	optional bool

	stat    os.FileInfo
	last    state
	hasLast bool
	polls   int
	// waiting and badRaw keep a missing or undecodable file from being logged every poll.
	waiting bool
	badRaw  digest
}

// poll returns the file's state when it differs from the one returned last.
func (p *configPoller) poll() (input, bool) {
	p.polls++
	fi, err := os.Stat(p.path)
	if err != nil {
		p.stat = nil
		if !errors.Is(err, fs.ErrNotExist) {
			p.log.Warn("Cannot stat the configuration file", "path", p.path, "err", err)
			return input{}, false
		}
		if p.optional {
			return p.yield(absentInput(SourceFile))
		}
		if !p.waiting {
			p.log.Info("Waiting for the configuration file", "path", p.path)
			p.waiting = true
		}
		return input{}, false
	}
	p.waiting = false
	if p.hasLast && !p.last.absent && sameStat(p.stat, fi) && p.polls%fullPassEvery != 0 {
		return input{}, false
	}
	raw, err := os.ReadFile(p.path)
	if err != nil {
		if p.optional && errors.Is(err, fs.ErrNotExist) {
			// Removed between the stat and the read.
			return p.yield(absentInput(SourceFile))
		}
		p.log.Warn("Cannot read the configuration file", "path", p.path, "err", err)
		return input{}, false
	}
	// The stat taken before the read is kept even if the file was swapped in between: the
	// next poll then sees a different stat, reads again and finds the same hash.
	p.stat = fi
	config, err := decodeConfig(p.path, raw)
	if err != nil {
		if rawHash := digestOf(raw); rawHash != p.badRaw {
			p.badRaw = rawHash
			p.log.Error("Cannot decode the configuration file", "path", p.path, "err", err)
		}
		return input{}, false
	}
	return p.yield(newInput(SourceFile, config))
}

func (p *configPoller) yield(in input) (input, bool) {
	if p.hasLast && in.state() == p.last {
		return input{}, false
	}
	p.last, p.hasLast = in.state(), true
	return in, true
}

// dirPoller summarizes the regular files directly inside a set of directories as one
// digest over their names and contents. Hidden entries starting with ".." are the
// kubelet's bookkeeping and are skipped; a missing directory counts as empty, since rule
// ConfigMaps are mounted as optional.
type dirPoller struct {
	dirs []string
	log  *slog.Logger

	files map[string]dirEntry
	polls int
}

type dirEntry struct {
	stat os.FileInfo
	hash digest
}

func (p *dirPoller) scan() digest {
	p.polls++
	full := p.polls%fullPassEvery == 0
	seen := make(map[string]dirEntry, len(p.files))
	for _, dir := range p.dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				p.log.Warn("Cannot read a watched directory", "dir", dir, "err", err)
			}
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "..") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			// Stat follows the kubelet's symlinks to the file they point at.
			fi, err := os.Stat(path)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			if old, ok := p.files[path]; ok && !full && sameStat(old.stat, fi) {
				seen[path] = old
				continue
			}
			b, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			seen[path] = dirEntry{stat: fi, hash: digestOf(b)}
		}
	}
	p.files = seen

	paths := make([]string, 0, len(seen))
	for path := range seen {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, path := range paths {
		sum := seen[path].hash
		h.Write([]byte(path))
		h.Write([]byte{0})
		h.Write(sum[:])
	}
	var d digest
	h.Sum(d[:0])
	return d
}
