// Package gather reads everything one Prometheus needs into render.Inputs:
// from the controller's cache (and a few live reads), or from YAML files for
// the CLI.
package gather

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/render"
	promrender "github.com/lookout-operator/lookout/internal/render/prometheus"
	"github.com/lookout-operator/lookout/internal/render/scrape"
	"github.com/lookout-operator/lookout/internal/selection"
)

// Cluster gathers from a Kubernetes cluster. Cache serves monitors and
// namespaces; Live serves Secrets (whose contents are never cached) and
// ServiceAccounts.
type Cluster struct {
	Cache client.Reader
	Live  client.Reader
	// Informers, when set (the controller's cache), serve the monitors
	// straight from the informers' stores: the cached objects themselves,
	// without the copy into a typed list that a List makes even when told
	// not to deep-copy. Render only reads them.
	Informers InformerSource
}

// Result is the gathered inputs plus what the controller needs to know for
// its watches.
type Result struct {
	Inputs render.Inputs
	// Refs are "<Kind>/<namespace>/<name>" of every Secret and ConfigMap the
	// inputs reference, present or not: a change to any of them must reconcile.
	Refs []string
}

// Prometheus gathers the inputs of p. An invalid selector is a
// *render.SpecError. memo (nil: none) carries what the last gather of p learnt (see Memo);
// with it, the inputs carry the Delta from the last gather's monitors when it can tell.
func (c *Cluster) Prometheus(ctx context.Context, p *monitoringv1.Prometheus, memo *Memo) (_ *Result, err error) {
	var seq uint64
	if memo != nil {
		memo.seq++
		seq = memo.seq
		// What the selections depend on besides the objects: the spec, which a new
		// generation or another object changes.
		if owner := string(p.UID) + "/" + strconv.FormatInt(p.Generation, 10); owner != memo.owner {
			memo.reset()
			memo.owner = owner
		}
		defer func() {
			if err != nil {
				memo.reset() // partly updated: start again
			}
		}()
	} else {
		memo = &Memo{} // used by nothing below
	}
	in := render.Inputs{Prometheus: p, Secrets: map[string]*corev1.Secret{}}
	if in.ServiceMonitors, err = selectKind[monitoringv1.ServiceMonitor](ctx, c, p, selection.ServiceMonitors, &monitoringv1.ServiceMonitorList{},
		func(l *monitoringv1.ServiceMonitorList) []monitoringv1.ServiceMonitor { return l.Items }, &memo.serviceMonitor, seq); err != nil {
		return nil, err
	}
	if in.PodMonitors, err = selectKind[monitoringv1.PodMonitor](ctx, c, p, selection.PodMonitors, &monitoringv1.PodMonitorList{},
		func(l *monitoringv1.PodMonitorList) []monitoringv1.PodMonitor { return l.Items }, &memo.podMonitor, seq); err != nil {
		return nil, err
	}
	if in.Probes, err = selectKind[monitoringv1.Probe](ctx, c, p, selection.Probes, &monitoringv1.ProbeList{},
		func(l *monitoringv1.ProbeList) []monitoringv1.Probe { return l.Items }, &memo.probe, seq); err != nil {
		return nil, err
	}
	if in.ScrapeConfigs, err = selectKind[monitoringv1alpha1.ScrapeConfig](ctx, c, p, selection.ScrapeConfigs, &monitoringv1alpha1.ScrapeConfigList{},
		func(l *monitoringv1alpha1.ScrapeConfigList) []monitoringv1alpha1.ScrapeConfig { return l.Items }, &memo.scrapeConfig, seq); err != nil {
		return nil, err
	}
	if in.Rules, err = selectKind[monitoringv1.PrometheusRule](ctx, c, p, selection.Rules, &monitoringv1.PrometheusRuleList{},
		func(l *monitoringv1.PrometheusRuleList) []monitoringv1.PrometheusRule { return l.Items }, &memo.rule, seq); err != nil {
		return nil, err
	}
	res := &Result{Inputs: in}

	var secretKeys, configMapKeys []string
	if seq != 0 && memo.monitorsKnown() {
		// The monitors' references are counted as they come and go; the Prometheus's own
		// are read from it.
		res.Inputs.Delta = memo.delta()
		memo.base = seq
		secretKeys, configMapKeys = memo.referenced()
		ps, pc := scrape.References(scrape.Input{Prometheus: p})
		secretKeys, configMapKeys = append(secretKeys, ps...), append(configMapKeys, pc...)
		slices.Sort(configMapKeys)
		configMapKeys = slices.Compact(configMapKeys)
	} else {
		memo.base = 0
		memo.forgetChanges()
		refs := scrape.Input{Prometheus: p, ServiceMonitors: in.ServiceMonitors, PodMonitors: in.PodMonitors, Probes: in.Probes, ScrapeConfigs: in.ScrapeConfigs}
		secretKeys, configMapKeys = scrape.References(refs)
	}
	additional := additionalConfigs(p, &res.Inputs)
	for _, a := range additional {
		if a.sel != nil {
			secretKeys = append(secretKeys, p.Namespace+"/"+a.sel.Name)
		}
	}
	for _, ref := range promrender.ThanosSecretKeys(p) {
		secretKeys = append(secretKeys, p.Namespace+"/"+ref.Secret.Name)
	}
	slices.Sort(secretKeys)
	secretKeys = slices.Compact(secretKeys)
	for _, key := range secretKeys {
		res.Refs = append(res.Refs, "Secret/"+key)
		ns, name, _ := strings.Cut(key, "/")
		var s corev1.Secret
		err := c.Live.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s)
		switch {
		case apierrors.IsNotFound(err):
			// absent: the monitor that needs it is rejected by render
		case err != nil:
			return nil, fmt.Errorf("read Secret %s: %w", key, err)
		default:
			res.Inputs.Secrets[key] = &s
		}
	}
	in.ConfigMaps = map[string]*corev1.ConfigMap{}
	for _, key := range configMapKeys {
		res.Refs = append(res.Refs, "ConfigMap/"+key)
		ns, name, _ := strings.Cut(key, "/")
		var cm corev1.ConfigMap
		err := c.Live.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm)
		switch {
		case apierrors.IsNotFound(err):
			// absent: the monitor that needs it is rejected by render
		case err != nil:
			return nil, fmt.Errorf("read ConfigMap %s: %w", key, err)
		default:
			in.ConfigMaps[key] = &cm
		}
	}
	res.Inputs.ConfigMaps = in.ConfigMaps

	for _, a := range additional {
		if err := a.read(p, res.Inputs.Secrets); err != nil {
			return nil, err
		}
	}

	if p.Spec.ServiceAccountName != "" {
		var sa corev1.ServiceAccount
		err := c.Live.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.ServiceAccountName}, &sa)
		switch {
		case err == nil:
			// Ours (generated on an earlier run) does not count as existing:
			// we keep rendering it so that it is not pruned.
			res.Inputs.ServiceAccountExists = !ownedBy(&sa, p)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("read ServiceAccount %s/%s: %w", p.Namespace, p.Spec.ServiceAccountName, err)
		}
	}
	return res, nil
}

