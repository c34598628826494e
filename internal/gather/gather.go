// Package gather reads everything one Prometheus needs into render.Inputs:
// from the controller's cache (and a few live reads), or from YAML files for
// the CLI.
package gather

import (
	"context"
	"fmt"
	"sort"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/render"
	"github.com/lookout-operator/lookout/internal/selection"
)

// Cluster gathers from a Kubernetes cluster. Cache serves monitors and
// namespaces; Live serves Secrets (whose contents are never cached) and
// ServiceAccounts.
type Cluster struct {
	Cache client.Reader
	Live  client.Reader
}

// Result is the gathered inputs plus what the controller needs to know for
// its watches.
type Result struct {
	Inputs render.Inputs
	// SecretKeys are the "namespace/name" of every Secret a selected monitor
	// references, present or not: a change to any of them must reconcile.
	SecretKeys []string
}

// Prometheus gathers the inputs of p. An invalid selector is a
// *render.SpecError.
func (c *Cluster) Prometheus(ctx context.Context, p *monitoringv1.Prometheus) (*Result, error) {
	sel, err := selection.ServiceMonitors(p)
	if err != nil {
		return nil, &render.SpecError{Reason: "InvalidSelector", Message: err.Error()}
	}
	monitors, err := c.serviceMonitors(ctx, sel, p.Namespace)
	if err != nil {
		return nil, err
	}
	ruleSel, err := selection.Rules(p)
	if err != nil {
		return nil, &render.SpecError{Reason: "InvalidSelector", Message: err.Error()}
	}
	rules, err := c.rules(ctx, ruleSel, p.Namespace)
	if err != nil {
		return nil, err
	}
	res := &Result{Inputs: render.Inputs{Prometheus: p, ServiceMonitors: monitors, Rules: rules, Secrets: map[string]*corev1.Secret{}}}

	res.SecretKeys = SecretKeys(monitors)
	for _, key := range res.SecretKeys {
		ns, name := splitKey(key)
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

func ownedBy(obj client.Object, p *monitoringv1.Prometheus) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == p.UID {
			return true
		}
	}
	return false
}

func (c *Cluster) serviceMonitors(ctx context.Context, sel *selection.Selector, own string) ([]*monitoringv1.ServiceMonitor, error) {
	if sel.SelectsNothing() {
		return nil, nil
	}
	var list monitoringv1.ServiceMonitorList
	if err := c.Cache.List(ctx, &list, listScope(sel, own)...); err != nil {
		return nil, fmt.Errorf("list ServiceMonitors: %w", err)
	}
	nsLabels, err := c.namespaceLabels(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := make([]*monitoringv1.ServiceMonitor, 0, len(list.Items))
	for i := range list.Items {
		sm := &list.Items[i]
		if sm.DeletionTimestamp.IsZero() && sel.Match(sm.Namespace, sm.Labels, nsLabels[sm.Namespace]).Selected {
			out = append(out, sm)
		}
	}
	return out, nil
}

func (c *Cluster) rules(ctx context.Context, sel *selection.Selector, own string) ([]*monitoringv1.PrometheusRule, error) {
	if sel.SelectsNothing() {
		return nil, nil
	}
	var list monitoringv1.PrometheusRuleList
	if err := c.Cache.List(ctx, &list, listScope(sel, own)...); err != nil {
		return nil, fmt.Errorf("list PrometheusRules: %w", err)
	}
	nsLabels, err := c.namespaceLabels(ctx, sel)
	if err != nil {
		return nil, err
	}
	out := make([]*monitoringv1.PrometheusRule, 0, len(list.Items))
	for i := range list.Items {
		r := &list.Items[i]
		if r.DeletionTimestamp.IsZero() && sel.Match(r.Namespace, r.Labels, nsLabels[r.Namespace]).Selected {
			out = append(out, r)
		}
	}
	return out, nil
}

func listScope(sel *selection.Selector, own string) []client.ListOption {
	if sel.OwnNamespaceOnly() {
		return []client.ListOption{client.InNamespace(own)}
	}
	return nil
}

// namespaceLabels reads namespace labels when the selector needs them.
func (c *Cluster) namespaceLabels(ctx context.Context, sel *selection.Selector) (map[string]map[string]string, error) {
	if sel.OwnNamespaceOnly() || sel.AllNamespaces() {
		return nil, nil
	}
	var nss corev1.NamespaceList
	if err := c.Cache.List(ctx, &nss); err != nil {
		return nil, fmt.Errorf("list Namespaces: %w", err)
	}
	out := make(map[string]map[string]string, len(nss.Items))
	for i := range nss.Items {
		out[nss.Items[i].Name] = nss.Items[i].Labels
	}
	return out, nil
}

// SecretKeys lists the Secrets the monitors reference, sorted and unique.
func SecretKeys(monitors []*monitoringv1.ServiceMonitor) []string {
	seen := map[string]bool{}
	add := func(ns string, sel *corev1.SecretKeySelector) {
		if sel != nil && sel.Name != "" {
			seen[ns+"/"+sel.Name] = true
		}
	}
	for _, sm := range monitors {
		for i := range sm.Spec.Endpoints {
			ep := &sm.Spec.Endpoints[i]
			if ep.BasicAuth != nil {
				add(sm.Namespace, &ep.BasicAuth.Username)
				add(sm.Namespace, &ep.BasicAuth.Password)
			}
			if ep.Authorization != nil {
				add(sm.Namespace, ep.Authorization.Credentials)
			}
			add(sm.Namespace, ep.BearerTokenSecret)
			if ep.OAuth2 != nil {
				add(sm.Namespace, ep.OAuth2.ClientID.Secret)
				add(sm.Namespace, &ep.OAuth2.ClientSecret)
			}
			if ep.TLSConfig != nil {
				add(sm.Namespace, ep.TLSConfig.CA.Secret)
				add(sm.Namespace, ep.TLSConfig.Cert.Secret)
				add(sm.Namespace, ep.TLSConfig.KeySecret)
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func splitKey(key string) (string, string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}
