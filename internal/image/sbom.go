package image

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// SBOM is an SPDX 2.3 document (JSON) for a Go binary, made from the module list the Go
// toolchain embeds in it (what `go version -m` prints): the main module, every module
// linked in with its version and go.sum hash, and the standard library of the Go
// version that built it. It lists what is in the binary, nothing guessed.
func SBOM(name string, binary []byte, created time.Time) ([]byte, error) {
	info, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		return nil, fmt.Errorf("read the Go build information of %s: %w", name, err)
	}
	sum := sha256.Sum256(binary)
	digest := hex.EncodeToString(sum[:])

	type ref struct {
		Category string `json:"referenceCategory"`
		Type     string `json:"referenceType"`
		Locator  string `json:"referenceLocator"`
	}
	type checksum struct {
		Algorithm string `json:"algorithm"`
		Value     string `json:"checksumValue"`
	}
	type pkg struct {
		Name             string     `json:"name"`
		SPDXID           string     `json:"SPDXID"`
		Version          string     `json:"versionInfo,omitempty"`
		DownloadLocation string     `json:"downloadLocation"`
		FilesAnalyzed    bool       `json:"filesAnalyzed"`
		Checksums        []checksum `json:"checksums,omitempty"`
		Comment          string     `json:"comment,omitempty"`
		ExternalRefs     []ref      `json:"externalRefs,omitempty"`
	}
	type relationship struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
	purl := func(path, version string) []ref {
		return []ref{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: "pkg:golang/" + path + "@" + version}}
	}

	mainVersion := info.Main.Version
	binID := "SPDXRef-Package-" + spdxID(name)
	pkgs := []pkg{{
		Name: name, SPDXID: binID, Version: mainVersion, DownloadLocation: "NOASSERTION",
		Checksums:    []checksum{{Algorithm: "SHA256", Value: digest}},
		Comment:      "The binary " + info.Path + ", built from module " + info.Main.Path + " by " + info.GoVersion,
		ExternalRefs: purl(info.Main.Path, mainVersion),
	}, {
		Name: "stdlib", SPDXID: "SPDXRef-Package-stdlib", Version: info.GoVersion, DownloadLocation: "NOASSERTION",
		ExternalRefs: purl("stdlib", info.GoVersion),
	}}
	rels := []relationship{
		{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: binID},
		{Element: binID, Type: "DEPENDS_ON", Related: "SPDXRef-Package-stdlib"},
	}
	for _, m := range info.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		id := "SPDXRef-Package-" + spdxID(m.Path+"-"+m.Version)
		p := pkg{Name: m.Path, SPDXID: id, Version: m.Version, DownloadLocation: "NOASSERTION", ExternalRefs: purl(m.Path, m.Version)}
		if m.Sum != "" {
			p.Comment = "go.sum " + m.Sum
		}
		pkgs = append(pkgs, p)
		rels = append(rels, relationship{Element: binID, Type: "DEPENDS_ON", Related: id})
	}
	doc := map[string]any{
		"spdxVersion":       "SPDX-2.3",
		"dataLicense":       "CC0-1.0",
		"SPDXID":            "SPDXRef-DOCUMENT",
		"name":              name,
		"documentNamespace": "https://" + info.Main.Path + "/spdx/" + name + "-" + digest,
		"creationInfo": map[string]any{
			"created":  created.UTC().Format(time.RFC3339),
			"creators": []string{"Tool: lookout-images"},
		},
		"packages":      pkgs,
		"relationships": rels,
	}
	return json.MarshalIndent(doc, "", "  ")
}

// spdxID keeps the characters SPDX identifiers allow (letters, digits, '.', '-').
func spdxID(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '-'
	}, s)
}
