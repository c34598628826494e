// Package selection decides which monitors, rules and namespaces a Prometheus
// selects, and explains why an object is not selected. The controller, the
// watch mappers and the CLI's explain command all use it.
package selection

import (
	"fmt"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Reasons a Verdict carries when an object is not selected.
const (
	// ReasonSelected: both the object and its namespace match.
	ReasonSelected = "Selected"
	// ReasonNoSelector: the object selector is nil, which selects nothing.
	ReasonNoSelector = "NoSelector"
	// ReasonLabelsMismatch: the object's labels do not match the object selector.
	ReasonLabelsMismatch = "LabelsMismatch"
	// ReasonNamespaceNotSelected: the object's namespace is not selected.
	ReasonNamespaceNotSelected = "NamespaceNotSelected"
)

// Verdict says whether an object is selected and, when not, why.
type Verdict struct {
	Selected bool
	Reason   string
	Message  string
}

// Selector is one Prometheus's pair of selectors for one kind of object,
// compiled once so that matching thousands of objects stays cheap.
type Selector struct {
	field, nsField string // e.g. serviceMonitorSelector, for messages
	object         *metav1.LabelSelector
	namespace      *metav1.LabelSelector
	objectSel      labels.Selector // nil when object is nil
	namespaceSel   labels.Selector // nil when namespace is nil (own namespace only)
	ownNamespace   string
}

// New compiles a Selector. object nil selects nothing, {} everything;
// namespace nil means ownNamespace only, {} every namespace. An invalid
// selector (unknown operator, bad label value) is an error naming the field.
func New(field string, object *metav1.LabelSelector, nsField string, namespace *metav1.LabelSelector, ownNamespace string) (*Selector, error) {
	s := &Selector{field: field, nsField: nsField, object: object, namespace: namespace, ownNamespace: ownNamespace}
	var err error
	if object != nil {
		if s.objectSel, err = metav1.LabelSelectorAsSelector(object); err != nil {
			return nil, fmt.Errorf("invalid %s: %w", field, err)
		}
	}
	if namespace != nil {
		if s.namespaceSel, err = metav1.LabelSelectorAsSelector(namespace); err != nil {
			return nil, fmt.Errorf("invalid %s: %w", nsField, err)
		}
	}
	return s, nil
}

// ServiceMonitors is the Prometheus's ServiceMonitor selector.
func ServiceMonitors(p *monitoringv1.Prometheus) (*Selector, error) {
	return New("serviceMonitorSelector", p.Spec.ServiceMonitorSelector,
		"serviceMonitorNamespaceSelector", p.Spec.ServiceMonitorNamespaceSelector, p.Namespace)
}

// PodMonitors is the Prometheus's PodMonitor selector.
func PodMonitors(p *monitoringv1.Prometheus) (*Selector, error) {
	return New("podMonitorSelector", p.Spec.PodMonitorSelector, "podMonitorNamespaceSelector", p.Spec.PodMonitorNamespaceSelector, p.Namespace)
}

// Probes is the Prometheus's Probe selector.
func Probes(p *monitoringv1.Prometheus) (*Selector, error) {
	return New("probeSelector", p.Spec.ProbeSelector, "probeNamespaceSelector", p.Spec.ProbeNamespaceSelector, p.Namespace)
}

// ScrapeConfigs is the Prometheus's ScrapeConfig selector.
func ScrapeConfigs(p *monitoringv1.Prometheus) (*Selector, error) {
	return New("scrapeConfigSelector", p.Spec.ScrapeConfigSelector, "scrapeConfigNamespaceSelector", p.Spec.ScrapeConfigNamespaceSelector, p.Namespace)
}

// Rules is the Prometheus's PrometheusRule selector.
func Rules(p *monitoringv1.Prometheus) (*Selector, error) {
	return New("ruleSelector", p.Spec.RuleSelector, "ruleNamespaceSelector", p.Spec.RuleNamespaceSelector, p.Namespace)
}

// ThanosRulerRules is the ThanosRuler's PrometheusRule selector: the same fields, the same
// semantics as a Prometheus's.
func ThanosRulerRules(tr *monitoringv1.ThanosRuler) (*Selector, error) {
	return New("ruleSelector", tr.Spec.RuleSelector, "ruleNamespaceSelector", tr.Spec.RuleNamespaceSelector, tr.Namespace)
}

// AlertmanagerConfigs is the Alertmanager's AlertmanagerConfig selector.
func AlertmanagerConfigs(am *monitoringv1.Alertmanager) (*Selector, error) {
	return New("alertmanagerConfigSelector", am.Spec.AlertmanagerConfigSelector,
		"alertmanagerConfigNamespaceSelector", am.Spec.AlertmanagerConfigNamespaceSelector, am.Namespace)
}

// SelectsNothing reports whether no object can match (nil object selector).
func (s *Selector) SelectsNothing() bool { return s.objectSel == nil }

// AllNamespaces reports whether every namespace is selected ({}).
func (s *Selector) AllNamespaces() bool { return s.namespaceSel != nil && s.namespaceSel.Empty() }

// OwnNamespaceOnly reports whether only the Prometheus's namespace is selected.
func (s *Selector) OwnNamespaceOnly() bool { return s.namespaceSel == nil }

// NamespaceSelected reports whether a namespace with these labels is selected.
func (s *Selector) NamespaceSelected(name string, nsLabels map[string]string) bool {
	if s.namespaceSel == nil {
		return name == s.ownNamespace
	}
	return s.namespaceSel.Matches(labels.Set(nsLabels))
}

// LabelsSelected reports whether an object with these labels matches the
// object selector (ignoring its namespace).
func (s *Selector) LabelsSelected(objLabels map[string]string) bool {
	return s.objectSel != nil && s.objectSel.Matches(labels.Set(objLabels))
}

// Match decides one object. nsLabels are the labels of the object's namespace.
func (s *Selector) Match(namespace string, objLabels, nsLabels map[string]string) Verdict {
	if s.objectSel == nil {
		return Verdict{Reason: ReasonNoSelector, Message: fmt.Sprintf("%s is not set, which selects nothing", s.field)}
	}
	if !s.NamespaceSelected(namespace, nsLabels) {
		return Verdict{Reason: ReasonNamespaceNotSelected, Message: s.explainNamespace(namespace, nsLabels)}
	}
	if !s.objectSel.Matches(labels.Set(objLabels)) {
		return Verdict{Reason: ReasonLabelsMismatch, Message: s.field + ": " + explain(s.object, objLabels)}
	}
	return Verdict{Selected: true, Reason: ReasonSelected}
}

func (s *Selector) explainNamespace(namespace string, nsLabels map[string]string) string {
	if s.namespaceSel == nil {
		return fmt.Sprintf("namespace %q is not selected: %s is not set, so only the Prometheus's own namespace %q is", namespace, s.nsField, s.ownNamespace)
	}
	return fmt.Sprintf("namespace %q is not selected by %s: %s", namespace, s.nsField, explain(s.namespace, nsLabels))
}

// explain names the first requirement of sel that set does not meet.
func explain(sel *metav1.LabelSelector, set map[string]string) string {
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := sel.MatchLabels[k]
		got, ok := set[k]
		switch {
		case !ok:
			return fmt.Sprintf("label %s=%s is required but the label is missing", k, want)
		case got != want:
			return fmt.Sprintf("label %s=%s is required but the value is %q", k, want, got)
		}
	}
	for _, e := range sel.MatchExpressions {
		got, ok := set[e.Key]
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			if !ok || !contains(e.Values, got) {
				return fmt.Sprintf("label %s must be one of [%s] but is %s", e.Key, strings.Join(e.Values, ", "), describe(got, ok))
			}
		case metav1.LabelSelectorOpNotIn:
			if ok && contains(e.Values, got) {
				return fmt.Sprintf("label %s must not be one of [%s] but is %q", e.Key, strings.Join(e.Values, ", "), got)
			}
		case metav1.LabelSelectorOpExists:
			if !ok {
				return fmt.Sprintf("label %s must exist but is missing", e.Key)
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if ok {
				return fmt.Sprintf("label %s must not exist but is %q", e.Key, got)
			}
		}
	}
	return "labels do not match"
}

func describe(v string, ok bool) string {
	if !ok {
		return "missing"
	}
	return fmt.Sprintf("%q", v)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
