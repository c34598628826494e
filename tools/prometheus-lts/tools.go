//go:build tools

// Package tools pins the Prometheus v2.53 LTS server whose config loader the version-gating
// test runs on what Lookout generates for a Prometheus of that version.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
