package server_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/server"
)

// TestLeaseWhilePoolComesUp: a lease asked for while pool up is still
// bringing slots up (min_ready: every slot) waits and is answered by the
// first slot that answers, before pool up's answer; pool status lists the
// pool with its slots starting meanwhile. A pool up with the default
// min_ready answers once the first round of slots is up.
func TestLeaseWhilePoolComesUp(t *testing.T) {
	d := newDaemon(t)
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	ctx := context.Background()
	const size = 16
	upDone := make(chan error, 1)
	go func() {
		_, err := d.c.PoolUp(ctx, server.PoolRequest{Template: "app", Size: size, MinReady: size, Parallel: 2}, nil)
		upDone <- err
	}()
	// The pool is listed (its slots starting) before pool up answers.
	var st *api.PoolStatus
	for {
		var err error
		st, err = d.c.Pool(ctx, "app")
		var ae *client.APIError
		if err == nil {
			break
		}
		if !errors.As(err, &ae) || (ae.Status != http.StatusNotFound && ae.Status != http.StatusServiceUnavailable) {
			t.Fatalf("pool status while pool up runs: %v", err)
		}
		select {
		case err := <-upDone:
			t.Fatalf("pool up answered (%v) before its pool was listed", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if st.Size != size || st.States["starting"] == 0 {
		t.Fatalf("pool status while it comes up: size %d, states %v; want %d slots, some starting", st.Size, st.States, size)
	}
	l, err := d.c.Lease(ctx, api.LeaseRequest{Template: "app", Holder: "first", Wait: 60})
	if err != nil {
		t.Fatalf("lease while the pool comes up: %v", err)
	}
	select {
	case err := <-upDone:
		t.Fatalf("pool up answered (%v) before the first lease: the lease waited for every slot", err)
	default:
	}
	if err := <-upDone; err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.Release(ctx, l.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := d.c.PoolDown(ctx, "app"); err != nil {
		t.Fatal(err)
	}

	// The default min_ready: the first round (parallel 2), not all 16.
	up, err := d.c.PoolUp(ctx, server.PoolRequest{Template: "app", Size: size, Parallel: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if up.States["ready"] < 2 || up.States["ready"] == size {
		t.Fatalf("pool up with the default min_ready answered with %v; want the first 2 slots ready and the others starting", up.States)
	}
}
