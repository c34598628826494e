package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	monitoringv1beta1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// Validate validates any kind the webhook knows. supported is false for
// other kinds (nothing to say about them).
func Validate(obj runtime.Object) (errs field.ErrorList, warnings []string, supported bool) {
	switch o := obj.(type) {
	case *monitoringv1.PrometheusRule:
		return ValidatePrometheusRule(o), prometheusRuleWarnings(o), true
	case *monitoringv1.ServiceMonitor:
		return ValidateServiceMonitor(o), serviceMonitorWarnings(o), true
	case *monitoringv1.PodMonitor:
		return ValidatePodMonitor(o), podMonitorWarnings(o), true
	case *monitoringv1.Probe:
		return ValidateProbe(o), nil, true
	case *monitoringv1alpha1.ScrapeConfig:
		return ValidateScrapeConfig(o), nil, true
	case *monitoringv1alpha1.AlertmanagerConfig:
		return ValidateAlertmanagerConfig(o), alertmanagerConfigWarnings(o), true
	case *monitoringv1beta1.AlertmanagerConfig:
		return ValidateAlertmanagerConfigV1beta1(o), nil, true
	}
	return nil, nil, false
}

// newObject returns an empty object of a validated kind.
func newObject(gvk schema.GroupVersionKind) runtime.Object {
	if gvk.GroupKind() == postgresv1beta1.GroupVersion.WithKind(postgresv1beta1.Kind).GroupKind() && gvk.Version == postgresv1beta1.GroupVersion.Version {
		return &postgresv1beta1.PostgresCluster{}
	}
	if gvk.Group != monitoringGroup {
		return nil
	}
	switch gvk.Version + "/" + gvk.Kind {
	case "v1/PrometheusRule":
		return &monitoringv1.PrometheusRule{}
	case "v1/ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	case "v1/PodMonitor":
		return &monitoringv1.PodMonitor{}
	case "v1/Probe":
		return &monitoringv1.Probe{}
	case "v1alpha1/ScrapeConfig":
		return &monitoringv1alpha1.ScrapeConfig{}
	case "v1alpha1/AlertmanagerConfig":
		return &monitoringv1alpha1.AlertmanagerConfig{}
	case "v1beta1/AlertmanagerConfig":
		return &monitoringv1beta1.AlertmanagerConfig{}
	}
	return nil
}

// handler answers admission requests for every validated kind; it reads
// the kind from the request.
type handler struct {
	// postgres is what PostgresClusters are validated against.
	postgres *pgrender.Installation
}

// Handle validates the object of a CREATE or UPDATE. When in doubt it
// allows: the controller validates again and reports on status, and a
// webhook must not make objects it cannot read impossible to write.
func (h *handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	log := ctrl.LoggerFrom(ctx)
	gvk := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	obj := newObject(gvk)
	if obj == nil {
		return admission.Allowed("").WithWarnings(fmt.Sprintf("Lookout does not validate %s", gvk))
	}
	if len(req.Object.Raw) == 0 {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("the request holds no object"))
	}
	if err := json.Unmarshal(req.Object.Raw, obj); err != nil {
		log.Error(err, "Decode the object to validate")
		return admission.Allowed("").WithWarnings("Lookout could not read the object to validate it: " + err.Error())
	}
	errs, warnings, _ := Validate(obj)
	if pc, ok := obj.(*postgresv1beta1.PostgresCluster); ok && h.postgres != nil {
		errs = ValidatePostgresCluster(pc, *h.postgres)
	}
	if len(errs) == 0 {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	if req.Operation == admissionv1.Update && specUnchanged(req.OldObject.Raw, req.Object.Raw) {
		// A label, annotation or finalizer change of an object that was
		// admitted before (by an older Lookout, or while the webhook was
		// down) must go through, or the object could not even be deleted.
		return admission.Allowed("").WithWarnings(append(warnings,
			"the spec is invalid; the change was allowed because it leaves the spec alone: "+errs.ToAggregate().Error())...)
	}
	status := apierrors.NewInvalid(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, req.Name, errs).ErrStatus
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed:  false,
		Result:   &status,
		Warnings: warnings,
	}}
}

// specUnchanged compares the spec of two JSON objects.
func specUnchanged(oldRaw, newRaw []byte) bool {
	if len(oldRaw) == 0 {
		return false
	}
	var o, n struct {
		Spec any `json:"spec"`
	}
	if json.Unmarshal(oldRaw, &o) != nil || json.Unmarshal(newRaw, &n) != nil {
		return false
	}
	return reflect.DeepEqual(o.Spec, n.Spec)
}
