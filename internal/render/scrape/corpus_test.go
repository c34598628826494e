package scrape

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A corpus of random valid monitors of the four kinds (with the Secrets they read), as one
// would write them against the upstream CRDs, rendered for a random Prometheus and loaded by
// Prometheus's own config loader, then checked against properties of the existing operator's
// output: the relabel order, the selectors per role, sharding rules exactly where it writes
// them, the enforced namespace label, credentials from the Secrets.

type corpus struct {
	rng       *rand.Rand
	in        Input
	shards    int32
	passwords map[string]string // job name prefix ("<kind>/<ns>/<name>") → the password its Secret holds
}

func (c *corpus) pick(options ...string) string { return options[c.rng.IntN(len(options))] }
func (c *corpus) chance(n int) bool             { return c.rng.IntN(n) == 0 }

func (c *corpus) selector() metav1.LabelSelector {
	sel := metav1.LabelSelector{MatchLabels: map[string]string{"app": c.pick("web", "api", "db")}}
	if c.chance(2) {
		sel.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}
	}
	return sel
}

func (c *corpus) relabelings() []monitoringv1.RelabelConfig {
	if c.chance(2) {
		return nil
	}
	return []monitoringv1.RelabelConfig{relabelCfg("replace", []string{"__meta_kubernetes_pod_node_name"}, "node_name", "(.+)")}
}

// secret makes a Secret in ns for the monitor key and returns a basic auth reading it.
func (c *corpus) secret(ns, key string) *monitoringv1.BasicAuth {
	name := fmt.Sprintf("creds-%d", len(c.in.Secrets))
	pass := fmt.Sprintf("pw-%d", c.rng.Uint32())
	c.in.Secrets[ns+"/"+name] = newSecret(ns, name, map[string]string{"user": "u", "pass": pass})
	c.passwords[key] = pass
	return &monitoringv1.BasicAuth{Username: secretRef(name, "user"), Password: secretRef(name, "pass")}
}

func newCorpus(seed uint64, perKind int) *corpus {
	c := &corpus{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b9)), passwords: map[string]string{}}
	c.shards = []int32{1, 1, 2, 3}[c.rng.IntN(4)]
	prom := newPrometheus(withShards(c.shards), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
		if c.chance(3) {
			s.EnforcedNamespaceLabel = "tenant"
		}
		if c.chance(3) {
			s.ServiceDiscoveryRole = ptr(monitoringv1.EndpointSliceRole)
		}
	}))
	c.in = newInput(prom, nil)
	for i := range perKind {
		ns := c.pick("default", "team-a", "team-b")
		name := fmt.Sprintf("m%d", i)
		mech := c.pick(string(monitoringv1.SelectorMechanismRelabel), string(monitoringv1.SelectorMechanismRole))

		sm := newServiceMonitor(ns, name, withSelector(c.selector()), withSMSpec(func(s *monitoringv1.ServiceMonitorSpec) {
			s.SelectorMechanism = ptr(monitoringv1.SelectorMechanism(mech))
			s.Endpoints = nil
			for range 1 + c.rng.IntN(2) {
				ep := endpoint(port(c.pick("web", "metrics", "http|metrics")), relabelings(c.relabelings()...))
				if c.chance(3) {
					ep.FilterRunning = ptr(false)
				}
				if c.chance(2) {
					ep.BasicAuth = c.secret(ns, "serviceMonitor/"+ns+"/"+name)
				}
				s.Endpoints = append(s.Endpoints, ep)
			}
		}))
		c.in.ServiceMonitors = append(c.in.ServiceMonitors, sm)

		pm := newPodMonitor(ns, name, withPMSpec(func(s *monitoringv1.PodMonitorSpec) {
			s.Selector = c.selector()
			s.SelectorMechanism = ptr(monitoringv1.SelectorMechanism(mech))
			s.PodMetricsEndpoints = nil
			for range 1 + c.rng.IntN(2) {
				ep := podEndpoint(podPort(c.pick("metrics", "http-metrics")), podRelabelings(c.relabelings()...))
				if c.chance(3) {
					ep.FilterRunning = ptr(false)
				}
				s.PodMetricsEndpoints = append(s.PodMetricsEndpoints, ep)
			}
		}))
		c.in.PodMonitors = append(c.in.PodMonitors, pm)

		probe := newProbe(ns, name)
		if c.chance(2) {
			probe = newProbe(ns, name, withIngressTargets(monitoringv1.ProbeTargetIngress{Selector: c.selector(),
				RelabelConfigs: []monitoringv1.RelabelConfig{relabelCfg("replace", []string{"__tmp_ingress_address"}, "__param_target", "(.+)")}}))
		}
		c.in.Probes = append(c.in.Probes, probe)

		sc := newScrapeConfig(ns, name, withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.RelabelConfigs = c.relabelings()
			if c.chance(4) {
				s.RelabelConfigs = append(s.RelabelConfigs, monitoringv1.RelabelConfig{Action: "hashmod", SourceLabels: []monitoringv1.LabelName{"__address__"}, TargetLabel: "__tmp_hash", Modulus: 4})
			}
			if c.chance(2) {
				s.BasicAuth = c.secret(ns, "scrapeConfig/"+ns+"/"+name)
			}
		}))
		c.in.ScrapeConfigs = append(c.in.ScrapeConfigs, sc)
	}
	return c
}

func indexOf(rules []*relabelRule, match func(*relabelRule) bool) int {
	return slices.IndexFunc(rules, match)
}

func copies(source, target string) func(*relabelRule) bool {
	return func(r *relabelRule) bool {
		return slices.Equal(r.SourceLabels, []string{source}) && r.TargetLabel == target
	}
}

