package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
)

// bindingQueue writes status.bindings off the reconcile that renders and applies the
// configuration, so that a change never waits for status writes: after a start, the
// first reconcile of a Prometheus selecting thousands of monitors has thousands of
// bindings to write, and the next change must not queue behind them.
//
// Each owner (a Prometheus or an Alertmanager) has at most one pending write: a newer
// one replaces it (its verdicts supersede the older ones), and the work queue runs one
// write per owner at a time, several owners in parallel. A failed write is retried with
// per-owner exponential backoff unless a newer one arrived meanwhile. After a restart
// nothing needs to be resumed: every owner's first reconcile renders and submits its
// verdicts again, and the write compares them with what the objects carry.
type bindingQueue struct {
	queue   workqueue.TypedRateLimitingInterface[string]
	workers int
	// configs holds the status patches back while a configuration is being written.
	configs configWrites

	mu   sync.Mutex
	jobs map[string]*bindingJob
}

type bindingJob struct {
	write func(context.Context) error
	// waiters receive the result of the first write run after they asked.
	waiters []chan<- error
}

// bindingQueueWorkers is how many owners' bindings are written at once; each write has
// its own pool of bindingWriters patches in flight.
const bindingQueueWorkers = 4

func newBindingQueue() *bindingQueue {
	return &bindingQueue{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "status-bindings"}),
		workers: bindingQueueWorkers,
		jobs:    map[string]*bindingJob{},
	}
}

// submit makes write the owner's pending write. A nil queue (a reconciler built without
// the manager, in unit tests) writes at once.
func (q *bindingQueue) submit(ctx context.Context, owner string, write func(context.Context) error) error {
	if q == nil {
		return write(ctx)
	}
	q.enqueue(owner, write, nil)
	return nil
}

// submitAndWait submits write and waits for the owner's next write to finish, for a
// finalizer that must not let its owner go before its bindings are removed.
func (q *bindingQueue) submitAndWait(ctx context.Context, owner string, write func(context.Context) error) error {
	if q == nil {
		return write(ctx)
	}
	done := make(chan error, 1)
	q.enqueue(owner, write, done)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *bindingQueue) enqueue(owner string, write func(context.Context) error, done chan<- error) {
	q.mu.Lock()
	job := q.jobs[owner]
	if job == nil {
		job = &bindingJob{}
		q.jobs[owner] = job
	}
	job.write = write
	if done != nil {
		job.waiters = append(job.waiters, done)
	}
	q.mu.Unlock()
	q.queue.Add(owner)
}

// Start runs the workers until ctx ends (a manager Runnable; only the leader writes).
func (q *bindingQueue) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range q.workers {
		wg.Go(func() {
			for q.process(ctx) {
			}
		})
	}
	<-ctx.Done()
	q.queue.ShutDown()
	wg.Wait()
	return nil
}

func (q *bindingQueue) process(ctx context.Context) bool {
	owner, shutdown := q.queue.Get()
	if shutdown {
		return false
	}
	defer q.queue.Done(owner)
	q.mu.Lock()
	job := q.jobs[owner]
	delete(q.jobs, owner)
	q.mu.Unlock()
	if job == nil {
		return true
	}
	err := job.write(context.WithValue(ctx, configWritesKey{}, &q.configs))
	for _, w := range job.waiters {
		w <- err
	}
	if err == nil {
		q.queue.Forget(owner)
		return true
	}
	if ctx.Err() != nil {
		return true
	}
	ctrl.Log.WithName("status-bindings").Error(err, "Writing status.bindings failed; retrying", "owner", owner)
	q.mu.Lock()
	if q.jobs[owner] == nil { // a newer write supersedes this one
		q.jobs[owner] = &bindingJob{write: job.write}
	}
	q.mu.Unlock()
	q.queue.AddRateLimited(owner)
	return true
}

// configWriting tells the queue that a configuration is being rendered and written until
// the returned function is called (more than once is fine): status patches not yet sent
// wait until then. The apiserver serves the operator's requests from one flow, so a
// configuration write sent while a cold start's thousands of status patches are in flight
// would queue behind them; this way it does not. A nil queue holds nothing back.
func (q *bindingQueue) configWriting() func() {
	if q == nil {
		return func() {}
	}
	return q.configs.begin()
}

// configWrites counts configurations being written; status patches step aside for them.
type configWrites struct {
	mu      sync.Mutex
	writing int
	idle    chan struct{} // closed when writing drops to 0; nil while it is 0
}

func (c *configWrites) begin() func() {
	c.mu.Lock()
	if c.writing == 0 {
		c.idle = make(chan struct{})
	}
	c.writing++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.writing--; c.writing == 0 {
				close(c.idle)
				c.idle = nil
			}
		})
	}
}

// configWritesStepAside bounds how long one status patch waits for configuration writes:
// a stream of changes must not starve the status.
const configWritesStepAside = 2 * time.Second

// wait returns once no configuration is being written, ctx is done, or
// configWritesStepAside has passed.
func (c *configWrites) wait(ctx context.Context) {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(configWritesStepAside)
	defer t.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-t.C:
	}
}

type configWritesKey struct{}

// stepAsideForConfigs waits, before a status patch, for the configuration writes of the
// queue that runs this write (see configWriting); without one it returns at once.
func stepAsideForConfigs(ctx context.Context) {
	if c, ok := ctx.Value(configWritesKey{}).(*configWrites); ok {
		c.wait(ctx)
	}
}
