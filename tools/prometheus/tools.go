//go:build tools

// Package tools pins the Prometheus server used by the end-to-end tests and
// the promtool that runs the rule unit tests of the operator's alerts.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
