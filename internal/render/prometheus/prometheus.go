// Package prometheus builds the Kubernetes objects that run one Prometheus: its
// ServiceAccount and RBAC, config and web-config Secrets, Services and one StatefulSet per
// shard. The builders are pure: the same Prometheus and Options always give the same
// objects, in the same order, without touching a cluster.
package prometheus

import (
	"errors"
	"fmt"
	"maps"

	"github.com/lookout-operator/lookout/internal/render/workload"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
)

// Options are the inputs of Objects that do not come from the Prometheus object.
type Options struct {
	// ConfigGzip is the gzipped prometheus.yaml, stored in Secret prometheus-<name> under
	// key prometheus.yaml.gz.
	ConfigGzip []byte
	// DiscoveryNamespaces are the namespaces Prometheus discovers targets in; it gets a
	// Role and RoleBinding in each.
	DiscoveryNamespaces []string
	// AllNamespaces grants discovery in every namespace through a ClusterRole and
	// ClusterRoleBinding instead; DiscoveryNamespaces is then ignored.
	AllNamespaces bool
	// DiscoverNodes grants get/list/watch on nodes (ClusterRole), needed by the node role
	// and by attachMetadata.node; the endpoints, endpointslice, service and pod roles do
	// not need it.
	DiscoverNodes bool
	// ServiceAccountExists tells that spec.serviceAccountName names a ServiceAccount that
	// exists and that Lookout did not generate (it carries no LabelPrometheus). Otherwise
	// a ServiceAccount of that name is generated. With the field empty the pods run as
	// "default" and none is generated.
	// Counting a generated one as existing would make the next reconcile prune it.
	ServiceAccountExists bool
	// ReloaderImage is the lookout-reloader image, e.g. "lookout-reloader:v0.1.0".
	ReloaderImage string
	// ConfigPieces are the gzipped scrape_configs documents of a configuration
	// too large for one Secret, in order (at most ConfigPieceSlots).
	ConfigPieces [][]byte
	// RuleConfigMaps is the data of the rule ConfigMaps, in order: index i becomes
	// prometheus-<name>-rulefiles-<i>. At most RuleConfigMapSlots.
	RuleConfigMaps []map[string]string
	// OperatorName is the app.kubernetes.io/managed-by value on generated objects
	// (default "lookout"). Pod selectors keep "prometheus-operator" whatever it is, so
	// that StatefulSets migrated from the existing operator keep their selector.
	OperatorName string
	// DaemonSet runs one pod per node in a DaemonSet instead of StatefulSets (a
	// PrometheusAgent's spec.mode DaemonSet); the reloader gets the node's name as
	// $(NODE_NAME) for the config.
	DaemonSet bool
	// RBAC, when given, hands back the RBAC objects of the previous render
	// when nothing they are made from changed (see RBACCache).
	RBAC *RBACCache
}

