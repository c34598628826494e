package render

import (
	"errors"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/rules"
	"github.com/lookout-operator/lookout/internal/render/scrape"
	"github.com/lookout-operator/lookout/internal/render/thanos"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// ThanosRulerInputs is everything rendering one ThanosRuler needs.
type ThanosRulerInputs struct {
	ThanosRuler *monitoringv1.ThanosRuler
	// Rules are the PrometheusRules the ThanosRuler selects.
	Rules []*monitoringv1.PrometheusRule
	// Secrets the spec references (object storage, query and Alertmanager configs),
	// keyed "namespace/name"; absent when they do not exist.
	Secrets map[string]*corev1.Secret
	// ReloaderImage is the image of the config-reloader sidecar.
	ReloaderImage string
}

// ThanosRulerDesired is the rendered state of one ThanosRuler.
type ThanosRulerDesired struct {
	// Objects in the order they are applied.
	Objects []thanos.Object
	// Verdicts, one per selected PrometheusRule; made anew by every render.
	Verdicts []scrape.Verdict
}

// The pods mount a fixed number of rule ConfigMap names; the rules renderer must never
// produce more.
var _ = [1]struct{}{}[rules.MaxConfigMaps-thanos.RuleConfigMapSlots]

// ThanosRuler renders one ThanosRuler: its rule ConfigMaps (the same files and packing as
// a Prometheus's, in Thanos's dialect) and its objects. A spec that cannot be rendered,
// or a Secret key it needs that does not exist, is a *SpecError: nothing is applied.
func ThanosRuler(in ThanosRulerInputs) (*ThanosRulerDesired, error) {
	tr := in.ThanosRuler
	if err := thanos.Validate(tr); err != nil {
		return nil, specError(err)
	}
	if err := checkSecretKeys(tr.Namespace, thanos.SecretKeys(tr), in.Secrets); err != nil {
		return nil, err
	}
	ruleRes, err := rules.Generate(rules.Input{ThanosRuler: tr, Rules: in.Rules})
	if err != nil {
		return nil, &SpecError{Reason: "InvalidRules", Message: err.Error()}
	}
	objs, err := thanos.Objects(tr, thanos.Options{RuleConfigMaps: ruleRes.ConfigMaps, ReloaderImage: in.ReloaderImage})
	if err != nil {
		return nil, specError(err)
	}
	verdicts := make([]scrape.Verdict, len(ruleRes.Verdicts))
	for i, v := range ruleRes.Verdicts {
		verdicts[i] = scrape.Verdict(v)
	}
	return &ThanosRulerDesired{Objects: objs, Verdicts: verdicts}, nil
}

// specError turns a workload check's error into a SpecError with its reason.
func specError(err error) *SpecError {
	var se *workload.SpecError
	if errors.As(err, &se) {
		return &SpecError{Reason: se.Reason, Message: se.Message}
	}
	return &SpecError{Reason: "InvalidSpec", Message: err.Error()}
}

// checkSecretKeys refuses a Secret key a Thanos container would read that does not exist
// (unless marked optional): the kubelet would not start the pod, and only its events
// would say why.
func checkSecretKeys(namespace string, refs []thanos.FileConfig, secrets map[string]*corev1.Secret) *SpecError {
	for _, ref := range refs {
		sel := ref.Secret
		if sel.Optional != nil && *sel.Optional {
			continue
		}
		s := secrets[namespace+"/"+sel.Name]
		if s == nil {
			return &SpecError{Reason: "SecretNotFound", Message: fmt.Sprintf("%s: Secret %s/%s does not exist", ref.Field, namespace, sel.Name)}
		}
		if _, ok := s.Data[sel.Key]; !ok {
			if _, ok := s.StringData[sel.Key]; !ok {
				return &SpecError{Reason: "SecretKeyNotFound", Message: fmt.Sprintf("%s: Secret %s/%s has no key %q", ref.Field, namespace, sel.Name, sel.Key)}
			}
		}
	}
	return nil
}
