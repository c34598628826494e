package controller

import (
	"context"
	"sync"

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
	err := job.write(ctx)
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
