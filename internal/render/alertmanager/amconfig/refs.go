package amconfig

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lookout-operator/lookout/internal/render/keyref"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Reasons an AlertmanagerConfig is rejected with (Verdict.Reason).
const (
	ReasonSecretNotFound        = "SecretNotFound"
	ReasonSecretKeyNotFound     = "SecretKeyNotFound"
	ReasonConfigMapNotFound     = "ConfigMapNotFound"
	ReasonConfigMapKeyNotFound  = "ConfigMapKeyNotFound"
	ReasonUnknownReceiver       = "UnknownReceiver"
	ReasonDuplicateReceiver     = "DuplicateReceiver"
	ReasonUnknownTimeInterval   = "UnknownTimeInterval"
	ReasonInvalidMatcher        = "InvalidMatcher"
	ReasonInvalidRoute          = "InvalidRoute"
	ReasonInvalidReceiver       = "InvalidReceiver"
	ReasonInvalidTimeInterval   = "InvalidTimeInterval"
	ReasonUnsupportedVersion    = "UnsupportedByVersion"
	ReasonRefusedByAlertmanager = "RefusedByAlertmanager"
)

// ReasonFieldsDropped is the reason of an accepted AlertmanagerConfig some of whose
// fields are newer than the Alertmanager's release: they are left out of the config,
// as the existing operator does, and the verdict's message names them.
const ReasonFieldsDropped = "FieldsDroppedForVersion"

// rejection is why one AlertmanagerConfig (or the global configuration) cannot be used.
// Message names the field, e.g. "receivers[0].slackConfigs[1].apiURL: Secret ns/x not found".
type rejection struct {
	Reason, Message string
}

func (r *rejection) Error() string { return r.Message }

func reject(reason, format string, args ...any) *rejection {
	return &rejection{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// refs resolves the Secret and ConfigMap references of one AlertmanagerConfig, in its
// namespace. In collect mode (SecretKeys, ConfigMapKeys) it only records what is
// referenced and answers every lookup with a placeholder, so that a conversion visits
// every reference.
type refs struct {
	ns      string
	version workload.Version // the Alertmanager's version, for fields newer versions add
	// dropped are the fields left out because the Alertmanager's release is too old for
	// them, each with the release that added it.
	dropped    []string
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap

	collect                   bool
	secretKeys, configMapKeys map[string]struct{}
}

// collectPlaceholder stands in for every referenced value in collect mode; it is a valid
// URL so that URL-shaped fields convert.
const collectPlaceholder = "http://placeholder.invalid/"

// secret reads one key of a Secret; field is the path named in errors. An optional
// reference to something absent yields "".
func (r *refs) secret(field string, sel *corev1.SecretKeySelector) (string, error) {
	if sel == nil {
		return "", nil
	}
	if sel.Name == "" || sel.Key == "" {
		return "", reject(ReasonInvalidReceiver, "%s: the Secret name and key must both be set", field)
	}
	key := r.ns + "/" + sel.Name
	if r.collect {
		r.secretKeys[key] = struct{}{}
		return collectPlaceholder, nil
	}
	v, missing := keyref.Secret(r.secrets, r.ns, sel)
	switch missing {
	case keyref.NoObject:
		return "", reject(ReasonSecretNotFound, "%s: Secret %s not found", field, key)
	case keyref.NoKey:
		return "", reject(ReasonSecretKeyNotFound, "%s: key %q not found in Secret %s", field, sel.Key, key)
	}
	return v, nil
}

// configMap reads one key of a ConfigMap, like secret.
func (r *refs) configMap(field string, sel *corev1.ConfigMapKeySelector) (string, error) {
	if sel == nil {
		return "", nil
	}
	if sel.Name == "" || sel.Key == "" {
		return "", reject(ReasonInvalidReceiver, "%s: the ConfigMap name and key must both be set", field)
	}
	key := r.ns + "/" + sel.Name
	if r.collect {
		r.configMapKeys[key] = struct{}{}
		return collectPlaceholder, nil
	}
	v, missing := keyref.ConfigMap(r.configMaps, r.ns, sel)
	switch missing {
	case keyref.NoObject:
		return "", reject(ReasonConfigMapNotFound, "%s: ConfigMap %s not found", field, key)
	case keyref.NoKey:
		return "", reject(ReasonConfigMapKeyNotFound, "%s: key %q not found in ConfigMap %s", field, sel.Key, key)
	}
	return v, nil
}

// secretOrConfigMap reads what v points at; "" when it points nowhere.
func (r *refs) secretOrConfigMap(field string, v *monitoringv1.SecretOrConfigMap) (string, error) {
	switch {
	case v == nil:
		return "", nil
	case v.Secret != nil && v.ConfigMap != nil:
		return "", reject(ReasonInvalidReceiver, "%s: secret and configMap cannot both be set", field)
	case v.Secret != nil:
		return r.secret(field+".secret", v.Secret)
	case v.ConfigMap != nil:
		return r.configMap(field+".configMap", v.ConfigMap)
	}
	return "", nil
}
