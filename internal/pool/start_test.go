package pool

// Unit tests of the pool's start (start.go) on the fakes of
// machine_test.go: leases served while the pool comes up, Start returning
// at MinReady, slots that fail before and after, Down during the start.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// gatedBoots holds each slot's boot until its gate is opened (or the
// boot's context ends) and reports every boot that waits on booting.
type gatedBoots struct {
	gates   []chan struct{}
	booting chan int
}

func gateBoots(p *Pool, n int) *gatedBoots {
	g := &gatedBoots{booting: make(chan int, n)}
	for range n {
		g.gates = append(g.gates, make(chan struct{}))
	}
	boot := p.ops.boot
	p.ops.boot = func(ctx context.Context, s *slot) (*booted, error) {
		g.booting <- s.idx
		select {
		case <-g.gates[s.idx]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return boot(ctx, s)
	}
	return g
}

func (g *gatedBoots) open(i ...int) {
	for _, n := range i {
		close(g.gates[n])
	}
}

// startAsync runs p.Start in the background; its result comes on the
// channel.
func startAsync(p *Pool) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- p.Start(context.Background()) }()
	return errc
}

// leaseAsync asks for a lease in the background, waiting up to a minute.
func leaseAsync(p *Pool) (<-chan *Lease, <-chan error) {
	lc, errc := make(chan *Lease, 1), make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l, err := p.Lease(ctx, LeaseOptions{Holder: "test"})
		if err != nil {
			errc <- err
			return
		}
		lc <- l
	}()
	return lc, errc
}

// TestLeaseWhileComingUp: a lease asked for before any slot started waits
// for the pool's start and is served by the first slot that answers (the
// first slot, started alone), and the next by whichever answers next,
// while Start, waiting for every slot, has not returned yet.
func TestLeaseWhileComingUp(t *testing.T) {
	f := &fake{}
	p := newFakePool(t, f, 1, Options{Size: 4, Parallel: 4})
	if err := p.makeSlots(); err != nil {
		t.Fatal(err)
	}
	g := gateBoots(p, 4)
	lc, lerr := leaseAsync(p) // before Start: nothing is starting yet
	started := startAsync(p)
	<-g.booting // the first slot starts alone
	g.open(0)
	var l *Lease
	select {
	case l = <-lc:
	case err := <-lerr:
		t.Fatalf("lease while the pool comes up: %v", err)
	}
	if l.Slot != 0 {
		t.Fatalf("lease got slot %d, want slot 0, the only one that answered", l.Slot)
	}
	for range 3 {
		<-g.booting // the rest of the round waits on its gates
	}
	select {
	case err := <-started:
		t.Fatalf("Start returned (%v) with 3 slots still starting; it waits for all of them", err)
	default:
	}
	for _, i := range []int{1, 2, 3} {
		wantState(t, p, i, Starting)
	}
	wantState(t, p, 0, Leased)
	// A second lease is served by whichever answers next.
	lc, lerr = leaseAsync(p)
	g.open(2)
	select {
	case l = <-lc:
	case err := <-lerr:
		t.Fatalf("second lease while the pool comes up: %v", err)
	}
	if l.Slot != 2 {
		t.Fatalf("second lease got slot %d, want slot 2, the only other one that answered", l.Slot)
	}
	g.open(1, 3)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if st := p.Status(false); st.States[Ready] != 2 || st.States[Leased] != 2 || st.Stats.UpSeconds <= 0 {
		t.Fatalf("after the start: %v, up %.3fs; want 2 ready, 2 leased and the up time", st.States, st.Stats.UpSeconds)
	}
}

