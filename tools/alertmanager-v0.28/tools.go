//go:build tools

// Package tools pins the older Alertmanager server the end-to-end tests start
// with the arguments Lookout generates for an Alertmanager of that version:
// version gating is proved against a binary that refuses the flags it does
// not know.
package tools

import (
	_ "github.com/prometheus/alertmanager/cmd/alertmanager"
)