// additionalConfig is one of the Prometheus's Secret keys whose content goes into the config as
// given (additional scrape, alertmanager and alert relabel configs).
type additionalConfig struct {
	field string // its name in the spec
	sel   *corev1.SecretKeySelector
	into  *[]byte
}

func additionalConfigs(p *monitoringv1.Prometheus, in *render.Inputs) []additionalConfig {
	return []additionalConfig{
		{"additionalScrapeConfigs", p.Spec.AdditionalScrapeConfigs, &in.AdditionalScrapeConfigs},
		{"additionalAlertManagerConfigs", p.Spec.AdditionalAlertManagerConfigs, &in.AdditionalAlertManagerConfigs},
		{"additionalAlertRelabelConfigs", p.Spec.AdditionalAlertRelabelConfigs, &in.AdditionalAlertRelabelConfigs},
	}
}

// read sets the content from the gathered Secrets. A missing Secret or key is a
// *render.SpecError (reason "<Field>NotFound") unless the selector is optional: those configs
// cannot be left out alone without changing what the user asked for.
func (a additionalConfig) read(p *monitoringv1.Prometheus, secrets map[string]*corev1.Secret) error {
	if a.sel == nil {
		return nil
	}
	optional := a.sel.Optional != nil && *a.sel.Optional
	reason := strings.ToUpper(a.field[:1]) + a.field[1:] + "NotFound"
	s, ok := secrets[p.Namespace+"/"+a.sel.Name]
	if !ok {
		if optional {
			return nil
		}
		return &render.SpecError{Reason: reason, Message: fmt.Sprintf("spec.%s: Secret %s/%s does not exist", a.field, p.Namespace, a.sel.Name)}
	}
	v, ok := s.Data[a.sel.Key]
	if !ok {
		// Objects read from files (the CLI) may carry stringData, which the API server would have merged.
		if sv, sok := s.StringData[a.sel.Key]; sok {
			v, ok = []byte(sv), true
		}
	}
	if !ok {
		if optional {
			return nil
		}
		return &render.SpecError{Reason: reason, Message: fmt.Sprintf("spec.%s: Secret %s/%s has no key %q", a.field, p.Namespace, a.sel.Name, a.sel.Key)}
	}
	*a.into = v
	return nil
}

