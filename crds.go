// Package lookout holds what the operator binary embeds from the generated
// files of the repository: the CRDs under config/crd and config/postgres/crd,
// which `lookout operator --install-crds` applies at start (the Helm chart's
// way of installing and upgrading them).
package lookout

import "embed"

// CRDFiles holds config/crd/*.yaml, one CRD per file.
//
//go:embed config/crd/*.yaml
var CRDFiles embed.FS

// CRDDir is the directory of CRDFiles that holds the files.
const CRDDir = "config/crd"

// PostgresCRDFiles holds config/postgres/crd/*.yaml: the PostgresCluster CRD.
//
//go:embed config/postgres/crd/*.yaml
var PostgresCRDFiles embed.FS

// PostgresCRDDir is the directory of PostgresCRDFiles that holds the file.
const PostgresCRDDir = "config/postgres/crd"
