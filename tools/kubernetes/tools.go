//go:build tools

// Package tools pins the Kubernetes control-plane binaries that the local
// control plane (internal/controlplane) builds and caches, and the kubelet of the
// real-node tests (internal/node).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
