package pool

// Unit tests of the slot state machine, driven through the seam (ops,
// server) by fakes: no mariadbd, no clone. The real-server tests are in
// pool_test.go and its neighbours.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/rootdir"
)

// fake is the seam's fake: clones are names, servers are fakeServers.
type fake struct {
	mu      sync.Mutex
	clones  int
	servers []*fakeServer // every server booted, oldest first
	// bootErr, when set, fails the boots it returns an error for.
	bootErr func(s *slot) error
	// bootGate, when set, holds every boot until it is closed; booting
	// is told each boot that waits.
	bootGate chan struct{}
	booting  chan int
	// lostAccount names restored leases' users whose account the clone
	// lost.
	lostAccount map[string]bool
	// recycle, when set, is every server's release --unchanged check;
	// by default nothing changed.
	recycle func(ctx context.Context, was check, a account) (account, check, error)
	// used, when set, is the disk each slot used.
	used func(dir string) int64
}

func (f *fake) ops() ops {
	return ops{
		clone: func(_ context.Context, s *slot) error {
			f.mu.Lock()
			f.clones++
			id := fmt.Sprintf("clone-%d", f.clones)
			f.mu.Unlock()
			s.clone = id
			return nil
		},
		boot: f.boot,
		diskUsed: func(dir string) int64 {
			f.mu.Lock()
			used := f.used
			f.mu.Unlock()
			if used == nil {
				return 0
			}
			return used(dir)
		},
	}
}

func (f *fake) boot(_ context.Context, s *slot) (*booted, error) {
	f.mu.Lock()
	gate, booting, bootErr := f.bootGate, f.booting, f.bootErr
	f.mu.Unlock()
	if gate != nil {
		booting <- s.idx
		<-gate
	}
	if bootErr != nil {
		if err := bootErr(s); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	srv := &fakeServer{f: f, n: len(f.servers), done: make(chan struct{})}
	f.servers = append(f.servers, srv)
	b := &booted{srv: srv, port: 20000 + srv.n, mark: "counters globals", files: fileMark{},
		accts: make([]account, len(s.units)), restored: make([]bool, len(s.units))}
	for i := range s.units {
		if l := s.restoredLease(s.units[i].db); l != nil && !f.lostAccount[l.User] {
			b.accts[i], b.restored[i] = account{user: l.User, password: l.Password}, true
			continue
		}
		b.accts[i] = account{user: "lease_" + randomHex(6), password: randomHex(16)}
	}
	return b, nil
}

// server returns the n-th server booted.
func (f *fake) server(n int) *fakeServer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.servers[n]
}

func (f *fake) set(change func(f *fake)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// fakeServer is a server that runs until it is killed or dies.
type fakeServer struct {
	f      *fake
	n      int
	done   chan struct{}
	once   sync.Once
	killed atomic.Bool // by the pool
	frozen atomic.Bool
}

var _ server = (*fakeServer)(nil)

func (s *fakeServer) Running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}
func (s *fakeServer) PID() int                     { return 100000 + s.n }
func (s *fakeServer) Socket() string               { return fmt.Sprintf("/nonexistent/fake-%d.sock", s.n) }
func (s *fakeServer) Done() <-chan struct{}        { return s.done }
func (s *fakeServer) exitReason() (string, string) { return ReasonKilled, "the test killed it" }
func (s *fakeServer) kill()                        { s.killed.Store(true); s.die() }

// die ends the server as a crash would.
func (s *fakeServer) die() { s.once.Do(func() { close(s.done) }) }

func (s *fakeServer) recycle(ctx context.Context, was check, a account, _ []string) (account, check, error) {
	s.f.mu.Lock()
	recycle := s.f.recycle
	s.f.mu.Unlock()
	if recycle != nil {
		return recycle(ctx, was, a)
	}
	return account{user: "lease_" + randomHex(6), password: randomHex(16)}, was, nil
}

func (s *fakeServer) freeze(context.Context) error {
	s.frozen.Store(true)
	return nil
}

func (s *fakeServer) stopSessions(context.Context) error { return nil }

