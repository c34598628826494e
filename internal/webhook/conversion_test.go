package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lookout-operator/lookout/internal/scheme"
)

func review(t *testing.T, h http.Handler, desired string, objects ...any) *apiextensionsv1.ConversionResponse {
	t.Helper()
	req := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "1", DesiredAPIVersion: desired},
	}
	for _, o := range objects {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		req.Request.Objects = append(req.Request.Objects, runtime.RawExtension{Raw: raw})
	}
	body, _ := json.Marshal(req)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ConversionPath, bytes.NewReader(body)))
	var resp apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.Response == nil {
		t.Fatalf("no ConversionReview back (%v): %s", err, rec.Body.String())
	}
	return resp.Response
}

func TestConversionReviewsConvertEveryObjectAndRefuseUnknownVersions(t *testing.T) {
	h, err := conversionHandler(scheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	obj := func(name string) map[string]any {
		return map[string]any{
			"apiVersion": "monitoring.coreos.com/v1alpha1", "kind": "AlertmanagerConfig",
			"metadata": map[string]any{"name": name, "namespace": "ns"},
			"spec": map[string]any{
				"route":     map[string]any{"receiver": "r", "matchers": []any{map[string]any{"name": "a", "value": "b.*", "regex": true}}},
				"receivers": []any{map[string]any{"name": "r"}},
				"muteTimeIntervals": []any{map[string]any{"name": "nights", "timeIntervals": []any{
					map[string]any{"times": []any{map[string]any{"startTime": "22:00", "endTime": "23:59"}}}}}},
			},
		}
	}
	resp := review(t, h, "monitoring.coreos.com/v1beta1", obj("one"), obj("two"))
	if resp.Result.Status != metav1.StatusSuccess || len(resp.ConvertedObjects) != 2 {
		t.Fatalf("result %+v, %d objects", resp.Result, len(resp.ConvertedObjects))
	}
	for i, raw := range resp.ConvertedObjects {
		var got map[string]any
		if err := json.Unmarshal(raw.Raw, &got); err != nil {
			t.Fatal(err)
		}
		spec := got["spec"].(map[string]any)
		m := spec["route"].(map[string]any)["matchers"].([]any)[0].(map[string]any)
		if got["apiVersion"] != "monitoring.coreos.com/v1beta1" || m["matchType"] != "=~" || spec["timeIntervals"] == nil {
			t.Errorf("object %d converted to %v", i, got)
		}
	}

	// And back: the v1alpha1 shape again.
	var beta map[string]any
	_ = json.Unmarshal(resp.ConvertedObjects[0].Raw, &beta)
	back := review(t, h, "monitoring.coreos.com/v1alpha1", beta)
	var alpha monitoringv1alpha1.AlertmanagerConfig
	if back.Result.Status != metav1.StatusSuccess || json.Unmarshal(back.ConvertedObjects[0].Raw, &alpha) != nil {
		t.Fatalf("back to v1alpha1: %+v", back.Result)
	}
	if len(alpha.Spec.MuteTimeIntervals) != 1 || alpha.Spec.MuteTimeIntervals[0].Name != "nights" || alpha.Spec.Route.Matchers[0].MatchType != "=~" {
		t.Errorf("round trip: %+v", alpha.Spec)
	}

	if resp := review(t, h, "monitoring.coreos.com/v9", obj("three")); resp.Result.Status == metav1.StatusSuccess {
		t.Errorf("an unknown version converted: %+v", resp)
	}
}
