package scrape

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// variedMonitors returns monitors that exercise the map-valued fields (selectors, params,
// Secrets), several endpoints, and some that are rejected.
func variedMonitors() ([]*monitoringv1.ServiceMonitor, Input) {
	creds := newSecret("ns-1", "creds", map[string]string{"user": "u", "password": "p"})
	var sms []*monitoringv1.ServiceMonitor
	for i := range 40 {
		ns := fmt.Sprintf("ns-%d", i%7)
		opts := []smOpt{
			withSelector(metav1.LabelSelector{MatchLabels: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": fmt.Sprint(i)}}),
			withEndpoints(
				endpoint(withEP(func(ep *monitoringv1.Endpoint) {
					ep.Params = map[string][]string{"x": {"1"}, "y": {"2"}, "z": {"3"}, "w": {"4"}}
				})),
				endpoint(targetPortNumber(9000+i)),
			),
		}
		switch i % 5 {
		case 1:
			opts = append(opts, withNamespaceSelector(monitoringv1.NamespaceSelector{MatchNames: []string{"z", "y", "x"}}))
		case 2:
			opts = append(opts, withEndpoints(endpoint(relabelings(relabelCfg("keep", []string{"a"}, "", "(")))))
		case 3:
			if ns == "ns-1" {
				opts = append(opts, withEndpoints(endpoint(basicAuthFrom("creds", "user", "password"))))
			}
		}
		sms = append(sms, newServiceMonitor(ns, fmt.Sprintf("sm-%02d", i), opts...))
	}
	p := newPrometheus(withShards(2), withPromSpec(func(s *monitoringv1.PrometheusSpec) {
		s.ExternalLabels = map[string]string{"region": "eu", "cluster": "c1", "env": "prod", "team": "sre"}
	}))
	return sms, newInput(p, nil, creds)
}

// variedPodMonitorsAndProbes returns PodMonitors and Probes that exercise the map-valued
// fields (selectors, params, static labels, Secrets), several endpoints, duplicates, and some
// that are rejected. Secrets are in ns-1, as for variedMonitors.
func variedPodMonitorsAndProbes() ([]*monitoringv1.PodMonitor, []*monitoringv1.Probe) {
	var pms []*monitoringv1.PodMonitor
	var ps []*monitoringv1.Probe
	for i := range 30 {
		ns := fmt.Sprintf("ns-%d", i%7)
		pmOpts := []pmOpt{
			withPMSpec(func(s *monitoringv1.PodMonitorSpec) {
				s.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"a": "1", "b": "2", "c": fmt.Sprint(i)}}
				s.PodTargetLabels = []string{"z", "y"}
			}),
			withPodEndpoints(
				podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
					ep.Params = map[string][]string{"x": {"1"}, "y": {"2"}, "z": {"3"}}
				})),
				podEndpoint(podPortNumber(int32(9000+i))),
			),
		}
		probeOpts := []probeOpt{
			withStaticTargets([]string{"b.example.com", "a.example.com"}, map[string]string{"z": "1", "y": "2", "x": fmt.Sprint(i)}),
			withProbeSpec(func(s *monitoringv1.ProbeSpec) {
				s.Params = []monitoringv1.ProbeParam{{Name: "q", Values: []string{"1"}}, {Name: "p", Values: []string{"2"}}}
			}),
		}
		switch i % 5 {
		case 1:
			pmOpts = append(pmOpts, withPMSpec(func(s *monitoringv1.PodMonitorSpec) { s.NamespaceSelector.MatchNames = []string{"z", "y"} }))
			probeOpts = append(probeOpts, withIngressTargets(monitoringv1.ProbeTargetIngress{
				Selector:          metav1.LabelSelector{MatchLabels: map[string]string{"q": "1", "p": "2"}},
				NamespaceSelector: monitoringv1.NamespaceSelector{MatchNames: []string{"w", "v"}},
			}))
		case 2:
			pmOpts = append(pmOpts, withPodEndpoints(podEndpoint(podRelabelings(relabelCfg("keep", []string{"a"}, "", "(")))))
			probeOpts = append(probeOpts, withProbeSpec(func(s *monitoringv1.ProbeSpec) { s.ProberSpec.URL = "" }))
		case 3:
			if ns == "ns-1" {
				pmOpts = append(pmOpts, withPodEndpoints(podEndpoint(withPEP(func(ep *monitoringv1.PodMetricsEndpoint) {
					ep.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")}
				}))))
				probeOpts = append(probeOpts, withProbeSpec(func(s *monitoringv1.ProbeSpec) {
					s.BasicAuth = &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")}
				}))
			}
		case 4:
			// Same namespace/name as the ServiceMonitor of that index: each kind keeps its own.
			pms = append(pms, newPodMonitor(ns, fmt.Sprintf("sm-%02d", i)))
		}
		pms = append(pms, newPodMonitor(ns, fmt.Sprintf("pm-%02d", i), pmOpts...))
		ps = append(ps, newProbe(ns, fmt.Sprintf("probe-%02d", i), probeOpts...))
	}
	// The same name twice (an object deleted and recreated, so another UID): which copy is kept
	// must not depend on the order.
	recreated := newProbe("ns-0", "probe-00")
	recreated.UID = "recreated"
	ps = append(ps, recreated)
	return pms, ps
}

