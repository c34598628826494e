package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/localpod"
	"github.com/lookout-operator/lookout/internal/testhost"
)

const promURL = "http://127.0.0.1:9090"

func TestAServiceMonitorIsScrapedAndAChangeIsReloadedWithoutRestart(t *testing.T) {
	for _, port := range []int{9090, 8080} {
		if l, err := net.Listen("tcp", fmt.Sprintf(":%d", port)); err != nil {
			t.Fatalf("port %d is in use; the generated pod listens there: %v", port, err)
		} else {
			l.Close()
		}
	}
	ns := "e2e-scrape"
	mustCreate(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	target := startTarget(t, ns, "app", 8080)

	mustCreate(t, &monitoringv1.Prometheus{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: monitoringv1.PrometheusSpec{CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
			ServiceMonitorSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "e2e"}},
			ServiceDiscoveryRole:   ptr.To(monitoringv1.EndpointSliceRole),
			ScrapeInterval:         "1s",
		}},
	})
	sm := &monitoringv1.ServiceMonitor{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: map[string]string{"team": "e2e"}},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics", Interval: "1s"}},
		},
	}
	mustCreate(t, sm)

	pod := runPrometheusPod(t, ns, "main")
	// The scrape pool is serviceMonitor/<ns>/app/0; relabeling sets the job
	// label to the Service name, as the existing operator does.
	waitQuery(t, fmt.Sprintf(`up{job="app", namespace=%q, service="app", endpoint="metrics", instance=%q} == 1`, ns, target), "the target is scraped and up")
	before := runtimeInfo(t)
	pid := pod.Containers["prometheus"].Pid()

	// The team adds a relabeling. The operator rewrites the config Secret;
	// the reloader sees it through the API (not the kubelet's sync) and
	// reloads Prometheus in place.
	if err := k8s.Get(testCtx, client.ObjectKeyFromObject(sm), sm); err != nil {
		t.Fatal(err)
	}
	sm.Spec.Endpoints[0].RelabelConfigs = []monitoringv1.RelabelConfig{{
		TargetLabel: "environment", Replacement: ptr.To("e2e"), Action: "replace",
	}}
	if err := k8s.Update(testCtx, sm); err != nil {
		t.Fatal(err)
	}
	waitQuery(t, fmt.Sprintf(`up{job="app", namespace=%q, environment="e2e"} == 1`, ns), "the new label appears on the scraped series")

	after := runtimeInfo(t)
	select {
	case <-pod.Containers["prometheus"].Exited():
		t.Fatal("Prometheus exited")
	default:
	}
	if got := pod.Containers["prometheus"].Pid(); got != pid {
		t.Errorf("Prometheus PID changed from %d to %d", pid, got)
	}
	if after.StartTime != before.StartTime {
		t.Errorf("Prometheus restarted: start time %s → %s", before.StartTime, after.StartTime)
	}
	if !after.ReloadConfigSuccess || !after.LastConfigTime.After(before.LastConfigTime) {
		t.Errorf("no successful reload recorded: before %+v, after %+v", before, after)
	}
	t.Logf("Prometheus PID %d reloaded in place (start %s, config %s → %s)", pid, after.StartTime.Format(time.RFC3339), before.LastConfigTime.Format(time.RFC3339Nano), after.LastConfigTime.Format(time.RFC3339Nano))
}

// startTarget runs a /metrics server in a network namespace of its own and
// publishes it as a selector-less Service with an EndpointSlice. It returns
// the target's address.
func startTarget(t *testing.T, ns, name string, port int32) string {
	t.Helper()
	host, err := testhost.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)
	if err := host.ServeMetrics(int(port)); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics", Port: port}}},
	})
	mustCreate(t, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "lookout-e2e"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host.IP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	})
	return fmt.Sprintf("%s:%d", host.IP, port)
}

// runPrometheusPod waits for the operator's StatefulSet and runs its pod
// template locally with the Secrets the operator wrote and a real token of
// the ServiceAccount the pod runs as.
func runPrometheusPod(t *testing.T, ns, name string) *localpod.Pod {
	t.Helper()
	var sts appsv1.StatefulSet
	var secrets map[string]map[string][]byte
	err := wait.PollUntilContextTimeout(testCtx, 100*time.Millisecond, 60*time.Second, true, func(ctx ctxT) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prometheus-" + name}, &sts); err != nil {
			return false, nil
		}
		secrets = map[string]map[string][]byte{}
		for _, v := range sts.Spec.Template.Spec.Volumes {
			if v.Secret == nil {
				continue
			}
			var s corev1.Secret
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: v.Secret.SecretName}, &s); err != nil {
				return false, nil
			}
			secrets[v.Secret.SecretName] = s.Data
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the operator did not create StatefulSet prometheus-%s and its Secrets: %v", name, err)
	}
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig)
	saName := sts.Spec.Template.Spec.ServiceAccountName
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(testCtx, saName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for ServiceAccount %s: %v", saName, err)
	}
	dir := t.TempDir()
	pod, err := localpod.Start(testCtx, localpod.Options{
		Pod:          sts.Spec.Template.Spec,
		PodName:      sts.Name + "-0",
		PodNamespace: ns,
		Images: map[string]string{
			"quay.io/prometheus/prometheus": bins.prometheus,
			"/bin/lookout-reloader":         bins.reloader,
		},
		Secrets:       secrets,
		Token:         []byte(tok.Status.Token),
		CACert:        cp.CACert,
		APIServerHost: "127.0.0.1",
		APIServerPort: cp.Port,
		Dir:           dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pod.Stop()
		if t.Failed() {
			for _, c := range pod.Containers {
				b, _ := os.ReadFile(c.LogPath)
				t.Logf("--- %s log ---\n%s", c.Name, lastBytes(b, 3000))
			}
		}
	})
	if err := localpod.WaitHTTP(testCtx, promURL+"/-/ready", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return pod
}

type runtimeInfoData struct {
	StartTime           time.Time `json:"startTime"`
	ReloadConfigSuccess bool      `json:"reloadConfigSuccess"`
	LastConfigTime      time.Time `json:"lastConfigTime"`
}

func runtimeInfo(t *testing.T) runtimeInfoData {
	t.Helper()
	var out struct {
		Data runtimeInfoData `json:"data"`
	}
	getJSON(t, promURL+"/api/v1/status/runtimeinfo", &out)
	return out.Data
}

// waitQuery waits until the PromQL query returns at least one series.
func waitQuery(t *testing.T, q, what string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var out struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		getJSON(t, promURL+"/api/v1/query?query="+url.QueryEscape(q), &out)
		if len(out.Data.Result) > 0 {
			return
		}
		if time.Now().After(deadline) {
			var targets json.RawMessage
			getJSON(t, promURL+"/api/v1/targets", &targets)
			t.Fatalf("timed out waiting until %s (query %s); Prometheus targets: %s", what, q, lastBytes(targets, 2000))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", u, err)
	}
}

func mustCreate(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(testCtx, obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}
