package controller

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/render"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

func TestConfigSizeCountsTheMainSecretAndItsPiecesOnly(t *testing.T) {
	p := &monitoringv1.Prometheus{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "k8s"}}
	secret := func(name string, size int) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Data: map[string][]byte{"prometheus.yaml.gz": make([]byte, size)}}
	}
	d := &render.Desired{Objects: []workload.Object{
		secret(promrender.ConfigSecretName("k8s"), 100),
		secret(promrender.ConfigPieceSecretName("k8s", 0), 30),
		secret(promrender.ConfigPieceSecretName("k8s", 1), 20),
		secret(promrender.WebConfigSecretName("k8s"), 1000),
	}}
	recordConfigSize(p, d.Objects)
	if got := testutil.ToFloat64(configBytes.WithLabelValues("ns", "k8s")); got != 150 {
		t.Errorf("config bytes = %v, want 150 (main and pieces, not the web config)", got)
	}
	if got := testutil.ToFloat64(configPieces.WithLabelValues("ns", "k8s")); got != 2 {
		t.Errorf("config pieces = %v, want 2", got)
	}
}

func TestAReconcileThatEndsNotReconciledIsCountedByKindAndReason(t *testing.T) {
	before := testutil.ToFloat64(reconcileErrors.WithLabelValues("Prometheus", "InvalidRemoteWrite"))
	countReconcileError("Prometheus", &statusUpdate{reconcileErr: &render.SpecError{Reason: "InvalidRemoteWrite"}})
	countReconcileError("Prometheus", &statusUpdate{reconciled: true})
	if got := testutil.ToFloat64(reconcileErrors.WithLabelValues("Prometheus", "InvalidRemoteWrite")); got != before+1 {
		t.Errorf("reconcile errors = %v, want %v", got, before+1)
	}
}
