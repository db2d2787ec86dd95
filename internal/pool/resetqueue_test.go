package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
)

// TestResetQueueRule checks queueReset's guard: a resetting or failed
// slot is queued once; a second queueing, or a slot in any other state,
// is refused and counted, and nothing blocks.
func TestResetQueueRule(t *testing.T) {
	for _, tc := range []struct {
		state  State
		twice  bool
		queued int   // slots in the queue after
		bad    int64 // refusals counted
	}{
		{Resetting, false, 1, 0},
		{Failed, false, 1, 0},
		{Resetting, true, 1, 1},
		{Failed, true, 1, 1},
		{Ready, false, 0, 1},
		{Leased, false, 0, 1},
		{Kept, false, 0, 1},
		{Starting, false, 0, 1},
		{Retired, false, 0, 1},
		{none, false, 0, 1},
	} {
		t.Run(fmt.Sprintf("%s twice=%v", tc.state, tc.twice), func(t *testing.T) {
			p := newPool(&catalog.Meta{Name: "app"}, Options{Size: 1}, "", "")
			s := &slot{idx: 0, state: tc.state}
			p.queueReset(s)
			if tc.twice {
				p.queueReset(s)
			}
			if len(p.resetq) != tc.queued || p.stats.IllegalMoves != tc.bad || s.queued != (tc.queued == 1) {
				t.Errorf("queue holds %d, %d refused, queued=%v; want %d, %d", len(p.resetq), p.stats.IllegalMoves, s.queued, tc.queued, tc.bad)
			}
		})
	}
}

// TestResetQueueOnce drives every path that queues a slot for reset
// (release dirty and unchanged, keep and release, expiry, a server's
// death, with and without a lease, a reset that fails and is retried) at
// once from several goroutines, and fails if any of them queued a slot
// the queue still held (queueReset counts it) or left one behind.
func TestResetQueueOnce(t *testing.T) {
	for _, dbs := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d dbs per slot", dbs), func(t *testing.T) {
			f := &fake{}
			p := fakePool(t, f, dbs, Options{Size: 3, ResetWorkers: 2}, nil)
			var boots atomic.Int64
			f.set(func(f *fake) {
				f.bootErr = func(*slot) error {
					if boots.Add(1)%4 == 0 {
						return errors.New("test: this boot fails")
					}
					return nil
				}
			})
			kill := func(i int) {
				p.mu.Lock()
				srv, _ := p.slots[i].srv.(*fakeServer)
				p.mu.Unlock()
				if srv != nil {
					srv.die()
				}
			}
			bg := context.Background()
			var wg sync.WaitGroup
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 150; i++ {
						ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
						l, err := p.Lease(ctx, LeaseOptions{Holder: "t", TTL: time.Hour})
						cancel()
						if err != nil {
							continue // all slots busy: try again
						}
						// Errors are expected below: a lease may be lost
						// to another goroutine's kill or expiry first.
						switch (w + i) % 7 {
						case 0:
							_, _ = p.Release(bg, l.ID, Dirty)
						case 1:
							_, _ = p.Release(bg, l.ID, Unchanged)
						case 2:
							_, _ = p.Keep(l.ID)
							_, _ = p.Release(bg, l.ID, Dirty)
						case 3:
							kill(l.Slot)
							_, _ = p.Release(bg, l.ID, Dirty)
						case 4:
							p.reap(time.Now().Add(2 * time.Hour))
						case 5:
							go kill(l.Slot)
							_, _ = p.Release(bg, l.ID, Unchanged)
						case 6:
							_, _ = p.Release(bg, l.ID, Unchanged)
							kill(l.Slot) // ready, or already being reset
						}
					}
				}()
			}
			wg.Wait()
			f.set(func(f *fake) { f.bootErr = nil })
			for _, l := range p.Leases() {
				_, _ = p.Release(bg, l.ID, Dirty)
			}
			// With several databases a slot stays leased, none on lease,
			// while one of them is still fresh.
			waitFor(t, p, "every slot ready again", func() bool {
				for _, s := range p.slots {
					if s.state != Ready && (s.state != Leased || s.active() > 0 || s.needsReset()) {
						return false
					}
				}
				return true
			})
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.stats.IllegalMoves != 0 {
				t.Errorf("%d slot moves or reset queueings refused: a slot was queued twice, or in the wrong state", p.stats.IllegalMoves)
			}
			if len(p.resetq) != 0 {
				t.Errorf("the reset queue holds %d slots with every slot ready", len(p.resetq))
			}
			for _, s := range p.slots {
				if s.queued {
					t.Errorf("slot %d is %s and still marked queued", s.idx, s.state)
				}
			}
			if p.stats.ResetFailures == 0 || p.stats.Replaced == 0 {
				t.Errorf("resets failed %d times, %d servers replaced: the test did not reach those paths", p.stats.ResetFailures, p.stats.Replaced)
			}
		})
	}
}
