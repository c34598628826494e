package reloader

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Piece is a configuration document besides the main one: a file that the main
// configuration loads through scrape_config_files, split off so that no Secret has to
// hold more than 1 MiB. It goes through what the main configuration goes through
// (decoding, $(VAR) substitution, atomic write, file and API sources with the same
// precedence), with one difference: a piece is optional. The pod mounts a fixed number
// of piece Secrets as optional volumes, so a missing input is a state, not a delay: when
// the file is missing and the Secret does not exist, the output is removed and
// Prometheus stops loading it. The main configuration's output, by contrast, is never
// removed.
type Piece struct {
	// Input is the mounted file; gunzipped when its name ends in .gz. Its base name is
	// also the key in Secret, as the Secret volume names the file after the key.
	Input string
	// Output receives Input after environment substitution.
	Output string
	// Secret is "<namespace>/<name>" of the Secret that Input is mounted from; empty
	// means the file is the only source.
	Secret string
}

// pieceSyntax is how --config-piece spells a Piece.
const pieceSyntax = "<input file>=<output file>[=<namespace>/<secret>]"

// ParsePiece parses the value of --config-piece.
func ParsePiece(v string) (Piece, error) {
	parts := strings.Split(v, "=")
	if len(parts) < 2 || len(parts) > 3 {
		return Piece{}, fmt.Errorf("--config-piece %q: want %s (file names must not contain '=')", v, pieceSyntax)
	}
	p := Piece{Input: parts[0], Output: parts[1]}
	if len(parts) == 3 {
		p.Secret = parts[2]
	}
	if err := p.validate(); err != nil {
		return Piece{}, err
	}
	return p, nil
}

// String formats p the way ParsePiece reads it.
func (p Piece) String() string {
	s := p.Input + "=" + p.Output
	if p.Secret != "" {
		s += "=" + p.Secret
	}
	return s
}

func (p Piece) validate() error {
	var errs []error
	flag := "--config-piece " + p.String()
	if p.Input == "" || p.Output == "" {
		errs = append(errs, fmt.Errorf("%s: want %s", flag, pieceSyntax))
	} else if filepath.Clean(p.Input) == filepath.Clean(p.Output) {
		errs = append(errs, fmt.Errorf("%s: the input and output files must differ", flag))
	}
	if p.Secret != "" {
		if _, _, err := splitSecretRef(flag+": secret", p.Secret); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pieceFlag is the repeatable --config-piece flag; each value appends one Piece.
type pieceFlag struct{ pieces *[]Piece }

func (f *pieceFlag) Set(v string) error {
	p, err := ParsePiece(v)
	if err != nil {
		return err
	}
	*f.pieces = append(*f.pieces, p)
	return nil
}

func (f *pieceFlag) String() string {
	if f.pieces == nil {
		return ""
	}
	s := make([]string, len(*f.pieces))
	for i, p := range *f.pieces {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (f *pieceFlag) Type() string { return "piece" }

// docSpec is one configuration document: the main configuration or a piece.
type docSpec struct {
	// name identifies the document in logs and in the "document" metric label: the base
	// name of its output file (prometheus.env.yaml, scrape-3.yaml), which says what
	// Prometheus loads; the whole path when two outputs share a base name.
	name string
	// flag names the document in validation errors.
	flag           string
	input, output  string
	secret, key    string
	removeIfAbsent bool
}

// documents lists the main configuration (when set) first, then the pieces in flag order.
func (o *Options) documents() []docSpec {
	var docs []docSpec
	if o.ConfigFile != "" || o.OutputFile != "" {
		docs = append(docs, docSpec{
			flag:   "--config-file",
			input:  o.ConfigFile,
			output: o.OutputFile,
			secret: o.ConfigSecret,
			key:    o.secretKey(),
		})
	}
	for _, p := range o.Pieces {
		docs = append(docs, docSpec{
			flag:           "--config-piece " + p.String(),
			input:          p.Input,
			output:         p.Output,
			secret:         p.Secret,
			key:            filepath.Base(p.Input),
			removeIfAbsent: true,
		})
	}
	bases := map[string]int{}
	for _, d := range docs {
		bases[filepath.Base(d.output)]++
	}
	for i := range docs {
		docs[i].name = filepath.Base(docs[i].output)
		if bases[docs[i].name] > 1 {
			docs[i].name = filepath.Clean(docs[i].output)
		}
	}
	return docs
}
