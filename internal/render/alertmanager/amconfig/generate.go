// Package amconfig generates an Alertmanager's alertmanager.yaml: the base config (the
// user's Secret, or the global AlertmanagerConfig spec.alertmanagerConfiguration names,
// or a minimal config) with every selected AlertmanagerConfig merged in as a sub-route of
// the top route. Each AlertmanagerConfig is accepted or rejected on its own; the result is
// always loaded by Alertmanager's own config package before it is returned.
//
// The package is pure: it reads only its Input.
package amconfig

import (
	"bytes"
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	amcfg "github.com/prometheus/alertmanager/config"
	"go.yaml.in/yaml/v2"
	yaml3 "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lookout-operator/lookout/internal/render/alertmanager"
	"github.com/lookout-operator/lookout/internal/render/workload"
)

// Input is everything Generate reads.
type Input struct {
	Alertmanager *monitoringv1.Alertmanager
	// Base is the data of the user's config Secret (spec.configSecret, else
	// alertmanager-<name>); nil when it does not exist.
	Base map[string][]byte
	// Global is the AlertmanagerConfig spec.alertmanagerConfiguration names; when set it
	// is the base config and Base's alertmanager.yaml is not used.
	Global *monitoringv1alpha1.AlertmanagerConfig
	// Configs are the selected AlertmanagerConfigs, in any order.
	Configs []*monitoringv1alpha1.AlertmanagerConfig
	// Secrets and ConfigMaps referenced by the configs, keyed "namespace/name"; absent
	// when they do not exist.
	Secrets    map[string]*corev1.Secret
	ConfigMaps map[string]*corev1.ConfigMap
}

// Verdict says whether one AlertmanagerConfig made it into the config, and why not.
type Verdict struct {
	Kind       string // always "AlertmanagerConfig"
	Namespace  string
	Name       string
	Generation int64
	Accepted   bool
	Reason     string
	Message    string
	UID        types.UID
}

// Result is the generated config.
type Result struct {
	// Config is alertmanager.yaml, loaded by Alertmanager's parser.
	Config []byte
	// Files are extra files for the generated Secret (the templates of
	// spec.alertmanagerConfiguration), keyed by file name.
	Files map[string][]byte
	// Verdicts, one per AlertmanagerConfig of Input.Configs but the global one (which
	// is the base), sorted by namespace/name.
	Verdicts []Verdict
}

// BaseConfigError means the base config cannot be used: the user's alertmanager.yaml does
// not parse, or the global AlertmanagerConfig is invalid. Nothing is generated; the
// Alertmanager keeps its last good config.
type BaseConfigError struct {
	Reason, Message string
}

func (e *BaseConfigError) Error() string { return e.Message }

const kindAlertmanagerConfig = "AlertmanagerConfig"

// Matcher strategies of spec.alertmanagerConfigMatcherStrategy.type.
const (
	strategyOnNamespace              = "OnNamespace"
	strategyOnNamespaceExceptForAMNS = "OnNamespaceExceptForAlertmanagerNamespace"
	strategyNone                     = "None"
)

// nullReceiver is the receiver of the minimal config written when there is no base.
const nullReceiver = "null"

// piece is what one AlertmanagerConfig adds to the config.
type piece struct {
	route         *route // nil when the AlertmanagerConfig has no route
	receivers     []*receiver
	timeIntervals []*timeInterval
	inhibitRules  []*inhibitRule
}

