package gather

import (
	"context"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render"
	"github.com/lookout-operator/lookout/internal/render/thanos"
	"github.com/lookout-operator/lookout/internal/selection"
)

// ThanosRulerResult is the gathered inputs of one ThanosRuler plus what the controller
// needs for its watches.
type ThanosRulerResult struct {
	Inputs render.ThanosRulerInputs
	// Refs are "Secret/<namespace>/<name>" of every Secret the spec references, present
	// or not: one appearing or changing must reconcile.
	Refs []string
}

// ThanosRuler gathers the inputs of tr: the PrometheusRules it selects (from the cache)
// and the Secrets its spec references (read live: the cache holds their metadata only).
// An invalid selector is a *render.SpecError.
func (c *Cluster) ThanosRuler(ctx context.Context, tr *monitoringv1.ThanosRuler) (*ThanosRulerResult, error) {
	sel, err := selection.ThanosRulerRules(tr)
	if err != nil {
		return nil, &render.SpecError{Reason: "InvalidSelector", Message: err.Error()}
	}
	res := &ThanosRulerResult{Inputs: render.ThanosRulerInputs{ThanosRuler: tr}}
	if res.Inputs.Rules, err = selectWith[monitoringv1.PrometheusRule](ctx, c, sel, tr.Namespace, &monitoringv1.PrometheusRuleList{},
		func(l *monitoringv1.PrometheusRuleList) []monitoringv1.PrometheusRule { return l.Items }, nil, 0); err != nil {
		return nil, err
	}
	var keys []string
	for _, ref := range thanos.SecretKeys(tr) {
		keys = append(keys, tr.Namespace+"/"+ref.Secret.Name)
		res.Refs = append(res.Refs, "Secret/"+tr.Namespace+"/"+ref.Secret.Name)
	}
	if res.Inputs.Secrets, err = readLive[corev1.Secret](ctx, c.Live, keys); err != nil {
		return nil, err
	}
	return res, nil
}
