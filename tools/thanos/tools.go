//go:build tools

// Package tools pins the Thanos binary the ThanosRuler end-to-end test runs.
// Thanos replaces some dependencies with forks; a replace only takes effect in
// the main module, so this module repeats Thanos's own replace block.
package tools

import _ "github.com/thanos-io/thanos/cmd/thanos"
