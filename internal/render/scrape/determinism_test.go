package scrape

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func TestGenerateIsDeterministic(t *testing.T) {
	sms, in := variedMonitors()
	in.ServiceMonitors = sms
	want, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	mustLoad(t, want.Config)

	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		shuffled := append([]*monitoringv1.ServiceMonitor(nil), sms...)
		rng.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		in.ServiceMonitors = shuffled
		got, err := Generate(in)
		if err != nil {
			t.Fatalf("shuffle %d: Generate: %v", i, err)
		}
		if !bytes.Equal(got.Config, want.Config) {
			t.Fatalf("shuffle %d: config differs from the unshuffled one", i)
		}
		if !reflect.DeepEqual(got.Verdicts, want.Verdicts) {
			t.Fatalf("shuffle %d: verdicts differ:\n got %+v\nwant %+v", i, got.Verdicts, want.Verdicts)
		}
		if !reflect.DeepEqual(got.Namespaces, want.Namespaces) || got.AllNamespaces != want.AllNamespaces {
			t.Fatalf("shuffle %d: namespaces differ: %v vs %v", i, got.Namespaces, want.Namespaces)
		}
	}
}

func TestGenerateDoesNotModifyItsInput(t *testing.T) {
	sms, in := variedMonitors()
	in.ServiceMonitors = sms
	before := make([]*monitoringv1.ServiceMonitor, len(sms))
	for i, sm := range sms {
		before[i] = sm.DeepCopy()
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
	if !reflect.DeepEqual(in.Prometheus, promBefore) {
		t.Error("Prometheus was modified")
	}
}

// The config is assembled from pieces marshalled per monitor; it must be exactly what
// marshalling the whole document at once gives.
func TestAssembledConfigIsOneDocument(t *testing.T) {
	sms, in := variedMonitors()
	in.ServiceMonitors = sms
	res, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	again, err := yaml.Marshal(parse(t, res.Config))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, res.Config) {
		t.Errorf("assembled config differs from a single marshal:\n--- assembled\n%s\n--- single\n%s", res.Config, again)
	}
}
