package controller

import (
	"context"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/render"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
)

// ReasonConfigurationUnmanaged: Reconciled=True, everything was applied but the
// configuration Secret, which is the user's (see promrender.UnmanagedConfig); the
// existing operator's reason and meaning.
const ReasonConfigurationUnmanaged = "ConfigurationUnmanaged"

// unmanagedConfigMessage says why the configuration is left alone and how to hand it over.
const unmanagedConfigMessage = "Lookout does not write the configuration Secret %s because none of serviceMonitorSelector, podMonitorSelector, probeSelector and scrapeConfigSelector is set: " +
	"its prometheus.yaml.gz is the user's. Set a selector (or use additionalScrapeConfigs, or ScrapeConfig objects) to have Lookout generate it"

// keepUnmanagedConfig handles the configuration Secret of a Prometheus in unmanaged mode,
// as the existing operator does: when there is none it creates one holding an empty
// configuration, so that the pods start; one that exists — written by the user, or left
// by the existing operator with its owner reference — is never read, written or deleted.
// It returns the Secret for the prune to keep.
func (k *prometheusKind) keepUnmanagedConfig(ctx context.Context, p *monitoringv1.Prometheus) (client.Object, error) {
	name := promrender.FlavourOf(p).ConfigSecretName(p.Name)
	keep := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name}}
	keep.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	err := k.live.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: name}, &corev1.Secret{})
	if err == nil {
		return keep, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("read the configuration Secret %s/%s: %w", p.Namespace, name, err)
	}
	empty, err := render.Gzip(nil)
	if err != nil {
		return nil, err
	}
	s := promrender.UnmanagedConfigSecret(p, promrender.Options{ConfigGzip: empty})
	if err := k.c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create the empty configuration Secret %s/%s: %w", p.Namespace, name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created an empty configuration Secret for the user to fill in (unmanaged configuration)", "prometheus", klog.KObj(p), "secret", name)
	return keep, nil
}