// Generate merges in into one alertmanager.yaml.
func Generate(in Input) (*Result, error) {
	am := in.Alertmanager
	version, err := alertmanager.ParsedVersion(am)
	if err != nil {
		return nil, &BaseConfigError{Reason: "InvalidSpec", Message: "spec.version: " + err.Error()}
	}
	strategy := strategyOnNamespace
	if t := string(am.Spec.AlertmanagerConfigMatcherStrategy.Type); t != "" {
		strategy = t
	}
	switch strategy {
	case strategyOnNamespace, strategyOnNamespaceExceptForAMNS, strategyNone:
	default:
		return nil, &BaseConfigError{Reason: "InvalidSpec", Message: fmt.Sprintf(
			"spec.alertmanagerConfigMatcherStrategy.type: %q is not one of %s, %s, %s", strategy, strategyOnNamespace, strategyOnNamespaceExceptForAMNS, strategyNone)}
	}
	newRefs := func(ns string) *refs {
		return &refs{ns: ns, version: version, secrets: in.Secrets, configMaps: in.ConfigMaps}
	}

	res := &Result{}
	base, files, err := baseDocument(in, newRefs)
	if err != nil {
		return nil, err
	}
	res.Files = files

	// The global AlertmanagerConfig is the base already: a selector that matches it
	// too does not merge it a second time (as with the existing operator).
	configs := slices.DeleteFunc(slices.Clone(in.Configs), func(c *monitoringv1alpha1.AlertmanagerConfig) bool {
		return isGlobal(am, c)
	})
	slices.SortFunc(configs, func(a, b *monitoringv1alpha1.AlertmanagerConfig) int {
		// By "namespace/name" as one string, the existing operator's order ("team/x"
		// after "team-a/x").
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	verdicts := make([]Verdict, len(configs))
	pieces := make([]*piece, len(configs))
	for i, c := range configs {
		verdicts[i] = Verdict{Kind: kindAlertmanagerConfig, Namespace: c.Namespace, Name: c.Name, Generation: c.Generation, Accepted: true, UID: c.UID}
		scoped := strategy == strategyOnNamespace || (strategy == strategyOnNamespaceExceptForAMNS && c.Namespace != am.Namespace)
		r := newRefs(c.Namespace)
		p, err := convertConfig(r, c, scoped)
		if err != nil {
			verdicts[i].reject(err)
			continue
		}
		if !version.AtLeast(sinceMatchers.Major, sinceMatchers.Minor) {
			if err := toV1Matchers(p); err != nil {
				verdicts[i].reject(err)
				continue
			}
		}
		if len(r.dropped) > 0 {
			verdicts[i].Reason, verdicts[i].Message = ReasonFieldsDropped, droppedMessage(version, r.dropped)
		}
		pieces[i] = p
	}

	// Every accepted piece must load with the base on its own; then all of them together.
	// The common case is one load: everything is fine.
	out, loadErr := assemble(base, pieces)
	if loadErr != nil {
		for i, p := range pieces {
			if p == nil {
				continue
			}
			if _, err := assemble(base, []*piece{p}); err != nil {
				verdicts[i].reject(reject(ReasonRefusedByAlertmanager, "Alertmanager refuses the config this AlertmanagerConfig becomes: %v", err))
				pieces[i] = nil
			}
		}
		out, loadErr = assemble(base, pieces)
	}
	if loadErr != nil {
		// The pieces load alone but not together: add them one at a time and reject
		// each one that breaks what is there.
		var kept []*piece
		for i, p := range pieces {
			if p == nil {
				continue
			}
			if _, err := assemble(base, append(slices.Clone(kept), p)); err != nil {
				verdicts[i].reject(reject(ReasonRefusedByAlertmanager, "Alertmanager refuses this AlertmanagerConfig together with the ones before it: %v", err))
				continue
			}
			kept = append(kept, p)
		}
		out, loadErr = assemble(base, kept)
	}
	if loadErr != nil {
		return nil, &BaseConfigError{Reason: "InvalidConfiguration", Message: fmt.Sprintf("the generated config does not load: %v", loadErr)}
	}
	res.Config = out
	res.Verdicts = verdicts
	return res, nil
}

func droppedMessage(v workload.Version, dropped []string) string {
	return fmt.Sprintf("Alertmanager %s does not know these fields; they are left out of its config: %s", v.Tag(), strings.Join(dropped, ", "))
}

// isGlobal says whether c is the AlertmanagerConfig am's spec.alertmanagerConfiguration
// names.
func isGlobal(am *monitoringv1.Alertmanager, c *monitoringv1alpha1.AlertmanagerConfig) bool {
	ac := am.Spec.AlertmanagerConfiguration
	return ac != nil && ac.Name != "" && c.Namespace == am.Namespace && c.Name == ac.Name
}

func (v *Verdict) reject(err error) {
	v.Accepted = false
	if r, ok := err.(*rejection); ok {
		v.Reason, v.Message = r.Reason, r.Message
		return
	}
	v.Reason, v.Message = ReasonInvalidReceiver, err.Error()
}

// baseDocument is the config every AlertmanagerConfig is merged into, as a YAML node
// tree, plus the files it needs next to it.
func baseDocument(in Input, newRefs func(ns string) *refs) (*yaml3.Node, map[string][]byte, error) {
	am := in.Alertmanager
	if ac := am.Spec.AlertmanagerConfiguration; ac != nil && ac.Name != "" {
		if in.Global == nil {
			return nil, nil, &BaseConfigError{Reason: "AlertmanagerConfigurationNotFound",
				Message: fmt.Sprintf("spec.alertmanagerConfiguration.name: AlertmanagerConfig %s/%s does not exist", am.Namespace, ac.Name)}
		}
		return globalDocument(in, newRefs)
	}
	secret := alertmanager.UserConfigSecretName(am)
	raw := bytes.TrimSpace(in.Base[alertmanager.UserConfigKey])
	if len(raw) == 0 {
		// No Secret, or no config in it: a minimal config so that the pods start.
		doc, err := toNode(yaml.MapSlice{
			{Key: "route", Value: yaml.MapSlice{{Key: "receiver", Value: nullReceiver}}},
			{Key: "receivers", Value: []any{yaml.MapSlice{{Key: "name", Value: nullReceiver}}}},
		})
		return doc, nil, err
	}
	if _, err := amcfg.Load(string(raw)); err != nil {
		return nil, nil, &BaseConfigError{Reason: "InvalidConfiguration",
			Message: fmt.Sprintf("%s of Secret %s/%s: Alertmanager refuses it: %v", alertmanager.UserConfigKey, am.Namespace, secret, err)}
	}
	// The user's text is kept as a node tree, each scalar as written: decoded into
	// plain values, yaml.v2 would turn YAML 1.1's yes/on/0755 into true/493 and write
	// them back so, changing what a string field of Alertmanager's config reads.
	doc, err := parseNode(raw)
	if err != nil {
		return nil, nil, &BaseConfigError{Reason: "InvalidConfiguration",
			Message: fmt.Sprintf("%s of Secret %s/%s: %v", alertmanager.UserConfigKey, am.Namespace, secret, err)}
	}
	return doc, nil, nil
}

// globalDocument builds the base config from the AlertmanagerConfig that
// spec.alertmanagerConfiguration names: its route is the top route (no namespace
// matcher), its receivers, time intervals and inhibit rules are the config's own, and
// spec.alertmanagerConfiguration.global and .templates fill the global section and the
// template files.
func globalDocument(in Input, newRefs func(ns string) *refs) (*yaml3.Node, map[string][]byte, error) {
	am, g := in.Alertmanager, in.Global
	fail := func(err error) (*yaml3.Node, map[string][]byte, error) {
		reason := "InvalidAlertmanagerConfiguration"
		if r, ok := err.(*rejection); ok {
			reason = r.Reason
		}
		return nil, nil, &BaseConfigError{Reason: reason,
			Message: fmt.Sprintf("spec.alertmanagerConfiguration: AlertmanagerConfig %s/%s: %v", g.Namespace, g.Name, err)}
	}
	if g.Spec.Route == nil || g.Spec.Route.Receiver == "" {
		return fail(reject(ReasonInvalidRoute, "spec.route.receiver: the global AlertmanagerConfig's route is the top route and must name a receiver"))
	}
	if len(g.Spec.Route.Matchers) > 0 {
		return fail(reject(ReasonInvalidRoute, "spec.route.matchers: the top route matches every alert and cannot have matchers"))
	}
	gr := newRefs(g.Namespace)
	p, err := convertConfig(gr, g, false)
	if err != nil {
		return fail(err)
	}
	p.route.Continue = false // set for every merged AlertmanagerConfig, not the top route
	if g.Spec.Route.Continue {
		return fail(reject(ReasonInvalidRoute, "spec.route.continue: the global AlertmanagerConfig's route is the top route, which cannot continue"))
	}
	var doc yaml.MapSlice
	ac := am.Spec.AlertmanagerConfiguration
	r := newRefs(am.Namespace)
	if ac.Global != nil {
		gc, err := convertGlobal(r, "spec.alertmanagerConfiguration.global", ac.Global)
		if err != nil {
			return fail(err)
		}
		doc = append(doc, yaml.MapItem{Key: "global", Value: gc})
	}
	var files map[string][]byte
	var templates []string
	for i, t := range ac.Templates {
		field := fmt.Sprintf("spec.alertmanagerConfiguration.templates[%d]", i)
		var name string
		switch {
		case t.Secret != nil:
			name = t.Secret.Key
		case t.ConfigMap != nil:
			name = t.ConfigMap.Key
		default:
			return fail(reject(ReasonInvalidReceiver, "%s: names neither a Secret nor a ConfigMap", field))
		}
		v, err := r.secretOrConfigMap(field, &ac.Templates[i])
		if err != nil {
			return fail(err)
		}
		if name == alertmanager.ConfigSecretKey || name == alertmanager.UserConfigKey {
			return fail(reject(ReasonInvalidReceiver, "%s: the template file name %q is taken", field, name))
		}
		if files[name] != nil {
			continue // the first template of a file name wins, as with the existing operator
		}
		if files == nil {
			files = map[string][]byte{}
		}
		files[name] = []byte(v)
		templates = append(templates, path.Join(alertmanager.ConfigDir, name))
	}
	// The base config has no verdict to name a dropped field in: it is refused instead.
	if dropped := append(gr.dropped, r.dropped...); len(dropped) > 0 {
		return fail(reject(ReasonUnsupportedVersion, "%s", droppedMessage(gr.version, dropped)))
	}
	doc = append(doc, yaml.MapItem{Key: "route", Value: p.route})
	doc = append(doc, yaml.MapItem{Key: "receivers", Value: p.receivers})
	if len(p.inhibitRules) > 0 {
		doc = append(doc, yaml.MapItem{Key: "inhibit_rules", Value: p.inhibitRules})
	}
	if len(p.timeIntervals) > 0 {
		doc = append(doc, yaml.MapItem{Key: "mute_time_intervals", Value: p.timeIntervals})
	}
	if len(templates) > 0 {
		doc = append(doc, yaml.MapItem{Key: "templates", Value: templates})
	}
	raw, err := yaml.Marshal(doc)
	if err != nil {
		return nil, nil, err
	}
	if _, err := amcfg.Load(string(raw)); err != nil {
		return fail(reject(ReasonRefusedByAlertmanager, "Alertmanager refuses the config it becomes: %v", err))
	}
	node, err := parseNode(raw)
	return node, files, err
}

// assemble merges pieces (nil ones skipped) into a copy of base and loads the result with
// Alertmanager's parser: the sub-routes go first under the top route, in order, before
// the base config's own routes; receivers, time intervals and inhibit rules are appended.
// What base holds is written as it was read.
func assemble(base *yaml3.Node, pieces []*piece) ([]byte, error) {
	var routes, receivers, intervals, inhibits []any
	for _, p := range pieces {
		if p == nil {
			continue
		}
		if p.route != nil {
			routes = append(routes, p.route)
		}
		for _, r := range p.receivers {
			receivers = append(receivers, r)
		}
		for _, t := range p.timeIntervals {
			intervals = append(intervals, t)
		}
		for _, r := range p.inhibitRules {
			inhibits = append(inhibits, r)
		}
	}
	doc := shallowCopy(base)
	if len(routes) > 0 {
		top := shallowCopy(mapValue(doc, "route"))
		if top.Kind != yaml3.MappingNode {
			return nil, fmt.Errorf("the top route is not a mapping")
		}
		if err := extendList(top, "routes", routes, true); err != nil {
			return nil, err
		}
		setMapValue(doc, "route", top)
	}
	for _, l := range []struct {
		key   string
		items []any
	}{{"receivers", receivers}, {"mute_time_intervals", intervals}, {"inhibit_rules", inhibits}} {
		if err := extendList(doc, l.key, l.items, false); err != nil {
			return nil, err
		}
	}
	out, err := encodeNode(doc)
	if err != nil {
		return nil, err
	}
	if _, err := amcfg.Load(string(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// convertConfig converts one AlertmanagerConfig. scoped adds the namespace matcher to its
// route and inhibit rules.
func convertConfig(r *refs, c *monitoringv1alpha1.AlertmanagerConfig, scoped bool) (*piece, error) {
	prefix := c.Namespace + "/" + c.Name + "/"
	p := &piece{}

	// Without a route, nothing can reach the receivers or use the time intervals: only
	// the inhibit rules are merged, as the existing operator does.
	if c.Spec.Route == nil {
		c = c.DeepCopy()
		c.Spec.Receivers, c.Spec.MuteTimeIntervals = nil, nil
	}
	receivers := map[string]bool{}
	for i := range c.Spec.Receivers {
		rc := &c.Spec.Receivers[i]
		field := fmt.Sprintf("spec.receivers[%d]", i)
		if rc.Name == "" {
			return nil, reject(ReasonInvalidReceiver, "%s.name: must be set", field)
		}
		if receivers[rc.Name] {
			return nil, reject(ReasonDuplicateReceiver, "%s.name: receiver %q is defined twice", field, rc.Name)
		}
		receivers[rc.Name] = true
		out, err := convertReceiver(r, field, rc)
		if r.collect {
			// Values are placeholders: go on, so that every reference is recorded.
			continue
		}
		if err != nil {
			return nil, err
		}
		out.Name = prefix + rc.Name
		p.receivers = append(p.receivers, out)
	}

	intervals := map[string]bool{}
	for i, mti := range c.Spec.MuteTimeIntervals {
		field := fmt.Sprintf("spec.muteTimeIntervals[%d]", i)
		if mti.Name == "" {
			return nil, reject(ReasonInvalidTimeInterval, "%s.name: must be set", field)
		}
		if intervals[mti.Name] {
			return nil, reject(ReasonInvalidTimeInterval, "%s.name: time interval %q is defined twice", field, mti.Name)
		}
		intervals[mti.Name] = true
		ti, err := convertTimeInterval(field, prefix+mti.Name, mti)
		if err != nil {
			return nil, err
		}
		p.timeIntervals = append(p.timeIntervals, ti)
	}

	if c.Spec.Route != nil {
		if c.Spec.Route.Receiver == "" {
			return nil, reject(ReasonInvalidRoute, "spec.route.receiver: the top route of an AlertmanagerConfig must name one of its receivers")
		}
		rt, err := convertRoute("spec.route", c.Spec.Route, prefix, receivers, intervals, 0)
		if err != nil {
			return nil, err
		}
		if scoped {
			rt.Matchers = append(rt.Matchers, namespaceMatcher(c.Namespace))
		}
		rt.Continue = true
		p.route = rt
	}

	for i, ir := range c.Spec.InhibitRules {
		field := fmt.Sprintf("spec.inhibitRules[%d]", i)
		out := &inhibitRule{Equal: ir.Equal}
		var err error
		if out.SourceMatchers, err = convertMatchers(field+".sourceMatch", ir.SourceMatch); err != nil {
			return nil, err
		}
		if out.TargetMatchers, err = convertMatchers(field+".targetMatch", ir.TargetMatch); err != nil {
			return nil, err
		}
		if scoped {
			// Not twice when the rule already matches on the namespace.
			if m := namespaceMatcher(c.Namespace); !slices.Contains(out.SourceMatchers, m) {
				out.SourceMatchers = append(out.SourceMatchers, m)
			}
			if m := namespaceMatcher(c.Namespace); !slices.Contains(out.TargetMatchers, m) {
				out.TargetMatchers = append(out.TargetMatchers, m)
			}
		}
		p.inhibitRules = append(p.inhibitRules, out)
	}
	return p, nil
}

// SecretKeys returns the "namespace/name" of every Secret Generate may read for in,
// sorted and unique. The caller fetches them into Input.Secrets.
func SecretKeys(in Input) []string {
	s, _ := collectKeys(in)
	return s
}

// ConfigMapKeys returns the "namespace/name" of every ConfigMap Generate may read for in,
// sorted and unique. The caller fetches them into Input.ConfigMaps.
func ConfigMapKeys(in Input) []string {
	_, c := collectKeys(in)
	return c
}

// collectKeys runs the conversions in collect mode, so that the references found are
// exactly those Generate reads.
func collectKeys(in Input) (secrets, configMaps []string) {
	sk, ck := map[string]struct{}{}, map[string]struct{}{}
	newRefs := func(ns string) *refs {
		return &refs{ns: ns, collect: true, secretKeys: sk, configMapKeys: ck, version: workload.Version{Major: 1 << 20}}
	}
	for _, c := range in.Configs {
		_, _ = convertConfig(newRefs(c.Namespace), c, false)
	}
	if am := in.Alertmanager; am != nil {
		if ac := am.Spec.AlertmanagerConfiguration; ac != nil {
			r := newRefs(am.Namespace)
			if ac.Global != nil {
				_, _ = convertGlobal(r, "", ac.Global)
			}
			for i := range ac.Templates {
				_, _ = r.secretOrConfigMap("", &ac.Templates[i])
			}
		}
	}
	if g := in.Global; g != nil {
		_, _ = convertConfig(newRefs(g.Namespace), g, false)
	}
	secrets, configMaps = make([]string, 0, len(sk)), make([]string, 0, len(ck))
	for k := range sk {
		secrets = append(secrets, k)
	}
	for k := range ck {
		configMaps = append(configMaps, k)
	}
	slices.Sort(secrets)
	slices.Sort(configMaps)
	return secrets, configMaps
}

// nameList returns the names in l, for messages.
func nameList(l map[string]bool) string {
	if len(l) == 0 {
		return "none are defined"
	}
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, fmt.Sprintf("%q", n))
	}
	slices.Sort(names)
	return "defined: " + strings.Join(names, ", ")
}
