package demorun

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/server"
	"github.com/pristinedb/pristine/internal/stats"
)

// PoolRun is one pool-up through the daemon, as the demo and the service
// section time it: every slot ready, leased and released at once, and
// reset.
type PoolRun struct {
	// State is "cold" for the first run on a scratch filesystem made, a
	// template built or a filesystem no pool ran on before by this
	// invocation, "warm" otherwise.
	State         string  `json:"state"`
	PoolUpSeconds float64 `json:"pool_up_seconds"`
	// FirstLeaseSeconds is from the pool-up request to the first lease,
	// asked for at the same moment and served by the first slot that
	// answers (0 in runs saved before it was measured).
	FirstLeaseSeconds float64 `json:"first_lease_seconds,omitempty"`
	// ResetP50MS and ResetP99MS are the resets of every slot, released
	// at once.
	ResetP50MS float64 `json:"reset_p50_ms"`
	ResetP99MS float64 `json:"reset_p99_ms"`
	// LoadBefore and LoadAfter are the 1, 5 and 15 minute load averages
	// around the pool-up.
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
}

// PoolCycle brings the pool of template name up with n slots through the
// daemon (waiting for every slot: min_ready n) while a first lease waits
// for the first slot that answers, leases every database of every slot
// (dbs of each: the template's --dbs-per-slot) as holder, releases them
// all at once, waits until every slot is reset and takes the pool down,
// also when it fails.
// A non-nil leased is called once every database is leased, before the
// releases, with the leases and the wait in milliseconds of each lease
// of a ready slot (all but the first).
func PoolCycle(ctx context.Context, c *client.Client, name string, n, dbs int, holder string, leased func([]*api.Lease, []float64) error) (*PoolRun, error) {
	run := &PoolRun{LoadBefore: stats.LoadAverage()}
	t0 := time.Now()
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	firstc := make(chan firstLease, 1)
	go func() { firstc <- leaseFirst(fctx, c, name, holder, t0) }()
	if _, err := c.PoolUp(ctx, server.PoolRequest{Template: name, Size: n, MinReady: n}, nil); err != nil {
		cancel()
		<-firstc
		return nil, err
	}
	run.PoolUpSeconds = time.Since(t0).Seconds()
	run.LoadAfter = stats.LoadAverage()
	up := true
	defer func() {
		if up {
			_, _ = c.PoolDown(context.WithoutCancel(ctx), name)
		}
	}()
	first := <-firstc
	if first.err != nil {
		return nil, fmt.Errorf("the first lease, asked for with the pool-up: %w", first.err)
	}
	run.FirstLeaseSeconds = first.seconds
	total := n * max(dbs, 1)
	leases := append(make([]*api.Lease, 0, total), first.lease)
	waits := make([]float64, 0, total)
	for range total - 1 {
		t := time.Now()
		l, err := c.Lease(ctx, server.LeaseRequest{Template: name, Holder: holder})
		if err != nil {
			return nil, err
		}
		waits = append(waits, float64(time.Since(t).Microseconds())/1000)
		leases = append(leases, l)
	}
	if leased != nil {
		if err := leased(leases, waits); err != nil {
			return nil, err
		}
	}
	for _, l := range leases {
		if _, err := c.Release(ctx, l.ID, false); err != nil {
			return nil, err
		}
	}
	if err := WaitReady(ctx, c, name, n); err != nil {
		return nil, err
	}
	ps, err := c.Pool(ctx, name)
	if err != nil {
		return nil, err
	}
	run.ResetP50MS, run.ResetP99MS = ps.ResetP50MS, ps.ResetP99MS
	up = false
	if _, err := c.PoolDown(context.WithoutCancel(ctx), name); err != nil {
		return nil, err
	}
	return run, nil
}

// firstLease is the lease leaseFirst got, and when.
type firstLease struct {
	lease   *api.Lease
	seconds float64 // since the pool-up request
	err     error
}

// leaseFirst asks for a lease of the pool of name as a test runner that
// starts with the pool would: at once, waiting for its first slot. Until
// the daemon has the pool-up request the pool is unknown (404): it asks
// again.
func leaseFirst(ctx context.Context, c *client.Client, name, holder string, t0 time.Time) firstLease {
	for {
		l, err := c.Lease(ctx, server.LeaseRequest{Template: name, Holder: holder, Wait: 300})
		var ae *client.APIError
		if err == nil || !errors.As(err, &ae) || ae.Status != http.StatusNotFound || time.Since(t0) > time.Minute {
			return firstLease{lease: l, seconds: time.Since(t0).Seconds(), err: err}
		}
		select {
		case <-ctx.Done():
			return firstLease{err: ctx.Err()}
		case <-time.After(2 * time.Millisecond):
		}
	}
}
