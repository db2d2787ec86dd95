package client

import (
	"context"
	"sync"

	"github.com/pristinedb/pristine/api"
)

// Prefetcher takes the next lease of a request while the current one is in
// use, so a test that asks for a database finds one already leased: its
// wait is a channel receive, not a round trip to the daemon. It holds at
// most one lease ahead. A lease taken ahead counts against the pool like
// any other (it holds a slot) and is held by this process (req.PID): the
// daemon reclaims it if the process dies; Close releases it.
//
// A Prefetcher is safe for concurrent use; with parallel tests, the first
// to ask gets the lease taken ahead and the others lease as usual.
type Prefetcher struct {
	c   *Client
	req api.LeaseRequest

	mu     sync.Mutex
	next   chan prefetched // nil: nothing taken ahead
	closed bool
}

type prefetched struct {
	l   *api.Lease
	err error
}

// Prefetch returns a Prefetcher for req; the first lease is taken at the
// first call of Lease (or at once with Warm).
func (c *Client) Prefetch(req api.LeaseRequest) *Prefetcher {
	return &Prefetcher{c: c, req: req}
}

// Warm starts taking a lease ahead now, if none is.
func (p *Prefetcher) Warm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.aheadLocked()
}

// Lease returns the lease taken ahead, or leases one now (LeaseWait) when
// none was, and starts taking the next one. A lease taken ahead that
// failed (the pool went down, the wait ran out) is not returned: Lease
// asks again, so its error is the current one.
func (p *Prefetcher) Lease(ctx context.Context) (*api.Lease, error) {
	p.mu.Lock()
	next := p.next
	p.next = nil
	p.mu.Unlock()
	if next != nil {
		select {
		case got := <-next:
			if got.err == nil {
				p.Warm()
				return got.l, nil
			}
		case <-ctx.Done():
			// The lease still coming goes back for the next caller.
			p.mu.Lock()
			if p.next == nil && !p.closed {
				p.next = next
			} else {
				go p.drop(next)
			}
			p.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	l, err := p.c.LeaseWait(ctx, p.req)
	if err == nil {
		p.Warm()
	}
	return l, err
}

// Close releases the lease taken ahead, if any, and takes no more.
func (p *Prefetcher) Close(ctx context.Context) error {
	p.mu.Lock()
	next := p.next
	p.next, p.closed = nil, true
	p.mu.Unlock()
	if next == nil {
		return nil
	}
	got := <-next
	if got.err != nil {
		return nil
	}
	_, err := p.c.Release(ctx, got.l.ID, true)
	return err
}

// aheadLocked starts taking a lease ahead; the caller holds p.mu.
func (p *Prefetcher) aheadLocked() {
	if p.next != nil || p.closed {
		return
	}
	ch := make(chan prefetched, 1)
	p.next = ch
	go func() {
		l, err := p.c.LeaseWait(context.Background(), p.req)
		ch <- prefetched{l, err}
	}()
}

// drop releases a lease taken ahead that nobody will use.
func (p *Prefetcher) drop(next chan prefetched) {
	if got := <-next; got.err == nil {
		_, _ = p.c.Release(context.Background(), got.l.ID, true)
	}
}
