package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// statusPoller reads each instance manager's status endpoint, on the pod's
// IP at the manager port, with a short timeout: an instance that does not
// answer in time is reported as not answering, never waited for.
type statusPoller struct {
	live   client.Reader
	client *http.Client
	// port is the manager port; pgcontract.ManagerPort unless a test serves
	// the endpoint elsewhere.
	port int
}

func newStatusPoller(live client.Reader) *statusPoller {
	return &statusPoller{
		live:   live,
		client: &http.Client{Timeout: statusPollTimeout, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}},
		port:   pgcontract.ManagerPort,
	}
}

// statuses asks every running pod with an IP, side by side; the answers by
// pod name.
func (p *statusPoller) statuses(ctx context.Context, pods []corev1.Pod) map[string]*pgcontract.Status {
	out := map[string]*pgcontract.Status{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range pods {
		pod := &pods[i]
		if pod.Status.PodIP == "" || !pod.DeletionTimestamp.IsZero() || pod.Labels[pgcontract.LabelInstance] == "" {
			continue // not running, or not an instance (a pooler)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := p.status(ctx, pod.Status.PodIP)
			if err != nil {
				return
			}
			mu.Lock()
			out[pod.Name] = st
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func (p *statusPoller) status(ctx context.Context, ip string) (*pgcontract.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusPollTimeout)
	defer cancel()
	u := "http://" + net.JoinHostPort(ip, strconv.Itoa(p.port)) + pgcontract.PathStatus
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var st pgcontract.Status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return &st, nil
}
