package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// findPID returns the pid of the running process whose executable is bin
// (devenv.Operator does not expose its command).
func findPID(bin string) (int, error) {
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return 0, err
	}
	return findOne("running "+want, func(dir string) bool {
		exe, err := os.Readlink(filepath.Join(dir, "exe"))
		return err == nil && exe == want
	})
}

// findPIDByArg returns the pid of the running process that has arg among
// its command-line arguments (exactly), e.g. this control plane's etcd by its
// --data-dir: other control planes on the machine have other directories.
func findPIDByArg(arg string) (int, error) {
	return findOne("with argument "+arg, func(dir string) bool {
		b, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		return err == nil && slices.Contains(strings.Split(string(b), "\x00"), arg)
	})
}

// findOne returns the pid of the one process whose /proc directory matches.
func findOne(what string, match func(dir string) bool) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && match(filepath.Join("/proc", e.Name())) {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("want one process %s, found %v", what, found)
	}
	return found[0], nil
}

// hostCPU is the machine's CPU time from /proc/stat, in seconds summed over
// every core.
type hostCPU struct{ busy, total float64 }

func readHostCPU() (hostCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return hostCPU{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return hostCPU{}, fmt.Errorf("unexpected /proc/stat: %q", line)
	}
	// user nice system idle iowait irq softirq steal (guest is in user).
	var h hostCPU
	for i, v := range f[1:min(len(f), 9)] {
		n, _ := strconv.ParseFloat(v, 64)
		h.total += n / clkTck
		if i != 3 && i != 4 { // idle, iowait
			h.busy += n / clkTck
		}
	}
	return h, nil
}

// busyPercent is the share of the machine's CPU (all cores) in use between
// two readings.
func busyPercent(a, b hostCPU) float64 {
	if b.total <= a.total {
		return 0
	}
	// busy ≤ total in ticks; summing seconds can overshoot by a rounding error when
	// every core was busy.
	return min(100, 100*(b.busy-a.busy)/(b.total-a.total))
}

// procSample is what /proc says about the operator at one moment.
type procSample struct {
	at          time.Time
	rssKiB      int64 // VmRSS
	hwmKiB      int64 // VmHWM: peak RSS since the process started
	cpuSeconds  float64
	threadCount int64
}

var clkTck = func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			return v
		}
	}
	return 100
}()

func readProc(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch key {
		case "VmRSS":
			s.rssKiB = n
		case "VmHWM":
			s.hwmKiB = n
		case "Threads":
			s.threadCount = n
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name may hold spaces; the fields after it start at state
	// (field 3), so utime and stime (fields 14 and 15) are at 11 and 12.
	_, rest, ok := strings.Cut(string(stat), ") ")
	if !ok {
		return s, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, stat)
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return s, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, stat)
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	s.cpuSeconds = (utime + stime) / clkTck
	return s, nil
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// sample is one series of a Prometheus text exposition.
type sample struct {
	labels map[string]string
	value  float64
}

type metrics map[string][]sample

// parseMetrics reads the text exposition format: enough of it for counters
// and gauges (no exemplars, no timestamps needed).
func parseMetrics(r io.Reader) (metrics, error) {
	m := metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, rest := line, map[string]string{}, ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			name = line[:i]
			var err error
			labels, rest, err = parseLabels(line[i+1:])
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
		} else {
			name, rest, _ = strings.Cut(line, " ")
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		m[name] = append(m[name], sample{labels: labels, value: v})
	}
	return m, sc.Err()
}

// parseLabels parses `a="x",b="y"} rest` and returns the labels and rest.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, ", ")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], nil
		}
		name, after, ok := strings.Cut(s, "=\"")
		if !ok {
			return nil, "", fmt.Errorf("bad label set")
		}
		var val strings.Builder
		i := 0
		for ; i < len(after); i++ {
			c := after[i]
			if c == '\\' && i+1 < len(after) {
				i++
				switch after[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(after[i])
				}
				continue
			}
			if c == '"' {
				break
			}
			val.WriteByte(c)
		}
		if i >= len(after) {
			return nil, "", fmt.Errorf("unterminated label value")
		}
		labels[name] = val.String()
		s = after[i+1:]
	}
}

// sum adds the series of name whose labels include all of match.
func (m metrics) sum(name string, match map[string]string) float64 {
	var total float64
	for _, s := range m[name] {
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// by adds the series of name grouped by label key.
func (m metrics) by(name, key string, filter func(map[string]string) bool) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m[name] {
		if filter == nil || filter(s.labels) {
			out[s.labels[key]] += s.value
		}
	}
	return out
}

// httpClient reads the operator's endpoints. It asks for them uncompressed: while
// waiting for the controller to be idle it reads /metrics every 10 ms, and gzip over
// loopback would only add the operator's compressing to what the harness measures
// (compressing was about 7% of the operator's CPU during the timed changes).
var httpClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableCompression: true}}

func scrapeURL(ctx context.Context, url string) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// scrapeAPIServer reads kube-apiserver's own /metrics as the admin.
func scrapeAPIServer(ctx context.Context, cs kubernetes.Interface) (metrics, error) {
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("apiserver /metrics: %w", err)
	}
	return parseMetrics(strings.NewReader(string(b)))
}

// isWrite reports whether an HTTP method (client side) or an apiserver verb
// changes state.
func isWrite(verb string) bool {
	switch strings.ToUpper(verb) {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY", "CREATE", "UPDATE":
		return true
	}
	return false
}

// delta is after-before per key, without zero entries.
func delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func writes(byVerb map[string]float64) float64 {
	var n float64
	for verb, v := range byVerb {
		if isWrite(verb) {
			n += v
		}
	}
	return n
}
