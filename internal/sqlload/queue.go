package sqlload

import (
	"context"
	"sync"
)

// A queue holds a worker's jobs. It never blocks its producer: the budget
// bounds how much all queues hold together.
type queue struct {
	mu     sync.Mutex
	jobs   []job
	closed bool
	wake   chan struct{} // has a token when jobs or closed changed
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

func (q *queue) push(j job) {
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	q.mu.Unlock()
	q.signal()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop returns the next job; false means the queue is closed and empty, or
// ctx is done.
func (q *queue) pop(ctx context.Context) (job, bool) {
	for {
		q.mu.Lock()
		if len(q.jobs) > 0 {
			j := q.jobs[0]
			q.jobs[0] = job{}
			q.jobs = q.jobs[1:]
			q.mu.Unlock()
			return j, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return job{}, false
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			return job{}, false
		}
	}
}

// A budget counts the bytes of statements that were read but have not run
// yet, so reading stays a bounded distance ahead of the workers.
type budget struct {
	mu    sync.Mutex
	used  int64
	max   int64
	freed chan struct{} // closed and replaced whenever bytes are released
}

func newBudget(max int64) *budget { return &budget{max: max, freed: make(chan struct{})} }

// acquire waits until n more bytes fit. A statement larger than the whole
// budget is let through when nothing else is outstanding.
func (b *budget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		ch := b.freed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// drain waits until every acquired byte has been released: all statements
// handed to workers have run.
func (b *budget) drain(ctx context.Context) error {
	for {
		b.mu.Lock()
		if b.used == 0 {
			b.mu.Unlock()
			return nil
		}
		ch := b.freed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