// variedScrapeConfigs returns ScrapeConfigs with map-valued fields (static labels, params,
// Secrets), several discovery configs, duplicates, and some that are rejected. Secrets are in
// ns-1, as for variedMonitors.
func variedScrapeConfigs() []*monitoringv1alpha1.ScrapeConfig {
	var scs []*monitoringv1alpha1.ScrapeConfig
	for i := range 20 {
		ns := fmt.Sprintf("ns-%d", i%7)
		opts := []scOpt{withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
			s.StaticConfigs[0].Labels = map[string]string{"z": "1", "y": "2", "x": fmt.Sprint(i)}
			s.Params = map[string][]string{"b": {"1"}, "a": {"2"}}
		})}
		switch i % 5 {
		case 1:
			opts = append(opts, withKubernetesSD(
				monitoringv1alpha1.KubernetesSDConfig{Role: monitoringv1alpha1.KubernetesRolePod, Namespaces: &monitoringv1alpha1.NamespaceDiscovery{Names: []string{"z", "y"}}},
				monitoringv1alpha1.KubernetesSDConfig{Role: monitoringv1alpha1.KubernetesRoleService, Namespaces: &monitoringv1alpha1.NamespaceDiscovery{Names: []string{"x"}}},
			))
		case 2:
			opts = append(opts, withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.RelabelConfigs = []monitoringv1.RelabelConfig{relabelCfg("keep", []string{"a"}, "", "(")}
			}))
		case 3:
			if ns == "ns-1" {
				opts = append(opts, withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
					s.HTTPSDConfigs = []monitoringv1alpha1.HTTPSDConfig{{
						URL:       "https://sd.example.com",
						BasicAuth: &monitoringv1.BasicAuth{Username: secretRef("creds", "user"), Password: secretRef("creds", "password")},
					}}
				}))
			}
		case 4:
			opts = append(opts, withSCSpec(func(s *monitoringv1alpha1.ScrapeConfigSpec) {
				s.GCESDConfigs = []monitoringv1alpha1.GCESDConfig{{Project: "p", Zone: "z"}}
			}))
		}
		scs = append(scs, newScrapeConfig(ns, fmt.Sprintf("sc-%02d", i), opts...))
	}
	recreated := newScrapeConfig("ns-0", "sc-00")
	recreated.UID = "recreated"
	return append(scs, recreated)
}

func shuffled[T any](rng *rand.Rand, in []T) []T {
	out := append([]T(nil), in...)
	rng.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out
}

func TestGenerateIsDeterministic(t *testing.T) {
	sms, in := variedMonitors()
	pms, ps := variedPodMonitorsAndProbes()
	in.ServiceMonitors, in.PodMonitors, in.Probes = sms, pms, ps
	scs := variedScrapeConfigs()
	in.ScrapeConfigs = scs
	want, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	mustLoad(t, want.Config())
	kinds := map[string]int{}
	for _, v := range want.Verdicts {
		kinds[v.Kind]++
	}
	if kinds["ServiceMonitor"] != len(sms) || kinds["PodMonitor"] != len(pms) || kinds["Probe"] != len(ps) || kinds["ScrapeConfig"] != len(scs) {
		t.Fatalf("verdicts per kind = %v", kinds)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		in.ServiceMonitors, in.PodMonitors, in.Probes = shuffled(rng, sms), shuffled(rng, pms), shuffled(rng, ps)
		in.ScrapeConfigs = shuffled(rng, scs)
		got, err := Generate(in)
		if err != nil {
			t.Fatalf("shuffle %d: Generate: %v", i, err)
		}
		if !bytes.Equal(got.Config(), want.Config()) {
			t.Fatalf("shuffle %d: config differs from the unshuffled one", i)
		}
		if !reflect.DeepEqual(got.Verdicts, want.Verdicts) {
			t.Fatalf("shuffle %d: verdicts differ:\n got %+v\nwant %+v", i, got.Verdicts, want.Verdicts)
		}
		if !reflect.DeepEqual(got.Namespaces, want.Namespaces) || got.AllNamespaces != want.AllNamespaces || got.DiscoverNodes != want.DiscoverNodes {
			t.Fatalf("shuffle %d: namespaces differ: %v vs %v", i, got.Namespaces, want.Namespaces)
		}
	}
}

