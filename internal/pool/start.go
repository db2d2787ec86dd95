package pool

// The pool's start. Start runs in the background and returns once
// Options.MinReady slots answered; the rest keep starting after it, each
// leasable the moment its server answers (publish wakes waiting lease
// requests). Slots start in order of need, Options.Parallel at a time:
// the first slot alone, then the rest of the first round, each cloned and
// started at once, so the first lease waits for one clone and one
// uncrowded start, not for every slot's clone; then the rest, all cloned
// before any server of them starts: a btrfs snapshot commits the
// filesystem's transaction, which is quick only while no server is
// writing, so those snapshots are taken while the first round's servers
// sit idle, not while servers start. On btrfs the rest's clones are
// snapshotted many at once (snapParallel): the snapshots asked for
// together share their commits.
//
// A slot that does not start before MinReady slots answered fails the
// start: Start brings the pool down and returns the error. One that does
// not start after is Failed (logged, in Status with its error) and
// retried every second, as a failed reset is; leases go on with the
// others.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// startState is where the pool's start is; guarded by p.mu.
type startState struct {
	began time.Time
	want  int // the slots Start waits for (Options.MinReady)
	total int // the slots it starts
	ready int // the slots that answered in the start
	// err is the first failure before want slots answered: the start
	// failed with it.
	err error
	// settled is set once want slots answered: Start returned, and a
	// slot that fails now is retried.
	settled bool
	// done is set once every slot's start is over.
	done bool
}

// Start starts the pool's slots in the background, in order of need, and
// returns once Options.MinReady of them answered (every slot when
// MinReady is 0 or more than the pool has). The others go on starting
// after it returns. When a slot fails before then, ctx ends first, or the
// pool is brought down meanwhile, Start brings the pool down (whatever
// was started stopped and removed) and returns why.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	if !p.start.began.IsZero() {
		p.mu.Unlock()
		return fmt.Errorf("the pool of %s was started already", p.Meta.Name)
	}
	slots := append([]*slot(nil), p.slots...)
	want := p.opt.MinReady
	if want <= 0 || want > len(slots) {
		want = len(slots)
	}
	p.start = startState{began: time.Now(), want: want, total: len(slots)}
	p.lastLease = time.Now()
	for i := 0; i < p.opt.ResetWorkers; i++ {
		p.wg.Add(1)
		go p.resetWorker()
	}
	p.wg.Add(1)
	go p.janitor()
	if p.opt.SlotDisk > 0 {
		p.wg.Add(1)
		go p.diskWatch()
	}
	p.wg.Add(1)
	go p.startAll(slots, min(len(slots), p.opt.Parallel))
	p.mu.Unlock()
	if err := p.waitStarted(ctx); err != nil {
		_ = p.Down(context.Background())
		return err
	}
	return nil
}