func isPhaseDrop(r *relabelRule) bool {
	return r.Action == "drop" && slices.Equal(r.SourceLabels, []string{"__meta_kubernetes_pod_phase"})
}

func TestGeneratedMonitorsHaveUpstreamShape(t *testing.T) {
	for seed := range uint64(8) {
		c := newCorpus(seed, 30)
		t.Run(fmt.Sprintf("seed %d, %d shards", seed, c.shards), func(t *testing.T) {
			res, err := Generate(c.in)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			for _, v := range res.Verdicts {
				if !v.Accepted {
					t.Errorf("%s %s/%s rejected: %s: %s", v.Kind, v.Namespace, v.Name, v.Reason, v.Message)
				}
			}
			loaded := mustLoad(t, res.Config())
			doc := parse(t, res.Config())
			if len(loaded.ScrapeConfigs) != len(doc.ScrapeConfigs) {
				t.Fatalf("the loader read %d jobs, the config has %d", len(loaded.ScrapeConfigs), len(doc.ScrapeConfigs))
			}
			for i, j := range doc.ScrapeConfigs {
				password := ""
				if ba := loaded.ScrapeConfigs[i].HTTPClientConfig.BasicAuth; ba != nil {
					password = string(ba.Password)
				}
				checkJobShape(t, c, j, password)
			}
		})
	}
}

// checkJobShape checks one job; password is the basic auth password the loader read for it.
func checkJobShape(t *testing.T, c *corpus, j *scrapeJob, password string) {
	t.Helper()
	kind, rest, _ := strings.Cut(j.JobName, "/")
	rules := j.RelabelConfigs
	fail := func(format string, args ...any) { t.Errorf("%s: "+format, append([]any{j.JobName}, args...)...) }
	if len(rules) == 0 || !copies("job", "__tmp_prometheus_job_name")(rules[0]) {
		fail("the first relabeling is not job → __tmp_prometheus_job_name")
		return
	}
	hashmod := indexOf(rules, func(r *relabelRule) bool {
		return r.Action == "hashmod" && r.TargetLabel == "__tmp_hash" && slices.Contains(r.SourceLabels, "__tmp_hash")
	})
	ownHashmod := indexOf(rules, func(r *relabelRule) bool { return r.Action == "hashmod" && r.Modulus == 4 })
	switch {
	case kind == "scrapeConfig" && (c.shards == 1 || ownHashmod >= 0):
		if hashmod >= 0 {
			fail("sharding rules with %d shards and own hashmod %v", c.shards, ownHashmod >= 0)
		}
	default:
		if hashmod < 0 || hashmod != len(rules)-2 || rules[hashmod].Modulus != uint64(c.shards) {
			fail("no sharding rules by %d shards at the end: %d of %d", c.shards, hashmod, len(rules))
		}
	}
	if ns := c.in.Prometheus.Spec.EnforcedNamespaceLabel; ns != "" {
		at := indexOf(rules, func(r *relabelRule) bool { return r.TargetLabel == ns })
		end := len(rules)
		if hashmod >= 0 {
			end = hashmod - 1
		}
		if at != end-1 {
			fail("the enforced namespace label is at %d, want %d (last before sharding)", at, end-1)
		}
	}
	if want, ok := c.passwords[kind+"/"+strings.Join(strings.Split(rest, "/")[:2], "/")]; ok && kind == "scrapeConfig" {
		if password != want {
			fail("the loaded basic_auth password is %q, not the Secret's %q", password, want)
		}
	}

	sd := j.KubernetesSDConfigs
	switch kind {
	case "serviceMonitor":
		role := sd[0].Role
		hasKeep := indexOf(rules, func(r *relabelRule) bool {
			return len(r.SourceLabels) > 0 && strings.HasPrefix(r.SourceLabels[0], "__meta_kubernetes_service_label")
		})
		if len(sd[0].Selectors) > 0 {
			if len(sd[0].Selectors) != 2 || sd[0].Selectors[0].Role != role || sd[0].Selectors[1].Role != "service" || sd[0].Selectors[0].Label != sd[0].Selectors[1].Label {
				fail("role selectors %+v, want the %s one and the same for service", sd[0].Selectors, role)
			}
			if hasKeep >= 0 {
				fail("a RoleSelector monitor also filters by relabeling")
			}
		} else if hasKeep != 1 {
			fail("the selector's keep rules do not follow the job name: first at %d", hasKeep)
		}
		container := indexOf(rules, copies("__meta_kubernetes_pod_container_name", "container"))
		phase := indexOf(rules, isPhaseDrop)
		if phase >= 0 && phase != container+1 {
			fail("the pod-phase drop is at %d, want right after the container label at %d", phase, container)
		}
		job := indexOf(rules, copies("__meta_kubernetes_service_name", "job"))
		ep := indexOf(rules, func(r *relabelRule) bool { return r.TargetLabel == "endpoint" })
		if job < container || ep < job {
			fail("job label at %d, endpoint at %d, container at %d: not upstream's order", job, ep, container)
		}
	case "podMonitor":
		phase := indexOf(rules, isPhaseDrop)
		if len(sd[0].Selectors) > 0 && (len(sd[0].Selectors) != 1 || sd[0].Selectors[0].Role != "pod") {
			fail("role selectors %+v, want the pod one alone", sd[0].Selectors)
		}
		if phase >= 0 && phase != 1 {
			fail("the pod-phase drop is at %d, want 1: right after the job name", phase)
		}
	case "probe":
		if len(sd) > 0 && indexOf(rules, copies("__address__", "__tmp_ingress_address")) < 0 {
			fail("no __tmp_ingress_address for the Ingress targets")
		}
	}
}
