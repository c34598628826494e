package render

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/lookout-operator/lookout/internal/render/prometheus"
)

// A split config keeps remote_write and remote_read in the main config, next to alerting.
func TestTheRemoteSectionsStayInTheMainConfigWhenSplit(t *testing.T) {
	in := withAlerting(benchInputs(300), "")
	in.Prometheus.Spec.RemoteWrite = []monitoringv1.RemoteWriteSpec{{URL: "https://metrics.example.com/api/v1/write", Name: ptrTo("central")}}
	in.Prometheus.Spec.RemoteRead = []monitoringv1.RemoteReadSpec{{URL: "https://metrics.example.com/api/v1/read"}}
	d, err := Prometheus(in)
	if err != nil {
		t.Fatal(err)
	}
	got := configSecrets(t, d)
	main := gunzip(t, got[prometheus.ConfigSecretName("main")+"/"+prometheus.ConfigSecretKey])
	if !bytes.Contains(main, []byte("scrape_config_files:")) {
		t.Fatalf("the config was not split (%d bytes); the test needs a larger one", len(d.Config()))
	}
	var pieces [][]byte
	for i := range prometheus.ConfigPieceSlots {
		if gz, ok := got[prometheus.ConfigPieceSecretName("main", i)+"/"+prometheus.ConfigPieceKey]; ok {
			pieces = append(pieces, gz)
		}
	}
	c := loadPieces(t, main, pieces)
	if len(c.RemoteWriteConfigs) != 1 || c.RemoteWriteConfigs[0].Name != "central" || len(c.RemoteReadConfigs) != 1 || len(c.AlertingConfig.AlertmanagerConfigs) != 1 {
		t.Fatalf("the split config lost a section:\n%s", main)
	}
}

func TestRemoteProblemsAreSpecErrorsNamingTheField(t *testing.T) {
	in := benchInputs(1)
	in.Prometheus.Spec.Version = "v2.55.1"
	in.Prometheus.Spec.RemoteWrite = []monitoringv1.RemoteWriteSpec{{URL: "https://metrics.example.com/api/v1/write", RoundRobinDNS: ptrTo(true)}}
	_, err := Prometheus(in)
	var se *SpecError
	if !errors.As(err, &se) || se.Reason != "InvalidRemoteWrite" || !strings.Contains(se.Message, "spec.remoteWrite[0].roundRobinDNS: requires Prometheus v3.1.0") {
		t.Errorf("Prometheus = %v, want a SpecError InvalidRemoteWrite naming spec.remoteWrite[0].roundRobinDNS", err)
	}
}
