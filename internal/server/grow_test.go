package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pristinedb/pristine/api"
	"github.com/pristinedb/pristine/client"
	"github.com/pristinedb/pristine/internal/server"
)

// A pool of 2 and four holders that each say the run needs 4 slots: all
// four get a lease while nobody releases one, and the pool is 4 large.
func TestLeaseMinSizeGrowsThePool(t *testing.T) {
	d := newDaemon(t)
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 2)
	var wg sync.WaitGroup
	leases := make([]*api.Lease, 4)
	errs := make([]error, 4)
	for i := range leases {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// A wait far longer than the test: only growth answers it.
			leases[i], errs[i] = d.c.Lease(context.Background(), api.LeaseRequest{Template: "app", MinSize: 4, Wait: 3000})
		}(i)
	}
	wg.Wait()
	slots := map[int]bool{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
		slots[leases[i].Slot] = true
	}
	if len(slots) != 4 {
		t.Fatalf("4 leases on slots %v, want 4 different slots", slots)
	}
	st, err := d.c.Pool(context.Background(), "app")
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != 4 || st.Base != 2 || st.Stats.Grown != 2 || st.Leased != 4 {
		t.Fatalf("pool after growing: size %d base %d grown %d leased %d; want 4, 2, 2, 4", st.Size, st.Base, st.Stats.Grown, st.Leased)
	}
	// A request for a larger pool of the same template grows it too, and
	// answers at once.
	up, err := d.c.PoolUp(context.Background(), server.PoolRequest{Template: "app", Size: 5}, nil)
	if err != nil || up.Size != 5 {
		t.Fatalf("pool up of 5 on a pool of 4: %+v, %v; want it grown to 5", up, err)
	}
	// No larger: refused as before.
	_, err = d.c.PoolUp(context.Background(), server.PoolRequest{Template: "app", Size: 5}, nil)
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 409 {
		t.Fatalf("pool up of 5 on a pool of 5: %v, want 409", err)
	}
}

// Growth beyond --max-memory fails at once with the limit and the fix,
// not after the lease's wait.
func TestGrowthOverBudgetFailsAtOnce(t *testing.T) {
	slot := int64(56 << 20) // 40 MB base + a 16 MB buffer pool
	d := newDaemon(t, func(s *server.Server) { s.Budget.Memory = 3 * slot })
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 2)
	for i := 0; i < 2; i++ {
		if _, err := d.c.Lease(context.Background(), api.LeaseRequest{Template: "app"}); err != nil {
			t.Fatal(err)
		}
	}
	// Every slot is leased and the wait is far longer than the test: a
	// request that waited would never return in time.
	_, err := d.c.Lease(context.Background(), api.LeaseRequest{Template: "app", MinSize: 6, Wait: 3000})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 507 {
		t.Fatalf("lease with min_size 6 over a budget of 3 slots: %v, want 507", err)
	}
	for _, want := range []string{"--max-memory 168 MiB", "at most 3 slots fit", "fewer parallel processes", "grow the pool of app from 2 to 6 slots"} {
		if !strings.Contains(ae.Message, want) {
			t.Errorf("the error does not say %q: %s", want, ae.Message)
		}
	}
	if strings.Contains(ae.Message, "no slot became free") {
		t.Errorf("the request waited for a slot: %s", ae.Message)
	}
	_, err = d.c.PoolUp(context.Background(), server.PoolRequest{Template: "app", Size: 6}, nil)
	if !errors.As(err, &ae) || ae.Status != 507 || !strings.Contains(ae.Message, "--max-memory") {
		t.Fatalf("pool up of 6 over the budget: %v, want 507 naming --max-memory", err)
	}
	// What fits is granted.
	l, err := d.c.Lease(context.Background(), api.LeaseRequest{Template: "app", MinSize: 3, Wait: 3000})
	if err != nil {
		t.Fatalf("lease with min_size 3 within the budget: %v", err)
	}
	if st, _ := d.c.Pool(context.Background(), "app"); st.Size != 3 || l.Slot != 2 {
		t.Fatalf("pool size %d, lease on slot %d; want 3 and the new slot 2", st.Size, l.Slot)
	}
}

// Slots a pool grew go again once idle for ShrinkAfter; the base stays,
// and a later run grows it again.
func TestIdleGrownSlotsShrink(t *testing.T) {
	d := newDaemon(t, func(s *server.Server) { s.ShrinkAfter = 300 * time.Millisecond })
	d.buildFromSQL("app", "CREATE TABLE t (id INT PRIMARY KEY);")
	d.poolUp("app", 1)
	up, err := d.c.PoolUp(context.Background(), server.PoolRequest{Template: "app", Size: 3}, nil)
	if err != nil || up.Size != 3 || up.Base != 1 {
		t.Fatalf("grow to 3: %+v, %v", up, err)
	}
	var st *api.PoolStatus
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if st, err = d.c.Pool(context.Background(), "app"); err != nil {
			t.Fatal(err)
		}
		if st.Stats.ShrunkIdle >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if st.Size != 1 || st.States["retired"] != 2 || st.States["ready"] != 1 || st.Stats.ShrunkIdle != 2 {
		t.Fatalf("after the idle period: size %d, states %v, shrunk %d; want the 2 grown slots retired and 1 ready", st.Size, st.States, st.Stats.ShrunkIdle)
	}
	req, _ := http.NewRequest("GET", d.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`pristine_slots_grown_total{template="app"} 2`,
		`pristine_slots_shrunk_idle_total{template="app"} 2`,
		`pristine_pool_base_size{template="app"} 1`,
		`pristine_slot_illegal_moves_total{template="app"} 0`,
		`pristine_slots{state="retired",template="app"} 2`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	l, err := d.c.Lease(context.Background(), api.LeaseRequest{Template: "app", MinSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := d.c.Pool(context.Background(), "app"); st.Size != 2 || st.Stats.Grown != 3 {
		t.Fatalf("grown again: size %d grown %d; want 2 and 3 (lease on slot %d)", st.Size, st.Stats.Grown, l.Slot)
	}
}