// fakePool brings up a pool of opt.Size slots of a template with dbs
// databases on the fake f, in a new root. before, when set, runs on the
// pool before its slots start.
func fakePool(t *testing.T, f *fake, dbs int, opt Options, before func(p *Pool)) *Pool {
	t.Helper()
	p := newFakePool(t, f, dbs, opt)
	if before != nil {
		before(p)
	}
	if err := p.up(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p
}

// newFakePool makes a pool of a template with dbs databases on the fake
// f, in a new root, with no slots yet; the test's end brings it down.
func newFakePool(t *testing.T, f *fake, dbs int, opt Options) *Pool {
	t.Helper()
	root, err := rootdir.Open(filepath.Join(t.TempDir(), "root"))
	if err != nil {
		t.Fatal(err)
	}
	m := &catalog.Meta{Name: "app", Hash: strings.Repeat("ab", 32)}
	for i := 0; i < dbs; i++ {
		m.Databases = append(m.Databases, fmt.Sprintf("app_%d", i))
	}
	p := newPool(m, opt, filepath.Join(root.Data(), "pools", m.Hash[:16]), filepath.Join(root.Path, "run", m.Hash[:8]))
	cat, err := catalog.Open(root, cow.NewCopy(root))
	if err != nil {
		t.Fatal(err)
	}
	p.cat, p.backend = cat, cat.Backend()
	p.ops, p.retryEvery = f.ops(), time.Millisecond
	t.Cleanup(func() {
		if err := p.Down(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return p
}

// waitFor waits until cond, called under p.mu, holds.
func waitFor(t *testing.T, p *Pool, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p.mu.Lock()
		ok, wake := cond(), p.wake
		p.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		select {
		case <-wake:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stateOf returns slot i's state and generation.
func stateOf(p *Pool, i int) (State, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slots[i].state, p.slots[i].gen
}

func waitState(t *testing.T, p *Pool, i int, want State) {
	t.Helper()
	waitFor(t, p, fmt.Sprintf("slot %d %s", i, want), func() bool { return p.slots[i].state == want })
}

func wantState(t *testing.T, p *Pool, i int, want State) {
	t.Helper()
	if got, _ := stateOf(p, i); got != want {
		t.Fatalf("slot %d is %s, want %s", i, got, want)
	}
}

func leaseOf(t *testing.T, p *Pool, opt LeaseOptions) *Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := p.Lease(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func release(t *testing.T, p *Pool, id string, mode ReleaseMode, wantReset bool) {
	t.Helper()
	reset, err := p.Release(context.Background(), id, mode)
	if err != nil || reset != wantReset {
		t.Fatalf("release %s: reset=%v err=%v, want reset=%v", id, reset, err, wantReset)
	}
}

// events collects Options.Event.
type events struct {
	mu  sync.Mutex
	got []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ev)
}

func (e *events) count(kind, reason string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.got {
		if ev.Kind == kind && ev.Reason == reason {
			n++
		}
	}
	return n
}

// allStates are the states a slot can be in, none first.
var allStates = []State{none, Starting, Ready, Leased, Resetting, Kept, Failed, Retired}

// TestMoveRefusesIllegalMoves tries every move from every state: those in
// the table are made (state, since, generation), the others refused,
// logged, counted and leave the slot as it was.
func TestMoveRefusesIllegalMoves(t *testing.T) {
	p := newPool(&catalog.Meta{Name: "app"}, Options{Size: 1}, "", "")
	refused := 0
	for _, from := range allStates {
		for _, to := range allStates {
			s := &slot{idx: 3, state: from, gen: 7}
			err := p.move(s, to, "test")
			if legal(from, to) {
				if err != nil || s.state != to || s.gen != 8 || s.since.IsZero() {
					t.Errorf("%q -> %q: err=%v state=%q gen=%d since=%v, want the move made", from, to, err, s.state, s.gen, s.since)
				}
				continue
			}
			refused++
			if !errors.Is(err, errIllegalMove) || s.state != from || s.gen != 7 || !s.since.IsZero() {
				t.Errorf("%q -> %q: err=%v state=%q gen=%d, want it refused and the slot unchanged", from, to, err, s.state, s.gen)
			}
		}
	}
	if p.stats.IllegalMoves != int64(refused) || refused != len(allStates)*len(allStates)-len(moves) {
		t.Errorf("counted %d illegal moves, refused %d, want %d", p.stats.IllegalMoves, refused, len(allStates)*len(allStates)-len(moves))
	}
	// Spot checks of the table against the diagram's promises.
	for _, c := range []struct {
		from, to State
		legal    bool
	}{
		{Ready, Leased, true}, {Leased, Ready, true}, {Resetting, Ready, true}, {Failed, Ready, true},
		{Ready, Resetting, false}, {Retired, Ready, false}, {Resetting, Leased, false}, {Kept, Ready, false},
		{Failed, Failed, false}, {Leased, Leased, false}, {none, Ready, false},
	} {
		if legal(c.from, c.to) != c.legal {
			t.Errorf("legal(%s, %s) = %v, want %v", c.from, c.to, !c.legal, c.legal)
		}
	}
}

// TestMachine drives the state machine through the fake seam.
func TestMachine(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		dbs  int
		run  func(t *testing.T, p *Pool, f *fake, ev *events)
	}{
		{"lease and release dirty", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			wantState(t, p, 0, Leased)
			if l.Port != 20000 || l.Socket != f.server(0).Socket() || l.Clone != "clone-1" {
				t.Errorf("lease %+v: not the slot's server and clone", l)
			}
			release(t, p, l.ID, Dirty, true)
			waitState(t, p, 0, Ready)
			if !f.server(0).killed.Load() {
				t.Error("the released slot's server was not killed")
			}
			l2 := leaseOf(t, p, LeaseOptions{Holder: "t"})
			if l2.Clone != "clone-2" || l2.Port != 20001 || l2.User == l.User {
				t.Errorf("lease after a reset %+v: want a new clone, server and account", l2)
			}
			if _, err := p.Release(context.Background(), l.ID, Dirty); !errors.Is(err, ErrUnknownLease) {
				t.Errorf("second release of %s: %v, want ErrUnknownLease", l.ID, err)
			}
		}},
		{"release unchanged", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			release(t, p, l.ID, Unchanged, false)
			wantState(t, p, 0, Ready)
			l2 := leaseOf(t, p, LeaseOptions{Holder: "t"})
			if f.server(0).killed.Load() || l2.Port != l.Port || l2.User == l.User {
				t.Errorf("after release unchanged: killed=%v lease %+v, want the same server with a new account", f.server(0).killed.Load(), l2)
			}
			if st := p.Status(false); st.Stats.Reused != 1 {
				t.Errorf("reused %d, want 1", st.Stats.Reused)
			}
		}},
		{"release unchanged that changed", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			f.set(func(f *fake) {
				f.recycle = func(context.Context, check, account) (account, check, error) {
					return account{}, check{}, fmt.Errorf("%w: files changed", errChanged)
				}
			})
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			release(t, p, l.ID, Unchanged, true)
			waitState(t, p, 0, Ready)
			if !f.server(0).killed.Load() {
				t.Error("a changed database's server was not replaced")
			}
		}},
		{"databases per slot", 1, 2, func(t *testing.T, p *Pool, f *fake, ev *events) {
			a := leaseOf(t, p, LeaseOptions{Holder: "a"})
			b := leaseOf(t, p, LeaseOptions{Holder: "b"})
			if a.Database == b.Database || a.Slot != b.Slot {
				t.Fatalf("leases %s/%d and %s/%d: want two databases of one slot", a.Database, a.Slot, b.Database, b.Slot)
			}
			release(t, p, a.ID, Unchanged, true) // several databases: never checked
			wantState(t, p, 0, Leased)
			release(t, p, b.ID, Dirty, true)
			waitState(t, p, 0, Ready)
			if !f.server(0).killed.Load() {
				t.Error("the slot was not reset once both databases came back")
			}
		}},
		{"reset failure then replaced", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			var fails atomic.Int32
			f.set(func(f *fake) {
				f.bootErr = func(*slot) error {
					if fails.Add(1) <= 3 {
						return errors.New("no server today")
					}
					return nil
				}
			})
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			release(t, p, l.ID, Dirty, true)
			// The worker clears failing just after the slot is ready.
			waitFor(t, p, "slot 0 replaced", func() bool { return p.slots[0].state == Ready && !p.slots[0].failing })
			st := p.Status(true)
			if st.Stats.ResetFailures != 3 || ev.count(EventSlotDied, ReasonResetFailed) != 1 || st.Slots[0].Error != "" {
				t.Errorf("reset failures %d, reset_failed events %d, error %q: want 3, 1 (once per run), none",
					st.Stats.ResetFailures, ev.count(EventSlotDied, ReasonResetFailed), st.Slots[0].Error)
			}
		}},
		{"reset failure is failed until retried", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			p.retryEvery = time.Hour // one failure, no retry in this test
			f.set(func(f *fake) { f.bootErr = func(*slot) error { return errors.New("no server today") } })
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			release(t, p, l.ID, Dirty, true)
			waitState(t, p, 0, Failed)
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			defer cancel()
			if _, err := p.Lease(ctx, LeaseOptions{}); !errors.Is(err, ErrLeaseTimeout) {
				t.Errorf("lease from a failed pool: %v, want ErrLeaseTimeout", err)
			}
			if got := p.Status(false).States[Failed]; got != 1 {
				t.Errorf("status counts %d failed slots, want 1", got)
			}
		}},
		{"server dies while leased", 2, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			other := leaseOf(t, p, LeaseOptions{Holder: "t"})
			p.mu.Lock()
			srv := p.slots[l.Slot].srv.(*fakeServer)
			p.mu.Unlock()
			srv.die()
			waitFor(t, p, "the lease lost", func() bool { _, ok := p.lost[l.ID]; return ok })
			waitState(t, p, l.Slot, Ready)
			if _, err := p.Release(context.Background(), l.ID, Dirty); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("release of a lost lease: %v, want ErrLeaseLost", err)
			}
			if rec, _ := p.Lost(l.ID); rec.Reason != ReasonKilled {
				t.Errorf("lost for %q, want %q", rec.Reason, ReasonKilled)
			}
			st := p.Status(false)
			if st.Stats.Replaced != 1 || st.Stats.SlotDeaths[ReasonKilled] != 1 || ev.count(EventLeaseLost, ReasonKilled) != 1 {
				t.Errorf("replaced %d, deaths %v, lease_lost events %d: want 1 each", st.Stats.Replaced, st.Stats.SlotDeaths, ev.count(EventLeaseLost, ReasonKilled))
			}
			if _, ok := p.Get(other.ID); !ok {
				t.Error("the other slot's lease went with the dead slot")
			}
		}},
		{"server dies while ready", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			_, gen := stateOf(p, 0)
			f.server(0).die()
			waitFor(t, p, "a new server", func() bool { return p.slots[0].state == Ready && p.slots[0].gen > gen+1 })
			if st := p.Status(false); st.Stats.Replaced != 1 || st.Stats.LeasesLost[ReasonKilled] != 0 {
				t.Errorf("replaced %d, leases lost %v: want 1 and none", st.Stats.Replaced, st.Stats.LeasesLost)
			}
			leaseOf(t, p, LeaseOptions{Holder: "t"})
		}},
		{"a server the pool killed is not a death", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			release(t, p, l.ID, Dirty, true)
			waitState(t, p, 0, Ready)
			if st := p.Status(false); st.Stats.Replaced != 0 || len(st.Stats.SlotDeaths) != 0 {
				t.Errorf("replaced %d, deaths %v after a reset: want none", st.Stats.Replaced, st.Stats.SlotDeaths)
			}
		}},
		{"keep", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			l := leaseOf(t, p, LeaseOptions{Holder: "t", TTL: time.Minute})
			if _, err := p.Keep(l.ID); err != nil {
				t.Fatal(err)
			}
			wantState(t, p, 0, Kept)
			_, gen := stateOf(p, 0)
			if _, err := p.Keep(l.ID); err != nil {
				t.Fatal(err)
			}
			if st, g := stateOf(p, 0); st != Kept || g != gen {
				t.Errorf("keep again: %s gen %d, want kept gen %d (no move)", st, g, gen)
			}
			p.reap(time.Now().Add(time.Hour))
			if _, ok := p.Get(l.ID); !ok {
				t.Fatal("a kept lease expired")
			}
			release(t, p, l.ID, Unchanged, true) // kept: never checked
			waitState(t, p, 0, Ready)
		}},
		{"shrink retires ready slots only", 3, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			if n := p.Shrink(3); n != 2 {
				t.Errorf("shrink retired %d slots, want 2", n)
			}
			wantState(t, p, l.Slot, Leased)
			if p.Live() != 1 {
				t.Errorf("%d live slots, want 1", p.Live())
			}
			for i := 0; i < 3; i++ {
				if st, _ := stateOf(p, i); st == Retired && !p.slots[i].srv.(*fakeServer).killed.Load() {
					t.Errorf("retired slot %d's server still runs", i)
				}
			}
			release(t, p, l.ID, Dirty, true)
			waitState(t, p, l.Slot, Ready)
			if p.Shrink(1) != 1 || p.Live() != 0 {
				t.Errorf("the last slot was not retired once free")
			}
		}},
		{"TTL expiry", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			l := leaseOf(t, p, LeaseOptions{Holder: "t", TTL: time.Minute})
			p.reap(time.Now())
			if _, ok := p.Get(l.ID); !ok {
				t.Fatal("a lease expired before its TTL")
			}
			p.reap(time.Now().Add(2 * time.Minute))
			if rec, ok := p.Lost(l.ID); !ok || rec.Reason != ReasonExpired {
				t.Fatalf("lost %v %q, want reason %q", ok, rec.Reason, ReasonExpired)
			}
			waitState(t, p, 0, Ready)
			if st := p.Status(false); st.Stats.Expired != 1 || !f.server(0).killed.Load() {
				t.Errorf("expired %d, server killed %v: want 1, true", st.Stats.Expired, f.server(0).killed.Load())
			}
		}},
		{"stale release check dropped", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			entered, gate := make(chan struct{}), make(chan struct{})
			stale := account{user: "lease_stale", password: "x"}
			f.set(func(f *fake) {
				f.recycle = func(_ context.Context, was check, _ account) (account, check, error) {
					close(entered)
					<-gate
					return stale, was, nil // "unchanged", but for a server that is gone
				}
			})
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			type result struct {
				reset bool
				err   error
			}
			done := make(chan result)
			go func() {
				reset, err := p.Release(context.Background(), l.ID, Unchanged)
				done <- result{reset, err}
			}()
			<-entered
			old := f.server(0)
			old.die() // the slot dies during the check and is replaced
			waitFor(t, p, "a new server", func() bool { return p.slots[0].state == Ready && p.slots[0].srv != server(old) })
			close(gate)
			if r := <-done; r.err != nil || !r.reset {
				t.Errorf("release during a death: reset=%v err=%v, want reset=true", r.reset, r.err)
			}
			p.mu.Lock()
			acct, spent := p.slots[0].units[0].acct, p.slots[0].units[0].spent
			p.mu.Unlock()
			if acct == stale || spent || p.Status(false).Stats.Reused != 0 {
				t.Errorf("the stale check's account was applied to the new server (account %v, spent %v)", acct, spent)
			}
			wantState(t, p, 0, Ready)
		}},
		{"stale reset dropped", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			gate, booting := make(chan struct{}), make(chan int, 1)
			f.set(func(f *fake) { f.bootGate, f.booting = gate, booting })
			release(t, p, l.ID, Dirty, true)
			<-booting
			p.mu.Lock()
			// Something else moves the slot while its reset runs.
			if err := p.move(p.slots[0], Failed, "test"); err != nil {
				t.Fatal(err)
			}
			_, gen := p.slots[0].state, p.slots[0].gen
			p.mu.Unlock()
			close(gate)
			waitFor(t, p, "the reset's server", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.servers) == 2 })
			waitFor(t, p, "the reset's server killed", func() bool { return f.server(1).killed.Load() })
			if st, g := stateOf(p, 0); st != Failed || g != gen {
				t.Errorf("slot is %s gen %d after a stale reset, want failed gen %d", st, g, gen)
			}
			p.mu.Lock()
			srv := p.slots[0].srv
			p.mu.Unlock()
			if srv != nil {
				t.Errorf("the stale reset's server was published")
			}
		}},
		{"stale disk check dropped", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			p.mu.Lock()
			p.opt.SlotDisk = 1 << 20 // the watch goroutine is not running: checkDisk is called here
			p.mu.Unlock()
			over := func(string) int64 { return 1 << 30 }
			f.set(func(f *fake) { f.used = over })
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			// Not stale: the slot is frozen.
			p.checkDisk()
			if !f.server(0).frozen.Load() || p.Status(false).Stats.OverCap != 1 {
				t.Fatal("a slot over its cap was not frozen")
			}
			release(t, p, l.ID, Dirty, true)
			waitState(t, p, 0, Ready)
			l = leaseOf(t, p, LeaseOptions{Holder: "t"})
			entered, gate := make(chan struct{}), make(chan struct{})
			f.set(func(f *fake) {
				f.used = func(string) int64 { close(entered); <-gate; return 1 << 30 }
			})
			done := make(chan bool)
			go func() { done <- p.checkDisk() }()
			<-entered
			release(t, p, l.ID, Dirty, true) // the slot moves on while its disk is added up
			waitState(t, p, 0, Ready)
			close(gate)
			<-done
			p.mu.Lock()
			overCap := p.slots[0].overCap
			p.mu.Unlock()
			if overCap || f.server(1).frozen.Load() || f.server(2).frozen.Load() || p.Status(false).Stats.OverCap != 1 {
				t.Error("a stale disk check froze a slot that had moved on")
			}
		}},
		{"background check: answered first, leased after", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			entered, gate := make(chan struct{}), make(chan struct{})
			f.set(func(f *fake) {
				f.recycle = func(ctx context.Context, was check, _ account) (account, check, error) {
					close(entered)
					select {
					case <-gate:
					case <-ctx.Done(): // the test failed and brings the pool down
					}
					return account{user: "lease_next", password: "x"}, was, nil
				}
			})
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			if checking, err := p.ReleaseAsync(l.ID, Unchanged); err != nil || !checking {
				t.Fatalf("release in the background: checking=%v err=%v, want checking", checking, err)
			}
			<-entered // the release has answered; the check runs
			if _, err := p.Release(context.Background(), l.ID, Unchanged); !errors.Is(err, ErrUnknownLease) {
				t.Errorf("a second release during the check: %v, want ErrUnknownLease", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if got, err := p.Lease(ctx, LeaseOptions{}); !errors.Is(err, ErrLeaseTimeout) {
				if got != nil {
					got.Password = "" // not in the failure message
				}
				t.Fatalf("a lease during the check got %v (%v): the slot was handed out before its check ended", got, err)
			}
			wantState(t, p, 0, Leased)
			close(gate)
			next := leaseOf(t, p, LeaseOptions{Holder: "next"})
			if next.User != "lease_next" || p.Status(false).Stats.Reused != 1 {
				t.Errorf("after the check: user %s, reused %d, want the check's new account and 1", next.User, p.Status(false).Stats.Reused)
			}
		}},
		{"background check: down cancels it", 1, 1, func(t *testing.T, p *Pool, f *fake, ev *events) {
			entered := make(chan struct{})
			f.set(func(f *fake) {
				f.recycle = func(ctx context.Context, was check, _ account) (account, check, error) {
					close(entered)
					<-ctx.Done() // a check that would run for ever, but for Down
					return account{}, check{}, ctx.Err()
				}
			})
			l := leaseOf(t, p, LeaseOptions{Holder: "t"})
			if _, err := p.ReleaseAsync(l.ID, Unchanged); err != nil {
				t.Fatal(err)
			}
			<-entered
			down := make(chan error)
			go func() { down <- p.Down(context.Background()) }()
			select {
			case err := <-down:
				if err != nil {
					t.Fatalf("pool down during a background check: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("pool down waits for ever on a background check")
			}
			if !f.server(0).killed.Load() {
				t.Error("pool down left the checked slot's server running")
			}
			if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
				t.Errorf("pool down left %s (%v)", p.dir, err)
			}
			if st := p.Status(false).Stats; st.Reused != 0 {
				t.Errorf("a cancelled check reused the slot (%d)", st.Reused)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{}
			ev := &events{}
			p := fakePool(t, f, tc.dbs, Options{Size: tc.size, Event: ev.add}, nil)
			for i := range p.slots {
				wantState(t, p, i, Ready)
			}
			tc.run(t, p, f, ev)
			if n := p.Status(false).Stats.IllegalMoves; n != 0 {
				t.Errorf("%d illegal moves refused", n)
			}
		})
	}
}

// TestMachineRestore restarts slots on their clones with the leases of a
// previous daemon (Options.Restore).
func TestMachineRestore(t *testing.T) {
	f := &fake{lostAccount: map[string]bool{"lease_gone": true}}
	ev := &events{}
	created := time.Now().UTC()
	leases := []Lease{
		{ID: "kept", Slot: 0, Database: "app_0", User: "lease_kept", Password: "k", Clone: "old-0", Kept: true, Created: created},
		{ID: "held", Slot: 1, Database: "app_0", User: "lease_held", Password: "h", Clone: "old-1", Created: created},
		{ID: "older", Slot: 1, Database: "app_0", User: "lease_older", Password: "o", Clone: "old-1", Created: created.Add(-time.Minute)},
		{ID: "noaccount", Slot: 2, Database: "app_0", User: "lease_gone", Password: "g", Clone: "old-2", Created: created},
		{ID: "replaced", Slot: 3, Database: "app_0", User: "lease_r", Password: "r", Clone: "not-the-clone", Created: created},
		{ID: "gone", Slot: 9, Database: "app_0", User: "lease_x", Password: "x", Clone: "old-9", Created: created},
	}
	p := fakePool(t, f, 1, Options{Size: 4, Restore: leases, Event: ev.add, ResetWorkers: 1}, func(p *Pool) {
		for i := 0; i < 4; i++ {
			dir := filepath.Join(p.dir, fmt.Sprintf("%03d", i))
			if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, cloneIDFile), []byte(fmt.Sprintf("old-%d\n", i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	wantState(t, p, 0, Kept)
	wantState(t, p, 1, Leased)
	waitState(t, p, 2, Ready) // its only lease lost: reset
	wantState(t, p, 3, Ready)
	for _, c := range []struct {
		id, reason string
	}{
		{"older", ReasonSuperseded}, {"noaccount", ReasonNoAccount}, {"replaced", ReasonCloneReplaced}, {"gone", ReasonCloneReplaced},
	} {
		if rec, ok := p.Lost(c.id); !ok || rec.Reason != c.reason {
			t.Errorf("lease %s: lost=%v reason %q, want %q", c.id, ok, rec.Reason, c.reason)
		}
	}
	held, ok := p.Get("held")
	p.mu.Lock()
	port := p.slots[1].port
	p.mu.Unlock()
	if !ok || held.Port != port || held.User != "lease_held" || held.Clone != "old-1" {
		t.Fatalf("restored lease %+v (found %v): want it on slot 1's new server with its account and clone", held, ok)
	}
	// A restored lease cannot be checked: it is reset.
	release(t, p, "held", Unchanged, true)
	waitState(t, p, 1, Ready)
	release(t, p, "kept", Dirty, true)
	waitState(t, p, 0, Ready)
	p.mu.Lock()
	spent := p.slots[3].units[0].spent
	p.mu.Unlock()
	if spent {
		t.Error("a slot whose lease was never restored came up spent")
	}
	if n := p.Status(false).Stats.IllegalMoves; n != 0 {
		t.Errorf("%d illegal moves refused", n)
	}
}

// TestStateDiagram checks that the package doc and docs/architecture.md
// draw exactly the table of moves.
func TestStateDiagram(t *testing.T) {
	name := func(s State) string {
		if s == none {
			return "[*]"
		}
		return string(s)
	}
	var mermaid, plain strings.Builder
	mermaid.WriteString("```mermaid\nstateDiagram-v2\n")
	for _, e := range moves {
		fmt.Fprintf(&mermaid, "    %s --> %s: %s\n", name(e.from), name(e.to), e.why)
		fmt.Fprintf(&plain, "//\t%s -> %s: %s\n", name(e.from), name(e.to), e.why)
	}
	mermaid.WriteString("```\n")
	for _, c := range []struct{ file, want string }{
		{"../../docs/architecture.md", mermaid.String()},
		{"slot.go", plain.String()},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) {
			t.Errorf("%s does not draw the table of moves; it should hold:\n%s", c.file, c.want)
		}
	}
}
