package pool

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"
)

// LeaseOptions describe a lease request.
type LeaseOptions struct {
	Holder string        // who holds it, for status and logs
	TTL    time.Duration // reclaimed after this long; 0: no limit
	// PID, when set, is the holder's process on this host: the lease is
	// reclaimed when it exits.
	PID int
	// Group is the holder group the lease counts against (the daemon's
	// per-group cap); recorded in the lease.
	Group string
}

// Journal keeps leases across a restart of the daemon (state.Store).
type Journal interface {
	PutLease(id string, l any) error
	DeleteLease(id string) error
	// LoseLease replaces a lease's record with a LostLease, at once.
	LoseLease(id string, lost any) error
}

// record writes a lease to the journal; the caller holds p.mu.
func (p *Pool) record(l *Lease) {
	if p.opt.Journal != nil {
		if err := p.opt.Journal.PutLease(l.ID, l); err != nil {
			p.stats.JournalErrors++
		}
	}
}

// forget drops a lease from the pool and the journal; the caller holds p.mu.
func (p *Pool) forget(l *Lease) {
	delete(p.leases, l.ID)
	p.removeOptionFile(l.ID)
	if p.opt.Journal != nil {
		if err := p.opt.Journal.DeleteLease(l.ID); err != nil {
			p.stats.JournalErrors++
		}
	}
}

// observe records a duration in the pool's stats and with Options.Observe;
// the caller holds p.mu.
func (p *Pool) observe(kind string, d time.Duration) {
	if kind == "reset" {
		p.stats.resets.add(d)
	} else {
		p.stats.waits.add(d)
	}
	if p.opt.Observe != nil {
		p.opt.Observe(p.Meta.Name, kind, d)
	}
}

// signal wakes every waiter; the caller holds p.mu.
func (p *Pool) signal() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// Lease hands out a pristine database, waiting up to ctx's deadline for one
// to become free.
func (p *Pool) Lease(ctx context.Context, opt LeaseOptions) (*Lease, error) {
	start := time.Now()
	for {
		p.mu.Lock()
		if p.closed {
			err := p.start.err
			p.mu.Unlock()
			if err != nil {
				return nil, fmt.Errorf("%w: the pool of %s did not come up: %v", ErrClosed, p.Meta.Name, err)
			}
			return nil, ErrClosed
		}
		for _, s := range p.slots {
			u := s.freeUnit()
			if u < 0 || !s.srv.Running() {
				continue // a dead server is replaced by watch
			}
			l := &Lease{ID: newLeaseID(), Template: p.Meta.Name, Slot: s.idx, Holder: opt.Holder, PID: opt.PID, Group: opt.Group, Created: time.Now().UTC()}
			if opt.TTL > 0 {
				l.Expires = l.Created.Add(opt.TTL)
			}
			if opt.PID > 0 {
				l.PIDStart = procStart(opt.PID)
			}
			l.fill(s, &s.units[u], p.opt.Network)
			l.OptionFile = filepath.Join(p.optionDir(l.ID), "my.cnf")
			l.Env = append(l.Env, "MYSQL_HOME="+p.optionDir(l.ID))
			if s.state == Ready {
				if err := p.move(s, Leased, "lease"); err != nil {
					continue
				}
			}
			s.units[u].lease, s.units[u].spent = l, true
			p.leases[l.ID] = l
			p.record(l)
			p.stats.Leases++
			p.lastLease = time.Now()
			p.observe("lease_wait", time.Since(start))
			cp := *l
			p.mu.Unlock()
			// Outside the lock: nobody knows the file's path before the
			// lease is handed out.
			if err := p.writeOptionFile(&cp); err != nil {
				_, _ = p.Release(context.Background(), cp.ID, Dirty)
				return nil, err
			}
			return &cp, nil
		}
		if want := p.needSpare(); want > 0 {
			p.wg.Add(1)
			go p.growSpare(want)
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			p.mu.Lock()
			live, coming := p.live(), p.comingUp()
			p.mu.Unlock()
			return nil, fmt.Errorf("%w: all %d slots of %s are leased or resetting after %s%s: release leases, ask for a larger pool (the lease's min_size, or pool up with a larger --size grows it)", ErrLeaseTimeout, live, p.Meta.Name, time.Since(start).Round(time.Millisecond), coming)
		}
	}
}

// Keep holds a lease for debugging: it no longer expires, its holder's
// exit does not reclaim it, and its slot is not reset until it is released.
func (p *Pool) Keep(id string) (*Lease, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.leases[id]
	if !ok {
		if err := p.lostErr(id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w %q", ErrUnknownLease, id)
	}
	if s := p.slots[l.Slot]; len(s.units) == 1 && s.state != Kept {
		if err := p.move(s, Kept, "keep"); err != nil {
			return nil, err
		}
	}
	l.Kept, l.Expires, l.PID = true, time.Time{}, 0
	p.record(l)
	cp := *l
	return &cp, nil
}

// Extend pushes a lease's expiry to ttl from now.
func (p *Pool) Extend(id string, ttl time.Duration) (*Lease, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.leases[id]
	if !ok {
		if err := p.lostErr(id); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w %q", ErrUnknownLease, id)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("extend lease %s: the TTL must be positive", id)
	}
	if !l.Kept {
		l.Expires = time.Now().UTC().Add(ttl)
		p.record(l)
	}
	cp := *l
	return &cp, nil
}

// Leases lists the leases held now, oldest first.
func (p *Pool) Leases() []Lease {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Lease, 0, len(p.leases))
	for _, l := range p.leases {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// Get returns a lease of this pool.
func (p *Pool) Get(id string) (Lease, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.leases[id]
	if !ok {
		return Lease{}, false
	}
	return *l, true
}
