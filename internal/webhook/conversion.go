package webhook

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	monitoringv1beta1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// ConversionPath is where the webhook server converts AlertmanagerConfigs between
// v1alpha1 (the stored version, the one the controllers read) and v1beta1.
const ConversionPath = "/convert"

// alertmanagerConfigCRD is the CRD whose spec.conversion names the webhook.
const alertmanagerConfigCRD = "alertmanagerconfigs." + monitoringGroup

// conversionHandler converts AlertmanagerConfig objects in ConversionReviews. The
// versions differ in shape (v1beta1 names muteTimeIntervals timeIntervals, spells matchers
// with matchType only, references Secrets without the optional flag...); without it the
// apiserver would only rewrite apiVersion and prune the rest, losing fields.
func conversionHandler(scheme *runtime.Scheme) (http.Handler, error) {
	newConverter := conversion.NewHubSpokeConverter(&monitoringv1alpha1.AlertmanagerConfig{},
		conversion.NewSpokeConverter(&monitoringv1beta1.AlertmanagerConfig{},
			func(_ context.Context, hub *monitoringv1alpha1.AlertmanagerConfig, spoke *monitoringv1beta1.AlertmanagerConfig) error {
				return spoke.ConvertFrom(hub)
			},
			func(_ context.Context, spoke *monitoringv1beta1.AlertmanagerConfig, hub *monitoringv1alpha1.AlertmanagerConfig) error {
				return spoke.ConvertTo(hub)
			}))
	converter, err := newConverter(scheme)
	if err != nil {
		return nil, fmt.Errorf("AlertmanagerConfig converter: %w", err)
	}
	registry := conversion.NewRegistry()
	gk := schema.GroupKind{Group: monitoringGroup, Kind: monitoringv1alpha1.AlertmanagerConfigKind}
	if err := registry.RegisterConverter(gk, converter); err != nil {
		return nil, err
	}
	return conversion.NewWebhookHandler(scheme, registry), nil
}

// desiredConversion is the part of the AlertmanagerConfig CRD Lookout owns: spec.conversion
// naming the webhook. caBundle nil leaves the bundle to someone else (cert-manager's
// cainjector, asked by annotation).
func desiredConversion(o Options, caBundle []byte) *unstructured.Unstructured {
	clientConfig := map[string]any{}
	if o.URL != "" {
		clientConfig["url"] = strings.TrimSuffix(o.URL, "/") + ConversionPath
	} else {
		clientConfig["service"] = map[string]any{
			"namespace": o.Namespace, "name": o.ServiceName, "port": int64(o.ServicePort), "path": ConversionPath,
		}
	}
	if caBundle != nil {
		// Unstructured values are JSON values: []byte travels as base64 text.
		clientConfig["caBundle"] = base64.StdEncoding.EncodeToString(caBundle)
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": alertmanagerConfigCRD},
		"spec": map[string]any{
			"conversion": map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"conversionReviewVersions": []any{"v1"},
					"clientConfig":             clientConfig,
				},
			},
		},
	}}
	if !o.ManageCerts && o.CAInjectFrom != "" {
		crd.SetAnnotations(map[string]string{caInjectAnnotation: o.CAInjectFrom})
	}
	return crd
}

// applyConversion points the AlertmanagerConfig CRD at the conversion webhook; the
// apiserver writes nothing when it already does.
func (r *rotator) applyConversion(ctx context.Context, caBundle []byte) error {
	crd := desiredConversion(r.opts, caBundle)
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("point CustomResourceDefinition %s at the conversion webhook: %w", alertmanagerConfigCRD, err)
	}
	return nil
}

// ReleaseConversion sets the AlertmanagerConfig CRD's conversion back to None
// when it points at the webhook of o (its Service, or its URL): run by an
// operator whose conversion webhook is off, so that turning it off (or the
// whole webhook) never leaves the CRD calling a server that is not there.
// A conversion pointing elsewhere, or a missing CRD, is left alone.
func ReleaseConversion(ctx context.Context, c client.Client, reader client.Reader, o Options) error {
	o.setDefaults()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := reader.Get(ctx, client.ObjectKey{Name: alertmanagerConfigCRD}, crd); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !pointsAtUs(crd, o) {
		return nil
	}
	none := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": alertmanagerConfigCRD},
		"spec":       map[string]any{"conversion": map[string]any{"strategy": "None"}},
	}}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(none), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("set the conversion of CustomResourceDefinition %s back to None: %w", alertmanagerConfigCRD, err)
	}
	return nil
}

// pointsAtUs reports whether crd converts through the webhook of o.
func pointsAtUs(crd *unstructured.Unstructured, o Options) bool {
	if s, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); s != "Webhook" {
		return false
	}
	cc, _, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig")
	if url, _, _ := unstructured.NestedString(cc, "url"); url != "" {
		return o.URL != "" && url == strings.TrimSuffix(o.URL, "/")+ConversionPath
	}
	ns, _, _ := unstructured.NestedString(cc, "service", "namespace")
	name, _, _ := unstructured.NestedString(cc, "service", "name")
	return ns == o.Namespace && name == o.ServiceName
}

// ConversionReleaser runs ReleaseConversion once, retrying until it succeeds
// or ctx ends: for an operator started with its webhook off, which runs no
// rotator. A manager.Runnable, on the leader.
type ConversionReleaser struct {
	Client  client.Client
	Reader  client.Reader
	Options Options
	Log     logr.Logger
}

// Start releases the conversion, then returns.
func (c ConversionReleaser) Start(ctx context.Context) error {
	for {
		err := ReleaseConversion(ctx, c.Client, c.Reader, c.Options)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		c.Log.Error(err, "Release the AlertmanagerConfig conversion webhook")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retryInterval):
		}
	}
}
