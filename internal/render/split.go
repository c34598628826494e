package render

import (
	"bytes"
	"fmt"

	"github.com/lookout-operator/lookout/internal/render/prometheus"
)

// MaxSecretDataBytes is how much gzipped configuration one Secret may carry:
// the API refuses objects over 1 MiB, and metadata needs room too.
const MaxSecretDataBytes = 768 * 1024

const jobItemPrefix = "- job_name: "

// split turns a config whose gzip does not fit in one Secret into a main
// config that loads the scrape jobs from files (scrape_config_files) and
// gzipped pieces that each fit. The jobs are cut at their top-level list
// items, which the scrape generator writes as "- job_name: " at column 0.
// Pieces are filled in job order, so the same config always splits the same
// way. It returns nil pieces when the config fits as it is.
func split(config []byte, gz []byte) (main []byte, pieces [][]byte, err error) {
	if len(gz) <= MaxSecretDataBytes {
		return config, nil, nil
	}
	head, jobs, tail, err := cutJobs(config)
	if err != nil {
		return nil, nil, err
	}
	// Pack jobs into chunks of a size that compresses to about half of the
	// budget, then halve any chunk that still does not fit.
	ratio := float64(len(config)) / float64(len(gz))
	target := int(ratio * MaxSecretDataBytes / 2)
	var chunks [][][]byte
	var cur [][]byte
	size := 0
	for _, j := range jobs {
		if size+len(j) > target && len(cur) > 0 {
			chunks = append(chunks, cur)
			cur, size = nil, 0
		}
		cur = append(cur, j)
		size += len(j)
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	for _, c := range chunks {
		ps, err := compressChunk(c)
		if err != nil {
			return nil, nil, err
		}
		pieces = append(pieces, ps...)
	}
	if len(pieces) > prometheus.ConfigPieceSlots {
		return nil, nil, fmt.Errorf("the configuration needs %d Secrets of %d KiB gzipped, more than the %d the pod mounts",
			len(pieces), MaxSecretDataBytes/1024, prometheus.ConfigPieceSlots)
	}
	main = append(append(append([]byte{}, head...), "scrape_config_files:\n- "+prometheus.ConfigPiecesGlob+"\n"...), tail...)
	return main, pieces, nil
}

// compressChunk gzips one chunk of jobs as a scrape_configs document,
// halving it until every part fits.
func compressChunk(jobs [][]byte) ([][]byte, error) {
	doc := append([]byte("scrape_configs:\n"), bytes.Join(jobs, nil)...)
	gz, err := Gzip(doc)
	if err != nil {
		return nil, err
	}
	if len(gz) <= MaxSecretDataBytes {
		return [][]byte{gz}, nil
	}
	if len(jobs) == 1 {
		return nil, fmt.Errorf("one scrape job is %d bytes gzipped, more than a Secret can hold", len(gz))
	}
	a, err := compressChunk(jobs[:len(jobs)/2])
	if err != nil {
		return nil, err
	}
	b, err := compressChunk(jobs[len(jobs)/2:])
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}

// cutJobs splits a rendered config into what comes before scrape_configs,
// the job items, and what follows them.
func cutJobs(config []byte) (head []byte, jobs [][]byte, tail []byte, err error) {
	start := bytes.Index(config, []byte("\nscrape_configs:\n"))
	if start < 0 {
		return nil, nil, nil, fmt.Errorf("split config: no scrape_configs section")
	}
	head = config[:start+1]
	rest := config[start+len("\nscrape_configs:\n"):]
	for len(rest) > 0 {
		if !bytes.HasPrefix(rest, []byte(jobItemPrefix)) {
			if rest[0] == ' ' || rest[0] == '-' {
				return nil, nil, nil, fmt.Errorf("split config: unexpected line %q", firstLine(rest))
			}
			return head, jobs, rest, nil // the next top-level key
		}
		end := len(rest)
		for i := 0; i < len(rest); {
			nl := bytes.IndexByte(rest[i:], '\n')
			if nl < 0 {
				break
			}
			i += nl + 1
			if i < len(rest) && rest[i] != ' ' {
				end = i
				break
			}
		}
		jobs = append(jobs, rest[:end])
		rest = rest[end:]
	}
	return head, jobs, nil, nil
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}
