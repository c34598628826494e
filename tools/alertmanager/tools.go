//go:build tools

// Package tools pins the Alertmanager server and amtool used by the
// end-to-end tests and the demo. Keep v0.31.1: later module releases do not
// carry the web UI's assets.
package tools

import (
	_ "github.com/prometheus/alertmanager/cmd/alertmanager"
	_ "github.com/prometheus/alertmanager/cmd/amtool"
)