func TestGenerateDoesNotModifyItsInput(t *testing.T) {
	sms, in := variedMonitors()
	pms, ps := variedPodMonitorsAndProbes()
	in.ServiceMonitors, in.PodMonitors, in.Probes = sms, pms, ps
	scs := variedScrapeConfigs()
	in.ScrapeConfigs = scs
	before := make([]*monitoringv1.ServiceMonitor, len(sms))
	for i, sm := range sms {
		before[i] = sm.DeepCopy()
	}
	pmsBefore := make([]*monitoringv1.PodMonitor, len(pms))
	for i, pm := range pms {
		pmsBefore[i] = pm.DeepCopy()
	}
	psBefore := make([]*monitoringv1.Probe, len(ps))
	for i, p := range ps {
		psBefore[i] = p.DeepCopy()
	}
	scsBefore := make([]*monitoringv1alpha1.ScrapeConfig, len(scs))
	for i, sc := range scs {
		scsBefore[i] = sc.DeepCopy()
	}
	promBefore := in.Prometheus.DeepCopy()
	if _, err := Generate(in); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	for i := range sms {
		if !reflect.DeepEqual(sms[i], before[i]) {
			t.Errorf("ServiceMonitor %s/%s was modified", sms[i].Namespace, sms[i].Name)
		}
	}
	for i := range pms {
		if !reflect.DeepEqual(pms[i], pmsBefore[i]) {
			t.Errorf("PodMonitor %s/%s was modified", pms[i].Namespace, pms[i].Name)
		}
	}
	for i := range ps {
		if !reflect.DeepEqual(ps[i], psBefore[i]) {
			t.Errorf("Probe %s/%s was modified", ps[i].Namespace, ps[i].Name)
		}
	}
	for i := range scs {
		if !reflect.DeepEqual(scs[i], scsBefore[i]) {
			t.Errorf("ScrapeConfig %s/%s was modified", scs[i].Namespace, scs[i].Name)
		}
	}
	if !reflect.DeepEqual(in.Prometheus, promBefore) {
		t.Error("Prometheus was modified")
	}
}

// The config is assembled from pieces marshalled per monitor; it must be exactly what
// marshalling the whole document at once gives.
func TestAssembledConfigIsOneDocument(t *testing.T) {
	sms, in := variedMonitors()
	pms, ps := variedPodMonitorsAndProbes()
	in.ServiceMonitors, in.PodMonitors, in.Probes = sms, pms, ps
	scs := variedScrapeConfigs()
	in.ScrapeConfigs = scs
	res, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	again, err := yaml.Marshal(parse(t, res.Config()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, res.Config()) {
		t.Errorf("assembled config differs from a single marshal:\n--- assembled\n%s\n--- single\n%s", res.Config(), again)
	}
}

// TestAParallelBuildGivesWhatOneGoroutineGives: a start builds its monitors on every core,
// each core checking its own share in batches; the config, the verdicts (a bad regex in
// every share) and the cache are those of a build on one core.
func TestAParallelBuildGivesWhatOneGoroutineGives(t *testing.T) {
	var sms []*monitoringv1.ServiceMonitor
	for i := range 600 {
		ep := endpoint(targetPortNumber(9000 + i%50))
		if i%37 == 5 {
			ep = endpoint(relabelings(relabelCfg("keep", []string{"a"}, "", "(")))
		}
		sm := newServiceMonitor(fmt.Sprintf("ns-%03d", i%120), fmt.Sprintf("sm-%03d", i), withEndpoints(ep))
		sm.UID, sm.Generation = types.UID(fmt.Sprint("uid-", i)), 1
		sms = append(sms, sm)
	}
	render := func(procs int) (*Result, *Cache) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		in := newInput(newPrometheus(), sms)
		in.Cache = NewCache()
		res, err := Generate(in)
		if err != nil {
			t.Fatalf("Generate on %d cores: %v", procs, err)
		}
		return res, in.Cache
	}
	want, wantCache := render(1)
	rejected := 0
	for _, v := range want.Verdicts {
		if !v.Accepted {
			rejected++
		}
	}
	if rejected != 17 {
		t.Fatalf("%d monitors rejected on one core, want 17", rejected)
	}
	for _, procs := range []int{2, 3, 8} {
		got, gotCache := render(procs)
		if !bytes.Equal(got.Config(), want.Config()) {
			t.Errorf("%d cores: the config differs from one core's", procs)
		}
		if !reflect.DeepEqual(got.Verdicts, want.Verdicts) {
			t.Errorf("%d cores: the verdicts differ from one core's", procs)
		}
		if gotCache.Len() != wantCache.Len() || gotCache.Misses != len(sms) {
			t.Errorf("%d cores: cache of %d entries after %d misses, one core: %d entries", procs, gotCache.Len(), gotCache.Misses, wantCache.Len())
		}
	}
}
