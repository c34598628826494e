package controller

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// arrivals counts, per key, the requests added to a controller's queue. A reconcile
// notes the count when it starts; a different count later means a newer event for the
// same object is waiting, and the reconcile may yield to it once the configuration is
// written (see applyStages): the newer change then reaches the configuration first,
// instead of waiting for the rest of a long apply (the RBAC objects of hundreds of
// namespaces on a first start).
type arrivals struct {
	mu sync.Mutex
	n  map[reconcile.Request]uint64
}

func (a *arrivals) note(items ...reconcile.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[reconcile.Request]uint64{}
	}
	for _, it := range items {
		a.n[it]++
	}
}

// count is the number of requests for req added so far.
func (a *arrivals) count(req reconcile.Request) uint64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[req]
}

// newer returns a function that reports whether a request for req was added since this
// call. Nil arrivals never report one.
func (a *arrivals) newer(req reconcile.Request) func() bool {
	if a == nil {
		return nil
	}
	since := a.count(req)
	return func() bool { return a.count(req) != since }
}

// drop forgets req (its object is gone).
func (a *arrivals) drop(req reconcile.Request) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.n, req)
}

// newQueue is a controller's NewQueue: controller-runtime's priority queue, with every
// add counted.
func (a *arrivals) newQueue(log logr.Logger) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return &countingQueue{
			PriorityQueue: priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
				o.Log = log.WithValues("controller", name)
				o.RateLimiter = limiter
			}),
			arrivals: a,
		}
	}
}

// countingQueue is a priority queue that tells its arrivals of every add. It stays a
// priority queue, so that handlers still add the initial list at low priority.
type countingQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	arrivals *arrivals
}

func (q *countingQueue) Add(item reconcile.Request) {
	q.arrivals.note(item)
	q.PriorityQueue.Add(item)
}

func (q *countingQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	q.arrivals.note(items...)
	q.PriorityQueue.AddWithOpts(o, items...)
}

func (q *countingQueue) AddRateLimited(item reconcile.Request) {
	q.arrivals.note(item)
	q.PriorityQueue.AddRateLimited(item)
}

func (q *countingQueue) AddAfter(item reconcile.Request, d time.Duration) {
	q.arrivals.note(item)
	q.PriorityQueue.AddAfter(item, d)
}
