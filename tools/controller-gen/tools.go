//go:build tools

// Package tools pins controller-gen, which generates config/crd from the
// upstream monitoring.coreos.com API types.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
