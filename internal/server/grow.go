package server

import (
	"fmt"
	"time"

	"github.com/pristinedb/pristine/internal/pool"
)

// DefaultShrinkAfter is how long a slot a pool grew beyond its base size
// (a lease's min_size, or pool up of a larger size) may stay ready and
// unused before it is retired (`serve --shrink-after`): long enough that
// back-to-back runs of a suite find their slots, short enough that an
// afternoon's one large run does not hold memory until the evening.
const DefaultShrinkAfter = 5 * time.Minute

// grow makes pool p at least want slots large, within the daemon's budget
// and the machine's memory and disk, and returns how many slots it added.
// It answers at once: the new slots start in the background and each
// goes to a waiting lease request as soon as its server answers. When
// they do not fit, nothing is started and the error names the limit and
// the fix.
func (s *Server) grow(p *pool.Pool, want int) (int, error) {
	return s.growWith(p, want, p.Grow)
}

// DefaultMaxSpares is how many slots beyond its size a pool may grow by
// itself while lease requests wait behind resets (`serve --max-spares`).
const DefaultMaxSpares = 2

// growForWait is pool.Options.GrowForWait: the pool grows by a spare for
// waiting lease requests within the same budget as grow.
func (s *Server) growForWait(p *pool.Pool, want int) error {
	_, err := s.growWith(p, want, p.GrowForWait)
	return err
}

// growWith is grow, growing with fn (Grow or GrowForWait).
func (s *Server) growWith(p *pool.Pool, want int, fn func(int) (int, error)) (int, error) {
	if want > pool.MaxSlots {
		return 0, fmt.Errorf("%w: %d slots asked for; a pool has at most %d", errBadRequest, want, pool.MaxSlots)
	}
	// One growth at a time, so two requests do not both count the same
	// room as free.
	s.growMu.Lock()
	defer s.growMu.Unlock()
	live := p.Live()
	if want <= live {
		return 0, nil
	}
	if err := p.CheckGrow(want - live); err != nil {
		return 0, fmt.Errorf("grow the pool of %s from %d to %d slots: %w", p.Meta.Name, live, want, err)
	}
	mem1, disk1 := p.SlotCost()
	if err := s.roomFor(p.Meta.Name, mem1, disk1, want); err != nil {
		return 0, fmt.Errorf("grow the pool of %s from %d to %d slots: %w", p.Meta.Name, live, want, err)
	}
	n, err := fn(want)
	if err != nil {
		return 0, fmt.Errorf("grow the pool of %s: %w", p.Meta.Name, err)
	}
	if n > 0 {
		s.log.Info("pool grown", "template", p.Meta.Name, "from", live, "to", live+n, "base", p.Base())
		s.recordSlots(p)
	}
	return n, nil
}

// recordSlots notes in the state file how many slots pool p has made, so
// a restarted daemon brings back the grown ones with their leases.
func (s *Server) recordSlots(p *pool.Pool) {
	recs, err := s.state.Pools()
	if err != nil {
		s.log.Error("read state", "err", err)
		return
	}
	for _, rec := range recs {
		if rec.Template == p.Meta.Name && rec.Hash == p.Meta.Hash {
			rec.Slots = p.Slots()
			if err := s.state.PutPool(rec); err != nil {
				s.log.Error("record pool", "template", rec.Template, "err", err)
			}
			return
		}
	}
}

// shrinkIdle retires, in every pool, the ready slots beyond its base size
// that nobody used for ShrinkAfter.
func (s *Server) shrinkIdle(now time.Time) {
	if s.ShrinkAfter <= 0 {
		return
	}
	for _, n := range s.poolNames() {
		if p, err := s.pool(n); err == nil {
			if k := p.ShrinkIdle(s.ShrinkAfter, now); k > 0 {
				s.log.Info("shrank idle slots a pool grew", "template", n, "slots", k, "size", p.Live(), "base", p.Base(), "idle", s.ShrinkAfter.String())
			}
		}
	}
}
