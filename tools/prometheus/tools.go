//go:build tools

// Package tools pins the Prometheus server used by the end-to-end tests.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
