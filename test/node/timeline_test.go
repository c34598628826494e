package node

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lookout-operator/lookout/internal/node"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// logLine is one line an instance manager wrote, as the kubelet stored it (CRI log
// format: the time the runtime read it, the stream, a tag, the line).
type logLine struct {
	at   time.Time
	pod  string
	text string
}

// managerLines reads what every instance manager of namespace ns logged between from
// and to, across container restarts (0.log, 1.log …), in time order.
func managerLines(env *node.PostgresEnv, ns string, from, to time.Time) []logLine {
	dirs, _ := filepath.Glob(filepath.Join(env.Node.PodLogsDir(), ns+"_*"))
	var lines []logLine
	for _, d := range dirs {
		// <namespace>_<pod>_<uid>
		pod := strings.TrimPrefix(filepath.Base(d), ns+"_")
		if i := strings.LastIndexByte(pod, '_'); i > 0 {
			pod = pod[:i]
		}
		files, _ := filepath.Glob(filepath.Join(d, pgrender.ContainerName, "*.log"))
		for _, f := range files {
			lines = append(lines, readCRILog(f, pod, from, to)...)
		}
	}
	slices.SortStableFunc(lines, func(a, b logLine) int { return a.at.Compare(b.at) })
	return lines
}

func readCRILog(path, pod string, from, to time.Time) []logLine {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 4)
		if len(parts) < 4 {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, parts[0])
		if err != nil || at.Before(from) || at.After(to) {
			continue
		}
		out = append(out, logLine{at: at, pod: pod, text: parts[3]})
	}
	return out
}

// timeline is where a failover's time went, as the instance managers logged it:
// every line from shortly before the kill to shortly after the first write on the
// new timeline, each with its offset from the kill. The managers log in slog's text
// format; the time in front is the runtime's, the same clock as the kill's.
func timeline(lines []logLine, killed time.Time, limit int) string {
	var b strings.Builder
	for i, l := range lines {
		if i == limit {
			fmt.Fprintf(&b, "… %d more lines\n", len(lines)-limit)
			break
		}
		fmt.Fprintf(&b, "%+8.3fs %s %s\n", l.at.Sub(killed).Seconds(), l.pod, dropSlogTime(l.text))
	}
	return b.String()
}

// dropSlogTime removes slog's own time= field, which repeats the runtime's.
func dropSlogTime(s string) string {
	if strings.HasPrefix(s, "time=") {
		if i := strings.IndexByte(s, ' '); i > 0 {
			return s[i+1:]
		}
	}
	return s
}