// Objects returns every object for the Prometheus, in the order they are applied: the
// config pieces and the config Secret first, so that a change reaches the configuration
// before anything else is written (on a start, before the thousand RBAC objects of a large
// cluster); then the rule ConfigMaps, the ServiceAccount (when generated), ClusterRole and
// ClusterRoleBinding (when needed), Roles and RoleBindings, web-config Secret, governing
// Service, Service, and last the StatefulSet(s), so that a new pod finds everything it
// mounts and may read. Every object has its TypeMeta set. Namespaced objects in the
// Prometheus's namespace have an owner reference to it (a controller one, except on the
// shared governing Service, see Shared); the others carry AnnotationOwner.
//
// A spec Validate refuses gives its *SpecError. The result shares no memory with p or opts,
// but for the configuration's bytes (ConfigGzip, ConfigPieces), which nobody changes.
func Objects(p *monitoringv1.Prometheus, opts Options) ([]workload.Object, error) {
	if err := Validate(p); err != nil {
		return nil, err
	}
	if len(opts.ConfigGzip) == 0 {
		return nil, errors.New("render Prometheus " + p.Namespace + "/" + p.Name + ": no configuration given")
	}
	if opts.ReloaderImage == "" {
		return nil, errors.New("render Prometheus " + p.Namespace + "/" + p.Name + ": no reloader image given")
	}

	var out []workload.Object
	if len(opts.ConfigPieces) > ConfigPieceSlots {
		return nil, fmt.Errorf("render Prometheus %s/%s: %d config pieces, at most %d can be mounted", p.Namespace, p.Name, len(opts.ConfigPieces), ConfigPieceSlots)
	}
	// Pieces before the main config that loads them. In unmanaged mode the config Secret
	// is the user's: not written at all.
	if !UnmanagedConfig(p) {
		for _, s := range configPieceSecrets(p, opts) {
			out = append(out, s)
		}
		out = append(out, configSecret(p, opts))
	}
	configEnd := len(out)
	if len(opts.RuleConfigMaps) > RuleConfigMapSlots {
		return nil, fmt.Errorf("render Prometheus %s/%s: %d rule ConfigMaps, at most %d can be mounted", p.Namespace, p.Name, len(opts.RuleConfigMaps), RuleConfigMapSlots)
	}
	for _, cm := range ruleConfigMaps(p, opts) {
		out = append(out, cm)
	}
	if sa := serviceAccount(p, opts); sa != nil {
		out = append(out, sa)
	}
	rbacStart, rbac := len(out), opts.RBAC.objects(p, opts) // copies already
	out = append(out, rbac...)
	web, err := webConfigSecret(p, opts)
	if err != nil {
		return nil, fmt.Errorf("render Prometheus %s/%s: %w", p.Namespace, p.Name, err)
	}
	out = append(out, web)
	// A custom spec.serviceName names a Service the user provides, as with
	// prometheus-operator: Lookout does not create it.
	if p.Spec.ServiceName == nil || *p.Spec.ServiceName == "" {
		out = append(out, governingService(p, opts))
	}
	// The ClusterIP Service prometheus-<name> only when asked for: clusters commonly
	// ship their own Service of that name (kube-prometheus does).
	if p.Annotations[AnnotationService] == "true" {
		out = append(out, service(p, opts))
	}
	if opts.DaemonSet {
		ds, err := daemonSet(p, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, ds)
	} else {
		for shard := range ShardCount(p) {
			sts, err := statefulSet(p, opts, shard)
			if err != nil {
				return nil, err
			}
			out = append(out, sts)
		}
	}

	// The builders reuse slices and maps of p and opts; copy so that callers may change
	// the result (or p) freely. The RBAC objects were copied when built; those an
	// RBACCache hands back are shared with the next render and must not be changed. So
	// are the configuration's bytes in its Secrets: the render hands the same bytes to
	// every render until they change, and nobody changes them (hundreds of KiB, copied
	// on every change otherwise).
	for i, obj := range out {
		switch {
		case i >= rbacStart && i < rbacStart+len(rbac):
		case i < configEnd:
			out[i] = copySharingData(obj.(*corev1.Secret))
		default:
			out[i] = obj.DeepCopyObject().(workload.Object)
		}
	}
	return out, nil
}

// UnmanagedConfig reports the existing operator's unmanaged configuration mode: a
// Prometheus (not an agent) with none of the four monitor selectors set leaves its config
// Secret prometheus-<name> to the user, who writes prometheus.yaml.gz into it. Objects
// then renders no config Secret and no pieces; the controller creates an empty Secret
// only when there is none, and never writes or deletes it afterwards.
func UnmanagedConfig(p *monitoringv1.Prometheus) bool {
	s := &p.Spec
	return !FlavourOf(p).Agent && s.ServiceMonitorSelector == nil && s.PodMonitorSelector == nil &&
		s.ProbeSelector == nil && s.ScrapeConfigSelector == nil
}

// UnmanagedConfigSecret is the empty config Secret the controller creates for a
// Prometheus in unmanaged mode when the user has none yet: an empty prometheus.yaml, so
// that the pods start; the user fills it in.
func UnmanagedConfigSecret(p *monitoringv1.Prometheus, opts Options) *corev1.Secret {
	return configSecret(p, opts)
}

// copySharingData copies a Secret but for the bytes of its values.
func copySharingData(s *corev1.Secret) *corev1.Secret {
	data := s.Data
	s.Data = nil
	c := s.DeepCopy()
	s.Data, c.Data = data, maps.Clone(data)
	return c
}
