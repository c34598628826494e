package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func admissionRequest(t *testing.T, op admissionv1.Operation, kind metav1.GroupVersionKind, obj, old any) admission.Request {
	t.Helper()
	raw := func(v any) runtime.RawExtension {
		if v == nil {
			return runtime.RawExtension{}
		}
		if b, ok := v.([]byte); ok {
			return runtime.RawExtension{Raw: b}
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Kind: kind, Operation: op, Name: "rules", Namespace: "default",
		Object: raw(obj), OldObject: raw(old),
	}}
}

var prometheusRuleKind = metav1.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}

func TestTheHandler(t *testing.T) {
	valid := promRule(group("g", alertRule("A", "up == 0")))
	invalid := promRule(group("g", alertRule("A", "up ==")))
	relabelled := promRule(group("g", alertRule("A", "up ==")))
	relabelled.Labels = map[string]string{"team": "db"}
	experimental := promRule(group("g", recordRule("x", `sort_by_label(up, "job")`)))

	for _, tc := range []struct {
		name         string
		req          admission.Request
		allowed      bool
		code         int32
		message      string
		warning      string
		causeField   string
		causeMessage string
	}{
		{
			name:    "allows a valid object",
			req:     admissionRequest(t, admissionv1.Create, prometheusRuleKind, valid, nil),
			allowed: true,
		},
		{
			name:       "refuses an invalid object as Invalid (422), naming the field and the parser's text",
			req:        admissionRequest(t, admissionv1.Create, prometheusRuleKind, invalid, nil),
			code:       http.StatusUnprocessableEntity,
			message:    `PrometheusRule.monitoring.coreos.com "rules" is invalid: spec.groups[0].rules[0].expr: Invalid value: "up ==": 1:6: parse error: unexpected end of input`,
			causeField: "spec.groups[0].rules[0].expr",
		},
		{
			name:       "refuses an update that makes the spec invalid",
			req:        admissionRequest(t, admissionv1.Update, prometheusRuleKind, invalid, valid),
			code:       http.StatusUnprocessableEntity,
			causeField: "spec.groups[0].rules[0].expr",
		},
		{
			name:    "allows an update that leaves an invalid spec alone, with a warning",
			req:     admissionRequest(t, admissionv1.Update, prometheusRuleKind, relabelled, invalid),
			allowed: true,
			warning: "the spec is invalid; the change was allowed because it leaves the spec alone: spec.groups[0].rules[0].expr",
		},
		{
			name:    "allows with a warning an expression that needs a feature flag",
			req:     admissionRequest(t, admissionv1.Create, prometheusRuleKind, experimental, nil),
			allowed: true,
			warning: "needs a Prometheus feature flag",
		},
		{
			name:    "allows, with a warning, an object it cannot read",
			req:     admissionRequest(t, admissionv1.Create, prometheusRuleKind, []byte(`{"spec":{"groups":"not a list"}}`), nil),
			allowed: true,
			warning: "Lookout could not read the object to validate it",
		},
		{
			name:    "allows a kind it does not validate",
			req:     admissionRequest(t, admissionv1.Create, metav1.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "Prometheus"}, map[string]any{}, nil),
			allowed: true,
			warning: "Lookout does not validate monitoring.coreos.com/v1, Kind=Prometheus",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := (&handler{}).Handle(context.Background(), tc.req)
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if tc.code != 0 && resp.Result.Code != tc.code {
				t.Errorf("code = %d, want %d", resp.Result.Code, tc.code)
			}
			if tc.message != "" && resp.Result.Message != tc.message {
				t.Errorf("message = %q\nwant      %q", resp.Result.Message, tc.message)
			}
			if tc.causeField != "" {
				if resp.Result.Details == nil || len(resp.Result.Details.Causes) == 0 || resp.Result.Details.Causes[0].Field != tc.causeField {
					t.Errorf("details = %+v, want a cause for %s", resp.Result.Details, tc.causeField)
				}
			}
			if tc.warning != "" && !strings.Contains(strings.Join(resp.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings = %q, want one containing %q", resp.Warnings, tc.warning)
			}
			if tc.warning == "" && len(resp.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", resp.Warnings)
			}
		})
	}
}

func TestEveryValidatedKindDecodesAndValidates(t *testing.T) {
	for _, k := range kinds {
		for _, v := range k.versions {
			gvk := metav1.GroupVersionKind{Group: monitoringGroup, Version: v, Kind: k.kind}
			obj := newObject(schemaGVK(gvk))
			if obj == nil {
				t.Errorf("%s: no object", gvk)
				continue
			}
			if _, _, ok := Validate(obj); !ok {
				t.Errorf("%s: Validate does not support it", gvk)
			}
		}
	}
	if _, _, ok := Validate(&monitoringv1.Prometheus{}); ok {
		t.Error("Validate claims to validate Prometheus objects")
	}
}

func schemaGVK(g metav1.GroupVersionKind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: g.Group, Version: g.Version, Kind: g.Kind}
}
