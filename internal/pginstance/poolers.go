package pginstance

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lookout-operator/lookout/internal/pgcontract"
)

// A planned primary change goes through the cluster's poolers (PgBouncer,
// spec.proxy.pgBouncer): the old primary pauses each of them (their
// clients' transactions finish and new ones wait in the pooler) before it
// shuts down, and the new primary resumes them once it accepts writes.
// Clients keep their connections and see a pause, not an error. A pooler
// that does not pause in time is resumed and left out (its clients may see
// errors), so no pooler holds a switchover up; a pause that no resume ends
// is ended by the pooler itself.

// poolerPods are the addresses of the cluster's running pooler pods, by pod.
func (k *kube) poolerPods(ctx context.Context) (map[string]string, error) {
	list, err := k.cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{
		LabelSelector: pgcontract.LabelCluster + "=" + k.cluster + "," + pgcontract.LabelRole + "=" + pgcontract.RolePooler,
	})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			out[p.Name] = p.Status.PodIP
		}
	}
	return out, nil
}

// callPoolers posts path to every pooler side by side, each within timeout;
// it returns the poolers that answered 200 and, sorted, what went wrong with
// the others.
func (m *Manager) callPoolers(ctx context.Context, cfg *pgcontract.Config, path string, query url.Values, timeout time.Duration) (ok, problems []string) {
	if cfg.Poolers == nil {
		return nil, nil
	}
	pods, err := m.k.poolerPods(ctx)
	if err != nil {
		return nil, []string{"list the poolers: " + err.Error()}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	client := &http.Client{Timeout: timeout}
	for name, ip := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := postPooler(ctx, client, ip, path, query, cfg.Poolers.Token)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				problems = append(problems, name+": "+err.Error())
				return
			}
			ok = append(ok, name)
		}()
	}
	wg.Wait()
	slices.Sort(ok)
	slices.Sort(problems)
	return ok, problems
}

func postPooler(ctx context.Context, client *http.Client, ip, path string, query url.Values, token string) error {
	u := "http://" + net.JoinHostPort(ip, strconv.Itoa(pgcontract.PoolerPort)) + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// pausePoolers pauses every pooler before the primary stops; the time it
// waits is bounded by the configured pause timeout.
func (m *Manager) pausePoolers(ctx context.Context, cfg *pgcontract.Config) {
	if cfg.Poolers == nil {
		return
	}
	timeout := cfg.Poolers.PauseTimeout.Duration
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	started := time.Now()
	ok, problems := m.callPoolers(ctx, cfg, pgcontract.PathPause, url.Values{"timeout": {timeout.String()}}, timeout+time.Second)
	m.notePoolerProblems("pause", problems)
	m.log.Info("Switchover: poolers paused", "paused", strings.Join(ok, ","), "took", time.Since(started).Round(time.Millisecond))
}

// resumePoolers points every pooler at primary (an instance; "" for
// whichever holds the Lease) and resumes it.
func (m *Manager) resumePoolers(ctx context.Context, cfg *pgcontract.Config, primary string) {
	if cfg.Poolers == nil {
		return
	}
	started := time.Now()
	q := url.Values{}
	if primary != "" {
		q.Set("primary", primary)
	}
	ok, problems := m.callPoolers(ctx, cfg, pgcontract.PathResume, q, 12*time.Second)
	m.notePoolerProblems("resume", problems)
	m.log.Info("Poolers resumed", "resumed", strings.Join(ok, ","), "took", time.Since(started).Round(time.Millisecond))
}

// notePoolerProblems logs the poolers that did not do what was asked and
// records it in the status (Status.PoolerProblem).
func (m *Manager) notePoolerProblems(what string, problems []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(problems) == 0 {
		m.status.PoolerProblem = ""
		return
	}
	m.status.PoolerProblem = what + ": " + strings.Join(problems, "; ")
	m.log.Warn("Poolers did not "+what+"; going on without them", "problems", strings.Join(problems, "; "))
}
