package controller

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	postgresv1beta1 "github.com/lookout-operator/lookout/api/postgres/v1beta1"
	"github.com/lookout-operator/lookout/internal/pgcontract"
	pgrender "github.com/lookout-operator/lookout/internal/render/postgres"
)

// The status step on its own: instance managers answer at their status
// endpoint (here httptest servers standing in for them, one of which hangs),
// and the cluster's status says who is primary, how far behind each replica
// is and what the last failover was.
func TestPostgresStatusFromTheInstances(t *testing.T) {
	promoted := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
	answers := map[string]pgcontract.Status{
		"/a": {Instance: "hippo-a-0", Role: pgcontract.RolePrimary, Ready: true, Timeline: 3, PostgresVersion: "15.18",
			SynchronousStandbys: []string{"hippo-b-0"},
			Replicas: []pgcontract.ReplicaStatus{{Instance: "hippo-b-0", State: "streaming", SyncState: "sync", LagBytes: 0, LagSeconds: 0},
				{Instance: "hippo-c-0", State: "catchup", SyncState: "async", LagBytes: 4096, LagSeconds: 1.5}},
			LastPromotion: &promoted, LastPromotionDuration: pgcontract.Duration{Duration: 2300 * time.Millisecond}, LastPromotionReason: pgcontract.PromotionFailover},
		"/b": {Instance: "hippo-b-0", Role: pgcontract.RoleReplica, Ready: true, Timeline: 3},
	}
	var servers []*httptest.Server
	hang := make(chan struct{})
	defer close(hang)
	for _, path := range []string{"/a", "/b", "/hang"} {
		st, ok := answers[path]
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != pgcontract.PathStatus {
				http.NotFound(w, r)
				return
			}
			if !ok {
				select {
				case <-hang:
				case <-r.Context().Done():
				}
				return
			}
			_ = json.NewEncoder(w).Encode(st)
		}))
		defer s.Close()
		servers = append(servers, s)
	}
	// Each server listens on its own port; the poller asks one port, so each
	// pod's "IP" is the loopback and the test asks through a poller per pod.
	pods := []corev1.Pod{}
	for _, name := range []string{"hippo-a-0", "hippo-b-0", "hippo-c-0"} {
		pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{pgcontract.LabelInstance: strings.TrimSuffix(name, "-0")}},
			Status: corev1.PodStatus{PodIP: "127.0.0.1"}})
	}
	got := map[string]*pgcontract.Status{}
	start := time.Now()
	for i, s := range servers {
		_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
		p := newStatusPoller(nil)
		p.port, _ = strconv.Atoi(port)
		for k, v := range p.statuses(context.Background(), pods[i:i+1]) {
			got[k] = v
		}
	}
	if took := time.Since(start); took > 3*statusPollTimeout {
		t.Errorf("polling took %s: a hanging instance must cost at most the timeout", took)
	}
	if len(got) != 2 || got["hippo-c-0"] != nil {
		t.Fatalf("answers from %v; want hippo-a-0 and hippo-b-0 (hippo-c-0 hangs)", slices.Sorted(maps.Keys(got)))
	}

	c := &postgresv1beta1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "hippo"}, Spec: postgresv1beta1.PostgresClusterSpec{
		InstanceSets: []postgresv1beta1.PostgresInstanceSetSpec{{Name: "a", Replicas: ptr.To[int32](3)}}}}
	counts := pgrender.ObservedStatus(c, pgrender.Observed{Pods: pods, Instances: got}, &c.Status)
	s := c.Status
	if s.Primary != "hippo-a-0" || s.Timeline != 3 || s.PostgresVersion != 15 || len(s.SynchronousStandbys) != 1 || counts.Desired != 3 {
		t.Errorf("status %+v", s)
	}
	if len(s.Replicas) != 2 || s.Replicas[1].Name != "hippo-c-0" || s.Replicas[1].LagBytes != 4096 || s.Replicas[1].LagSeconds != "1.5" || s.Replicas[0].SyncState != "sync" {
		t.Errorf("replicas %+v", s.Replicas)
	}
	if s.LastFailover == nil || s.LastFailover.To != "hippo-a-0" || s.LastFailover.Duration != "2.3s" || !s.LastFailover.Time.Time.Equal(promoted) || s.LastSwitchover != nil {
		t.Errorf("last failover %+v, switchover %+v", s.LastFailover, s.LastSwitchover)
	}
}
