//go:build tools

// Package tools pins the Kubernetes control-plane binaries that the local
// control plane (internal/controlplane) builds and caches.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