// waitStarted waits until the start settled (MinReady slots answered),
// failed, the pool went down, or ctx ended.
func (p *Pool) waitStarted(ctx context.Context) error {
	for {
		p.mu.Lock()
		st, closed, wake := p.start, p.closed, p.wake
		p.mu.Unlock()
		switch {
		case st.err != nil:
			return st.err
		case st.settled:
			return nil
		case closed:
			return fmt.Errorf("%w: the pool of %s was brought down while it was coming up", ErrClosed, p.Meta.Name)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// startAll starts slots, opt.Parallel at a time: the first slot alone, so
// the first lease does not share the CPU with other starts; then the rest
// of the first round (lead slots), each cloned and booted at once, their
// server ids claimed in one pass before; then the rest, all cloned before
// any is booted, cloneParallel at a time. Down cancels it.
func (p *Pool) startAll(slots []*slot, lead int) {
	defer p.wg.Done()
	ctx, cancel := p.stopContext()
	defer cancel()
	gens := make([]uint64, len(slots))
	p.mu.Lock()
	for i, s := range slots {
		gens[i] = s.gen
	}
	p.mu.Unlock()
	failed := make([]bool, len(slots))
	var progress sync.Mutex
	clone := func(ctx context.Context, i int) {
		if err := p.cloneForStart(ctx, slots[i]); err != nil {
			failed[i] = true
			p.startFailed(slots[i], gens[i], err)
		}
	}
	boot := func(ctx context.Context, i int) {
		if failed[i] || ctx.Err() != nil {
			return
		}
		if err := p.bootForStart(ctx, slots[i], gens[i]); err != nil {
			p.startFailed(slots[i], gens[i], err)
			return
		}
		progress.Lock()
		defer progress.Unlock()
		if n, total := p.started(); p.opt.Progress != nil && ctx.Err() == nil {
			p.opt.Progress(n, total)
		}
	}
	for n, round := range [][2]int{{0, min(1, lead)}, {min(1, lead), lead}} {
		if n == 1 && len(slots) > 1 && p.ops.claimIDs != nil {
			p.ops.claimIDs(slots[1:]) // after the first slot: it needs one id only
		}
		p.each(ctx, round, func(ctx context.Context, i int) { clone(ctx, i); boot(ctx, i) })
	}
	rest := [2]int{lead, len(slots)}
	p.eachLimit(ctx, rest, p.cloneParallel(), clone)
	p.each(ctx, rest, boot)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start.done = true
	if p.stats.UpSeconds == 0 { // some slot failed: its retries are not waited for
		p.stats.UpSeconds = time.Since(p.start.began).Seconds()
	}
	p.signal()
}

// each runs f on the slots numbered wave[0] to wave[1]-1, opt.Parallel at
// a time, none once ctx ended.
func (p *Pool) each(ctx context.Context, wave [2]int, f func(ctx context.Context, i int)) {
	p.eachLimit(ctx, wave, p.opt.Parallel, f)
}

// snapParallel is how many slots' clones are snapshotted at once
// in the start's clone phase. A btrfs snapshot is taken in a commit of
// the filesystem's transaction, and every snapshot asked for while a
// commit is being prepared is taken in that one commit: many at once
// share a few commits, where Options.Parallel at a time pay one commit
// each (the commits, not the snapshots, are what the clone phase waits
// for).
const snapParallel = 64

// cloneParallel is how many slots the start's clone phase clones at once:
// snapParallel on btrfs, Options.Parallel on backends whose clone is work
// per file (a reflink or a copy), which many at once would only crowd.
func (p *Pool) cloneParallel() int {
	if p.backend != nil && p.backend.Name() == "btrfs" {
		return snapParallel
	}
	return p.opt.Parallel
}

// eachLimit is each with limit at a time.
func (p *Pool) eachLimit(ctx context.Context, wave [2]int, limit int, f func(ctx context.Context, i int)) {
	var g errgroup.Group
	g.SetLimit(max(limit, 1))
	for i := wave[0]; i < wave[1]; i++ {
		g.Go(func() error {
			if ctx.Err() == nil {
				f(ctx, i)
			}
			return nil
		})
	}
	_ = g.Wait()
}

// cloneForStart clones the template for slot s, or keeps the clone its
// restored leases were using (a daemon restart).
func (p *Pool) cloneForStart(ctx context.Context, s *slot) error {
	if len(s.restore) > 0 {
		if _, err := os.Stat(filepath.Join(s.dir, "data")); err == nil {
			return nil // restart on the clone its leases were using
		}
		p.loseRestore(s, ReasonCloneReplaced, fmt.Sprintf("slot %d's clone was gone when the daemon restarted", s.idx))
	}
	return p.ops.clone(ctx, s)
}

// bootForStart starts slot s's server on its clone; a slot that does not
// start again on the clone of its restored leases loses them and starts
// afresh.
func (p *Pool) bootForStart(ctx context.Context, s *slot, gen uint64) error {
	err := p.bootSlot(ctx, s, gen)
	if err != nil && len(s.restore) > 0 && ctx.Err() == nil {
		p.loseRestore(s, ReasonRestoreFailed, fmt.Sprintf("slot %d did not start again on its clone after a daemon restart: %v", s.idx, err))
		err = p.startSlot(ctx, s, gen)
	}
	return err
}

// started counts a slot that answered in the start and settles the start
// once enough did; it returns the slots started and the pool's slots.
func (p *Pool) started() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start.ready++
	if p.start.ready == p.start.total {
		p.stats.UpSeconds = time.Since(p.start.began).Seconds()
	}
	if p.start.ready >= p.start.want && p.start.err == nil && !p.start.settled {
		p.start.settled = true
		p.signal()
	}
	return p.start.ready, p.start.total
}

// startFailed records a slot whose start failed. Before MinReady slots
// answered, the start fails with err (Start brings the pool down). After,
// the slot is Failed, logged and retried every second. A slot that moved
// on meanwhile, or a pool going down, is left alone.
func (p *Pool) startFailed(s *slot, gen uint64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || s.gen != gen {
		return
	}
	if !p.start.settled {
		if p.start.err == nil {
			p.start.err = err
			p.signal()
		}
		return
	}
	p.slotFailed(s, err, "its first start failed", ReasonStartFailed, "start failed (retried every second): ")
}

// stopContext is a context Down cancels (it closes p.stop).
func (p *Pool) stopContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// comingUp says how many of the pool's slots are still starting in the
// pool's start, for a lease request that found none free; "" once the
// start is over. The caller holds p.mu.
func (p *Pool) comingUp() string {
	if p.start.done || p.start.began.IsZero() {
		return ""
	}
	n := 0
	for _, s := range p.slots {
		if s.state == Starting {
			n++
		}
	}
	return fmt.Sprintf("; the pool is still coming up (%d of %d slots starting)", n, len(p.slots))
}
