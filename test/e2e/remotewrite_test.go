package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lookout-operator/lookout/internal/devenv"
	"github.com/lookout-operator/lookout/internal/localpod"
)

// TestRemoteWriteSendsScrapedSamplesToAReceivingPrometheus runs a second, plain Prometheus as
// a remote write receiver and a Lookout Prometheus writing to it: the scraped samples arrive
// there with the writer's external labels.
func TestRemoteWriteSendsScrapedSamplesToAReceivingPrometheus(t *testing.T) {
	if err := devenv.CheckPortsFree(9090, 8080); err != nil {
		t.Fatal(err)
	}
	receiver := startReceivingPrometheus(t)
	ns := "e2e-remote-write"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	startTarget(t, ns, "app", 8080)

	mustCreate(t, &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
				ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e"}},
				ServiceDiscoveryRole:   ptr.To(monitoringv1.EndpointSliceRole),
				ScrapeInterval:         "1s",
				ExternalLabels:         map[string]string{"cluster": "e2e"},
				RemoteWrite: []monitoringv1.RemoteWriteSpec{{
					URL:            monitoringv1.URL(receiver + "/api/v1/write"),
					Name:           ptr.To("receiver"),
					MessageVersion: ptr.To(monitoringv1.RemoteWriteMessageVersion2_0),
					QueueConfig:    &monitoringv1.QueueConfig{BatchSendDeadline: ptr.To(monitoringv1.Duration("1s"))},
					WriteRelabelConfigs: []monitoringv1.RelabelConfig{{
						SourceLabels: []monitoringv1.LabelName{"__name__"}, Regex: "up", Action: "keep",
					}},
				}},
			},
		},
	})
	mustCreate(t, &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: map[string]string{"team": "e2e"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics", Interval: "1s"}},
		},
	})

	runPrometheusPod(t, ns, "main")
	waitQuery(t, fmt.Sprintf(`up{job="app", namespace=%q} == 1`, ns), "the writer scrapes the target")
	waitQueryAt(t, receiver, fmt.Sprintf(`up{job="app", namespace=%q, cluster="e2e", prometheus=%q, prometheus_replica="prometheus-main-0"} == 1`, ns, ns+"/main"),
		"the scraped sample arrives at the receiver with the writer's external labels")
	// The write relabeling keeps only up: nothing else was sent.
	var out struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	getJSON(t, receiver+"/api/v1/query?query="+`count+by+(__name__)({job="app"})`, &out)
	for _, r := range out.Data.Result {
		if r.Metric["__name__"] != "up" {
			t.Errorf("the receiver got %s, which writeRelabelConfigs drop", r.Metric["__name__"])
		}
	}
}

// startReceivingPrometheus runs the cached Prometheus binary with the remote write receiver on a
// free loopback port and its own storage, stopped when the test ends. It returns its URL.
func startReceivingPrometheus(t *testing.T) string {
	t.Helper()
	port, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configFile, []byte("global:\n  scrape_interval: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "receiver.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bins.Prometheus,
		"--config.file="+configFile,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--web.enable-remote-write-receiver",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Killed with the test binary, should it die before the cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the receiving Prometheus: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("--- receiving Prometheus log ---\n%s", devenv.LastBytes(b, 3000))
		}
	})
	url := "http://" + addr
	if err := localpod.WaitHTTP(testCtx, url+"/-/ready", 60*time.Second); err != nil {
		t.Fatalf("the receiving Prometheus is not ready: %v", err)
	}
	return url
}
