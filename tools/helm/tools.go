//go:build tools

// Package tools pins helm, which lints and renders charts/lookout in the
// install tests.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