// TestStartAtMinReady: Start returns once MinReady slots answered; the
// others come up in the background, progress reported until the last. A
// slot that then fails to start is Failed with its error and an event,
// retried, and ready once it starts; leases meanwhile go to the others.
func TestStartAtMinReady(t *testing.T) {
	f := &fake{}
	ev := &events{}
	var progress []int
	p := newFakePool(t, f, 1, Options{Size: 4, Parallel: 4, MinReady: 1, Event: ev.add,
		Progress: func(ready, total int) { progress = append(progress, ready) }})
	if err := p.makeSlots(); err != nil {
		t.Fatal(err)
	}
	g := gateBoots(p, 4)
	fail := errors.New("no room for the server")
	f.set(func(f *fake) {
		f.bootErr = func(s *slot) error {
			if s.idx == 3 {
				return fail
			}
			return nil
		}
	})
	started := startAsync(p)
	<-g.booting
	g.open(0)
	if err := <-started; err != nil {
		t.Fatalf("Start with one slot of MinReady 1 ready: %v", err)
	}
	wantState(t, p, 0, Ready)
	for range 3 {
		<-g.booting
	}
	wantState(t, p, 1, Starting)
	if l := leaseOf(t, p, LeaseOptions{Holder: "first"}); l.Slot != 0 {
		t.Fatalf("first lease on slot %d, want 0", l.Slot)
	}
	g.open(1, 2, 3)
	waitState(t, p, 3, Failed)
	st := p.Status(true)
	if !strings.Contains(st.Slots[3].Error, fail.Error()) || ev.count(EventSlotDied, ReasonStartFailed) != 1 {
		t.Fatalf("slot 3 failed to start: status error %q, %d start_failed events; want the error and one event", st.Slots[3].Error, ev.count(EventSlotDied, ReasonStartFailed))
	}
	f.set(func(f *fake) { f.bootErr = nil })
	<-g.booting // the retry
	waitState(t, p, 3, Ready)
	waitState(t, p, 1, Ready)
	waitState(t, p, 2, Ready)
	waitFor(t, p, "the start's end", func() bool { return p.start.done })
	if len(progress) != 3 || progress[len(progress)-1] != 3 {
		t.Errorf("progress %v: want 1, 2, 3 (slot 3 came up by its retry)", progress)
	}
	if n := p.Status(false).Stats.IllegalMoves; n != 0 {
		t.Errorf("%d illegal moves refused", n)
	}
}

// TestStartFailsBeforeMinReady: a slot that fails before MinReady slots
// answered fails the start; the pool goes down and a lease that waited
// for it is told why, at once.
func TestStartFailsBeforeMinReady(t *testing.T) {
	f := &fake{}
	p := newFakePool(t, f, 1, Options{Size: 3, Parallel: 3, MinReady: 2})
	if err := p.makeSlots(); err != nil {
		t.Fatal(err)
	}
	g := gateBoots(p, 3)
	f.set(func(f *fake) {
		f.bootErr = func(s *slot) error {
			if s.idx == 0 {
				return errors.New("the template is damaged")
			}
			return nil
		}
	})
	_, lerr := leaseAsync(p)
	started := startAsync(p)
	<-g.booting
	g.open(0) // the first slot fails
	if err := <-started; err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("Start with a slot failing before MinReady = %v, want its error", err)
	}
	if err := <-lerr; !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "did not come up") {
		t.Fatalf("lease waiting for a pool that failed to come up = %v, want ErrClosed saying why", err)
	}
	if len(f.servers) != 0 {
		t.Errorf("%d servers started after the start failed", len(f.servers))
	}
}

// TestDownDuringStart: Down while slots are still starting in the
// background stops the start and waits for it: a server whose start
// finishes while Down runs (its boot past the point where the context is
// checked) is killed too, and no slot's start outlives Down.
func TestDownDuringStart(t *testing.T) {
	f := &fake{}
	p := newFakePool(t, f, 1, Options{Size: 6, Parallel: 2, MinReady: 1})
	if err := p.makeSlots(); err != nil {
		t.Fatal(err)
	}
	g := gateBoots(p, 6)
	// Slot 2's boot is past its last look at the context: only its gate
	// ends it.
	late := make(chan struct{})
	gated := p.ops.boot
	p.ops.boot = func(ctx context.Context, s *slot) (*booted, error) {
		if s.idx != 2 {
			return gated(ctx, s)
		}
		g.booting <- s.idx
		<-late
		return f.boot(context.Background(), s)
	}
	started := startAsync(p)
	<-g.booting
	g.open(0)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	<-g.booting // the rest of the first round
	g.open(1)
	<-g.booting // slots 2 and 3 start in the background
	<-g.booting
	downDone := make(chan error, 1)
	go func() { downDone <- p.Down(context.Background()) }()
	waitFor(t, p, "Down to begin", func() bool { return p.closed })
	// Down must wait for slot 2's start; one that does not is back by now
	// (the fake's Down takes at most its janitor's tick, 250 ms), before
	// the late server.
	returned := false
	select {
	case err := <-downDone:
		returned = true
		t.Error("Down returned while a slot's start was still under way")
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
	}
	close(late) // slot 2's server comes up now
	if !returned {
		if err := <-downDone; err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, p, "the start's end", func() bool { return p.start.done })
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.servers) != 3 {
		t.Fatalf("%d servers started, want 3 (slots 0, 1 and the late 2)", len(f.servers))
	}
	for i, s := range f.servers {
		if !s.killed.Load() {
			t.Errorf("server %d left running after Down", i)
		}
	}
}
