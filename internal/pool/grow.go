package pool

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
)

// MaxSlots is the most slots a pool may have, counting the ones it grew.
const MaxSlots = 4096

// ErrTooLarge is returned (wrapped) by Grow for a size over MaxSlots.
var ErrTooLarge = errors.New("pool size over the limit")

// Slots is how many slots the pool has made, retired ones included: the
// numbers of its slots run from 0 to Slots-1.
func (p *Pool) Slots() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.slots)
}

// Base is the size the pool was brought up with: the slots idle shrinking
// (ShrinkIdle) leaves standing.
func (p *Pool) Base() int { return p.opt.Size }

// Grow makes the pool at least want slots large: retired slots start again
// and new ones are added, each cloned and started in the background, and
// each handed to waiting lease requests as soon as its server answers. It
// returns how many slots it added (0 when the pool has want already,
// counting slots still starting). A slot that does not start is retired
// again and logged. Grow does not check memory or disk: its caller does.
func (p *Pool) Grow(want int) (int, error) { return p.grow(want, false) }

// grow is Grow; forWait marks a growth for waiting lease requests
// (spares.go), which does not move the pool's asked-for size.
func (p *Pool) grow(want int, forWait bool) (int, error) {
	if want > MaxSlots {
		return 0, fmt.Errorf("%w: %d slots asked for, at most %d", ErrTooLarge, want, MaxSlots)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	if !forWait {
		p.spares.asked = max(p.spares.asked, want)
	}
	live := 0
	for _, s := range p.slots {
		if s.state != Retired {
			live++
		}
	}
	var added []*slot
	for _, s := range p.slots {
		if live+len(added) >= want {
			break
		}
		if s.state == Retired && !s.retiring && p.move(s, Starting, "grown again") == nil {
			s.srv = nil // killed when it retired
			added = append(added, s)
		}
	}
	for live+len(added) < want {
		i := len(p.slots)
		s := &slot{idx: i, dir: filepath.Join(p.dir, fmt.Sprintf("%03d", i)), run: filepath.Join(p.run, strconv.Itoa(i))}
		for _, db := range p.Meta.Databases {
			s.units = append(s.units, unit{db: db})
		}
		if err := p.move(s, Starting, "grown"); err != nil {
			break
		}
		p.slots = append(p.slots, s)
		added = append(added, s)
	}
	if len(added) == 0 {
		return 0, nil
	}
	p.stats.Grown += int64(len(added))
	if forWait {
		p.stats.GrownForWaits += int64(len(added))
	}
	p.log.Info("pool growing", "template", p.Meta.Name, "slots", len(added), "to", live+len(added), "base", p.opt.Size)
	p.wg.Add(1)
	go p.startGrown(added)
	return len(added), nil
}

// startGrown clones and starts slots Grow added, opt.Parallel at a time;
// Down cancels it.
func (p *Pool) startGrown(slots []*slot) {
	defer p.wg.Done()
	ctx, cancel := p.stopContext()
	defer cancel()
	var g errgroup.Group
	g.SetLimit(p.opt.Parallel)
	for _, s := range slots {
		g.Go(func() error {
			p.mu.Lock()
			gen := s.gen
			p.mu.Unlock()
			if err := p.startSlot(ctx, s, gen); err != nil {
				p.growFailed(s, gen, err)
			}
			return nil // a slot that did not start is retired, the others go on
		})
	}
	_ = g.Wait()
}

// growFailed retires a grown slot whose server did not start.
func (p *Pool) growFailed(s *slot, gen uint64, err error) {
	p.mu.Lock()
	ok := s.gen == gen && !p.closed && p.move(s, Retired, "a grown slot did not start") == nil
	if ok {
		s.retiring = true
		s.err = err.Error()
		p.log.Warn("a grown slot did not start", "template", p.Meta.Name, "slot", s.idx, "err", err.Error())
	}
	srv := s.srv
	s.srv = nil
	p.mu.Unlock()
	if !ok {
		return
	}
	if srv != nil {
		srv.kill()
	}
	removed := p.dropGroup(s.idx) == nil && p.backend.Remove(filepath.Join(s.dir, "data")) == nil
	if removed {
		p.releaseID(s)
	}
	p.mu.Lock()
	s.retiring = !removed
	p.signal()
	p.mu.Unlock()
}

// ShrinkIdle retires ready slots that have been ready, unused, for idle
// or longer, newest slot first, while the pool has more live slots than
// its base size (the slots Grow added go again once idle). It returns how
// many it retired.
func (p *Pool) ShrinkIdle(idle time.Duration, now time.Time) int {
	var doomed []*slot
	p.mu.Lock()
	live := 0
	for _, s := range p.slots {
		if s.state != Retired {
			live++
		}
	}
	for i := len(p.slots) - 1; i >= 0 && live-len(doomed) > p.opt.Size; i-- {
		s := p.slots[i]
		if s.state == Ready && now.Sub(s.since) >= idle && p.move(s, Retired, "idle shrink") == nil {
			s.retiring = true
			doomed = append(doomed, s)
		}
	}
	if len(doomed) > 0 {
		p.stats.ShrunkIdle += int64(len(doomed))
	}
	p.mu.Unlock()
	p.retire(doomed)
	return len(doomed)
}
