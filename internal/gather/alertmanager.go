package gather

import (
	"context"
	"fmt"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/render"
	"github.com/lookout-operator/lookout/internal/render/alertmanager"
	"github.com/lookout-operator/lookout/internal/render/alertmanager/amconfig"
	"github.com/lookout-operator/lookout/internal/selection"
)

// AlertmanagerResult is the gathered inputs of one Alertmanager plus what the
// controller needs for its watches.
type AlertmanagerResult struct {
	Inputs render.AlertmanagerInputs
	// Refs are "<Kind>/<namespace>/<name>" of every Secret and ConfigMap the inputs
	// read, present or not: a change to any of them must reconcile.
	Refs []string
}

// Alertmanager gathers the inputs of am: the AlertmanagerConfigs it selects (from the
// cache), the user's config Secret and the Secrets and ConfigMaps the configs reference
// (read live: the cache holds their metadata only). An invalid selector, or a global
// AlertmanagerConfig that does not exist, is a *render.SpecError.
func (c *Cluster) Alertmanager(ctx context.Context, am *monitoringv1.Alertmanager) (*AlertmanagerResult, error) {
	sel, err := selection.AlertmanagerConfigs(am)
	if err != nil {
		return nil, &render.SpecError{Reason: "InvalidSelector", Message: err.Error()}
	}
	res := &AlertmanagerResult{Inputs: render.AlertmanagerInputs{Alertmanager: am}}
	in := &res.Inputs
	if in.Configs, err = selectWith[monitoringv1alpha1.AlertmanagerConfig](ctx, c, sel, am.Namespace, &monitoringv1alpha1.AlertmanagerConfigList{},
		func(l *monitoringv1alpha1.AlertmanagerConfigList) []monitoringv1alpha1.AlertmanagerConfig {
			return l.Items
		}, nil, 0); err != nil {
		return nil, err
	}

	userKey := am.Namespace + "/" + alertmanager.UserConfigSecretName(am)
	res.Refs = append(res.Refs, "Secret/"+userKey)
	user, err := readLive[corev1.Secret](ctx, c.Live, []string{userKey})
	if err != nil {
		return nil, err
	}
	if s := user[userKey]; s != nil {
		in.UserConfig = s.Data
		if in.UserConfig == nil {
			in.UserConfig = map[string][]byte{}
		}
	}

	if ac := am.Spec.AlertmanagerConfiguration; ac != nil && ac.Name != "" {
		var global monitoringv1alpha1.AlertmanagerConfig
		err := c.Cache.Get(ctx, client.ObjectKey{Namespace: am.Namespace, Name: ac.Name}, &global)
		switch {
		case apierrors.IsNotFound(err):
			return nil, &render.SpecError{Reason: "AlertmanagerConfigurationNotFound",
				Message: fmt.Sprintf("spec.alertmanagerConfiguration.name: AlertmanagerConfig %s/%s does not exist", am.Namespace, ac.Name)}
		case err != nil:
			return nil, fmt.Errorf("read AlertmanagerConfig %s/%s: %w", am.Namespace, ac.Name, err)
		}
		in.Global = &global
	}

	refs := amconfig.Input{Alertmanager: am, Global: in.Global, Configs: in.Configs}
	secretKeys, configMapKeys := amconfig.SecretKeys(refs), amconfig.ConfigMapKeys(refs)
	for _, k := range secretKeys {
		res.Refs = append(res.Refs, "Secret/"+k)
	}
	for _, k := range configMapKeys {
		res.Refs = append(res.Refs, "ConfigMap/"+k)
	}
	if in.Secrets, err = readLive[corev1.Secret](ctx, c.Live, secretKeys); err != nil {
		return nil, err
	}
	if in.ConfigMaps, err = readLive[corev1.ConfigMap](ctx, c.Live, configMapKeys); err != nil {
		return nil, err
	}
	return res, nil
}

// readLive reads the objects named "namespace/name" from r; an absent one is left out of
// the map (whoever needs it reports that).
func readLive[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, r client.Reader, keys []string) (map[string]PT, error) {
	out := make(map[string]PT, len(keys))
	for _, key := range keys {
		ns, name, _ := strings.Cut(key, "/")
		obj := PT(new(T))
		err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("read %T %s: %w", obj, key, err)
		default:
			out[key] = obj
		}
	}
	return out, nil
}
