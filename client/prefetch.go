package client

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
// A Prefetcher made by PrefetchDB also opens each lease's database/sql
// handle ahead (LeaseDB), and Release returns a lease in the background:
// with both, the test's own thread spends nothing on its database beyond
// a channel receive.
//
// A Prefetcher is safe for concurrent use; with parallel tests, the first
// to ask gets the lease taken ahead and the others lease as usual.
type Prefetcher struct {
	// ReleaseFailed, when set (before the first Release), is told of each
	// background release that failed, from that release's goroutine;
	// otherwise Close returns the failures.
	ReleaseFailed func(error)

	c    *Client
	req  api.LeaseRequest
	open bool // PrefetchDB: each lease's *sql.DB is opened ahead too

	mu       sync.Mutex
	next     chan prefetched // nil: nothing taken ahead
	closed   bool
	releases sync.WaitGroup // the releases running in the background
	errs     []error        // their failures, for Close
}

type prefetched struct {
	l   *api.Lease
	db  *sql.DB // PrefetchDB: opened and pinged, or nil when that failed
	err error
}

// Prefetch returns a Prefetcher for req; the first lease is taken at the
// first call of Lease (or at once with Warm).
func (c *Client) Prefetch(req api.LeaseRequest) *Prefetcher {
	return &Prefetcher{c: c, req: req}
}

// PrefetchDB is Prefetch that also opens each lease's database ahead: a
// *sql.DB of the lease's DSN with one connection made (sql.Open and a
// Ping), which LeaseDB returns with the lease.
func (c *Client) PrefetchDB(req api.LeaseRequest) *Prefetcher {
	return &Prefetcher{c: c, req: req, open: true}
}

// Warm starts taking a lease ahead now, if none is.
func (p *Prefetcher) Warm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.aheadLocked()
}

// Lease returns the lease taken ahead, or leases one now (LeaseWait) when
// none was, and starts taking the next. A lease taken ahead that failed
// (the pool went down, the wait ran out) is not returned: Lease asks
// again, so its error is the current one. A database handle opened ahead
// (PrefetchDB) is closed: LeaseDB returns it.
func (p *Prefetcher) Lease(ctx context.Context) (*api.Lease, error) {
	got, err := p.take(ctx)
	if err != nil {
		return nil, err
	}
	if got.db != nil {
		got.db.Close()
	}
	return got.l, nil
}

// LeaseDB is Lease with the lease's database handle: the one opened ahead
// (PrefetchDB), or one opened and pinged now. The caller closes it before
// releasing the lease.
func (p *Prefetcher) LeaseDB(ctx context.Context) (*api.Lease, *sql.DB, error) {
	got, err := p.take(ctx)
	if err != nil {
		return nil, nil, err
	}
	if got.db != nil {
		return got.l, got.db, nil
	}
	db, err := openDB(ctx, got.l)
	if err != nil {
		p.Release(got.l.ID, true)
		return nil, nil, err
	}
	return got.l, db, nil
}

// take returns the lease taken ahead, or one taken now, and starts taking
// the next.
func (p *Prefetcher) take(ctx context.Context) (prefetched, error) {
	p.mu.Lock()
	next := p.next
	p.next = nil
	p.mu.Unlock()
	if next != nil {
		select {
		case got := <-next:
			if got.err == nil {
				p.Warm()
				return got, nil
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
			return prefetched{}, ctx.Err()
		}
	}
	l, err := p.c.LeaseWait(ctx, p.req)
	if err != nil {
		return prefetched{}, err
	}
	p.Warm()
	return prefetched{l: l}, nil
}

// Release returns lease id in the background, as Client.Release does
// (unchanged: the daemon checks that nothing was written), and returns at
// once. Close waits for the releases still running and reports their
// failures; a release that never reaches the daemon (the process exits
// first) is reclaimed by it, as the holder's lease. After Close, Release
// returns once the daemon has answered.
func (p *Prefetcher) Release(id string, unchanged bool) {
	release := func() {
		if _, err := p.c.Release(context.Background(), id, unchanged); err != nil {
			if p.ReleaseFailed != nil {
				p.ReleaseFailed(fmt.Errorf("release lease %s: %w", id, err))
				return
			}
			p.mu.Lock()
			p.errs = append(p.errs, fmt.Errorf("release lease %s: %w", id, err))
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.releases.Add(1)
	}
	p.mu.Unlock()
	if closed { // Close is waiting, or done: release here
		release()
		return
	}
	go func() {
		defer p.releases.Done()
		release()
	}()
}

// Close releases the lease taken ahead, if any, takes no more, and waits
// for the releases running in the background (Release); it returns their
// failures.
func (p *Prefetcher) Close(ctx context.Context) error {
	p.mu.Lock()
	next := p.next
	p.next, p.closed = nil, true
	p.mu.Unlock()
	if next != nil {
		if got := <-next; got.err == nil {
			if got.db != nil {
				got.db.Close()
			}
			p.Release(got.l.ID, true)
		}
	}
	done := make(chan struct{})
	go func() { p.releases.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("close the prefetcher: releases still running: %w", ctx.Err())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return errors.Join(p.errs...)
}

// aheadLocked starts taking a lease ahead; the caller holds p.mu.
func (p *Prefetcher) aheadLocked() {
	if p.next != nil || p.closed {
		return
	}
	ch := make(chan prefetched, 1)
	p.next = ch
	go func() {
		ctx := context.Background()
		l, err := p.c.LeaseWait(ctx, p.req)
		got := prefetched{l: l, err: err}
		if err == nil && p.open {
			// A failure here is the test's to see: LeaseDB opens again
			// on the test's thread and returns that error.
			got.db, _ = openDB(ctx, l)
		}
		ch <- got
	}()
}

// drop releases a lease taken ahead that nobody will use.
func (p *Prefetcher) drop(next chan prefetched) {
	if got := <-next; got.err == nil {
		if got.db != nil {
			got.db.Close()
		}
		_, _ = p.c.Release(context.Background(), got.l.ID, true)
	}
}

// openDB opens lease l's database and makes its first connection.
func openDB(ctx context.Context, l *api.Lease) (*sql.DB, error) {
	db, err := sql.Open("mysql", l.DSN)
	if err != nil {
		return nil, fmt.Errorf("open the database of lease %s: %w", l.ID, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to the database of lease %s: %w", l.ID, err)
	}
	return db, nil
}