// selectKind lists the objects of one kind (from the cache) and keeps those
// the Prometheus's selectors for that kind select.
func selectKind[T any, PT interface {
	*T
	client.Object
}, L client.ObjectList](ctx context.Context, c *Cluster, p *monitoringv1.Prometheus,
	selector func(*monitoringv1.Prometheus) (*selection.Selector, error), list L, items func(L) []T, memo *kindMemo[PT], seq uint64) ([]PT, error) {
	sel, err := selector(p)
	if err != nil {
		return nil, &render.SpecError{Reason: "InvalidSelector", Message: err.Error()}
	}
	return selectWith[T, PT](ctx, c, sel, p.Namespace, list, items, memo, seq)
}

// selectWith lists the objects of one kind (from the cache) and keeps those sel
// selects; ownNamespace is the namespace of the selecting workload. memo, when seq is
// not 0, is the kind's memo, which this gather (seq) brings up to date.
func selectWith[T any, PT interface {
	*T
	client.Object
}, L client.ObjectList](ctx context.Context, c *Cluster, sel *selection.Selector, ownNamespace string, list L, items func(L) []T, memo *kindMemo[PT], seq uint64) ([]PT, error) {
	if seq == 0 {
		memo = nil
	}
	if sel.SelectsNothing() {
		if memo != nil {
			memo.update(seq, nil, true, nil) // whatever was selected is gone
		}
		return nil, nil
	}
	// Rendering never modifies its input (a render test checks it), so the
	// cached objects are read without the copy a List makes by default: with
	// thousands of monitors that copy was most of a reconcile's garbage.
	opts := []client.ListOption{client.UnsafeDisableDeepCopy}
	if sel.OwnNamespaceOnly() {
		opts = append(opts, client.InNamespace(ownNamespace))
	}
	nsLabels, err := c.namespaceLabels(ctx, sel)
	if err != nil {
		return nil, err
	}
	ns := ""
	if sel.OwnNamespaceOnly() {
		ns = ownNamespace
	}
	all, shared, err := fromStore[T, PT](ctx, c.Informers, ns)
	if err != nil {
		return nil, err
	}
	if !shared {
		if memo != nil {
			memo.reset() // copies: new objects on every list
		}
		if err := c.Cache.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("list %T: %w", list, err)
		}
		listed := items(list)
		all = make([]PT, len(listed))
		for i := range listed {
			all[i] = PT(&listed[i])
		}
	}
	selects := func(o PT) bool {
		return o.GetDeletionTimestamp().IsZero() && sel.Match(o.GetNamespace(), o.GetLabels(), nsLabels[o.GetNamespace()]).Selected
	}
	if shared && memo != nil {
		// An object seen before is selected as it was, unless the selector reads namespace
		// labels, which may have changed since.
		return memo.update(seq, all, sel.OwnNamespaceOnly() || sel.AllNamespaces(), selects), nil
	}
	out := make([]PT, 0, len(all))
	for _, o := range all {
		if selects(o) {
			out = append(out, o)
		}
	}
	return out, nil
}

// InformerSource is the part of the controller-runtime cache that hands out
// informers.
type InformerSource interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// fromStore returns the objects of one kind from its informer's store (in
// namespace ns, or all), and false when src cannot serve them that way (no
// source, or an informer that is not a single shared index informer, as with
// a cache restricted to some namespaces).
func fromStore[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, src InformerSource, ns string) ([]PT, bool, error) {
	if src == nil {
		return nil, false, nil
	}
	inf, err := src.GetInformer(ctx, PT(new(T)))
	if err != nil {
		return nil, false, fmt.Errorf("informer for %T: %w", new(T), err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, false, nil
	}
	var objs []any
	if ns == "" {
		objs = sii.GetIndexer().List()
	} else if objs, err = sii.GetIndexer().ByIndex(toolscache.NamespaceIndex, ns); err != nil {
		return nil, false, nil
	}
	out := make([]PT, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(PT); ok {
			out = append(out, t)
		}
	}
	return out, true, nil
}

func ownedBy(obj client.Object, p *monitoringv1.Prometheus) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == p.UID {
			return true
		}
	}
	return false
}

// namespaceLabels reads namespace labels when the selector needs them.
func (c *Cluster) namespaceLabels(ctx context.Context, sel *selection.Selector) (map[string]map[string]string, error) {
	if sel.OwnNamespaceOnly() || sel.AllNamespaces() {
		return nil, nil
	}
	var nss corev1.NamespaceList
	if err := c.Cache.List(ctx, &nss, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Namespaces: %w", err)
	}
	out := make(map[string]map[string]string, len(nss.Items))
	for i := range nss.Items {
		out[nss.Items[i].Name] = nss.Items[i].Labels
	}
	return out, nil
}
