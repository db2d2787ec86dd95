package pool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pristinedb/pristine/internal/svcuser"
)

// LastUsed is when the pool last handed out a lease (or came up).
func (p *Pool) LastUsed() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastLease
}

// Live counts the slots that are not retired.
func (p *Pool) Live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live()
}

// live is Live; the caller holds p.mu.
func (p *Pool) live() int {
	n := 0
	for _, s := range p.slots {
		if s.state != Retired {
			n++
		}
	}
	return n
}

// Shrink retires up to n ready slots (stops their servers and removes their
// clones) and returns how many it retired. Leased slots are never touched.
func (p *Pool) Shrink(n int) int {
	var doomed []*slot
	p.mu.Lock()
	for i := len(p.slots) - 1; i >= 0 && len(doomed) < n; i-- {
		if s := p.slots[i]; s.state == Ready && p.move(s, Retired, "shrink") == nil {
			s.retiring = true
			doomed = append(doomed, s)
		}
	}
	p.mu.Unlock()
	p.retire(doomed)
	return len(doomed)
}

// retire stops the servers of slots just moved to Retired (and marked
// retiring) and removes their clones. Nothing touches a retired slot's
// server and clone but this; Grow starts the slot again only once it is
// done. A slot whose clone could not be removed keeps its server id and
// is never started again.
func (p *Pool) retire(doomed []*slot) {
	for _, s := range doomed {
		p.mu.Lock()
		srv := s.srv
		p.mu.Unlock()
		if srv != nil {
			srv.kill()
		}
		removed := p.dropGroup(s.idx) == nil && p.backend.Remove(filepath.Join(s.dir, "data")) == nil
		if removed {
			p.releaseID(s)
		}
		p.mu.Lock()
		s.retiring = !removed
		p.mu.Unlock()
	}
}

// Down stops every server of the pool and removes every clone, a start
// still under way (Start) stopped first. It is safe to call more than
// once, also at the same time.
func (p *Pool) Down(ctx context.Context) error {
	p.downMu.Lock()
	defer p.downMu.Unlock()
	p.mu.Lock()
	wasClosed := p.closed
	p.closed = true
	p.signal()
	p.mu.Unlock()
	if !wasClosed {
		close(p.resetq)
		close(p.stop)
	}
	p.wg.Wait()
	p.forgetMeta()
	// Every slot is tried, whatever others did: each error is kept.
	var g errgroup.Group
	g.SetLimit(p.opt.Parallel)
	errs := make([]error, len(p.slots))
	ids := make([]*svcuser.Claimed, len(p.slots))
	for i, s := range p.slots {
		g.Go(func() error {
			p.mu.Lock()
			srv := s.srv
			p.mu.Unlock()
			if srv != nil {
				srv.kill()
			}
			// What the server forked dies too, before its id can go.
			if errs[i] = p.dropGroup(s.idx); errs[i] == nil {
				errs[i] = p.backend.Remove(filepath.Join(s.dir, "data"))
			}
			if errs[i] == nil {
				ids[i] = p.takeID(s)
			}
			return nil
		})
	}
	_ = g.Wait() // the errors are in errs
	// The ids of the slots whose clone and seed went, in one pass.
	svcuser.ReleaseAll(ids)
	if p.groups != nil {
		p.groups.removePool()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pool down: %w", err)
	}
	if err := p.cat.Root().Check(p.dir); err == nil {
		if err := os.RemoveAll(p.dir); err != nil {
			return fmt.Errorf("pool down: %w", err)
		}
	}
	if err := p.cat.Root().Check(p.run); err == nil {
		_ = os.RemoveAll(p.run)
	}
	return nil
}
