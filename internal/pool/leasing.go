package pool

import (
	"context"
	"errors"
	"fmt"

	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LeaseOptions describe a lease request.
type LeaseOptions struct {
	Holder string        // who holds it, for status and logs
	TTL    time.Duration // reclaimed after this long; 0: no limit
	// PID, when set, is the holder's process on this host: the lease is
	// reclaimed when it exits.
	PID int
}

// ReleaseMode says what the holder did with a lease.
type ReleaseMode int

// The release modes.
const (
	// Dirty: the database may have been written; reset before reuse.
	Dirty ReleaseMode = iota
	// Unchanged: the holder says it wrote nothing. pristine checks the
	// server's write counters and, when they did not move, hands the
	// database out again at once; otherwise it resets it.
	Unchanged
)

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
			p.mu.Unlock()
			return nil, ErrClosed
		}
		for _, s := range p.slots {
			u := s.freeUnit()
			if u < 0 || !s.srv.Running() {
				continue // a dead server is replaced by watch
			}
			l := &Lease{ID: newLeaseID(), Template: p.Meta.Name, Slot: s.idx, Holder: opt.Holder, PID: opt.PID, Created: time.Now().UTC()}
			if opt.TTL > 0 {
				l.Expires = l.Created.Add(opt.TTL)
			}
			if opt.PID > 0 {
				l.PIDStart = procStart(opt.PID)
			}
			l.fill(s, &s.units[u])
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
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: all %d slots of %s are leased or resetting after %s: release leases, ask for a larger pool (the lease's min_size, or pool up with a larger --size grows it)", ErrLeaseTimeout, p.live(), p.Meta.Name, time.Since(start).Round(time.Millisecond))
		}
	}
}

// Release returns a lease. A dirty (or kept, or unverifiable) database is
// reset in the background; an unchanged one is handed out again at once.
// It reports whether the database will be reset.
func (p *Pool) Release(ctx context.Context, id string, mode ReleaseMode) (reset bool, err error) {
	p.mu.Lock()
	l, ok := p.leases[id]
	if !ok {
		err := p.lostErr(id)
		p.mu.Unlock()
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("%w %q: it was released already, or belongs to another pool (see `pristine pool status`)", ErrUnknownLease, id)
	}
	s := p.slots[l.Slot]
	// Only a slot with one database can be checked: with several, the
	// server's counters mix the writes of several holders.
	// Nor can a lease restored after a daemon restart: the marks were
	// taken after its holder's writes.
	if mode == Dirty || l.Kept || len(s.units) > 1 || l.restored {
		p.releaseLocked(l)
		p.mu.Unlock()
		return true, nil
	}
	p.forget(l)
	u := &s.units[0]
	u.lease, u.checking = nil, true
	srv, acct := s.srv, u.acct
	was := check{mark: s.mark, files: s.files, base: s.inplace}
	gen := s.gen
	p.mu.Unlock()

	fresh, now, err := srv.recycle(ctx, was, acct, u.db, slotDirs(s))
	p.mu.Lock()
	defer p.mu.Unlock()
	u.checking = false
	if s.gen != gen || p.closed {
		return true, nil // the slot died or the pool went down meanwhile: the check's result is dropped
	}
	if err != nil || !fresh.ok() {
		if err != nil {
			p.log.Info("release unchanged: resetting", "template", p.Meta.Name, "slot", s.idx, "lease", id, "why", err.Error())
		}
		p.resetIfDone(s)
		return true, nil
	}
	u.acct, u.spent, s.mark, s.files, s.inplace = fresh, false, now.mark, now.files, now.base
	p.stats.Reused++
	if s.active() == 0 {
		if err := p.move(s, Ready, "released unchanged"); err != nil {
			return false, err
		}
	}
	p.signal()
	return false, nil
}

// releaseLocked ends a lease whose database will be reset.
func (p *Pool) releaseLocked(l *Lease) {
	p.forget(l)
	s := p.slots[l.Slot]
	for i := range s.units {
		if s.units[i].lease == l {
			s.units[i].lease = nil
		}
	}
	p.resetIfDone(s)
}

// resetIfDone queues a slot for reset once none of its databases is on
// lease, being checked, or fresh.
func (p *Pool) resetIfDone(s *slot) {
	if !p.closed && s.needsReset() && (s.state == Leased || s.state == Kept) {
		if p.move(s, Resetting, "its last lease ended") == nil {
			p.resetq <- s
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

// resetWorker resets slots from the queue: kill the server, throw the clone
// away, clone again, start. A failed reset is retried after a pause.
func (p *Pool) resetWorker() {
	defer p.wg.Done()
	for s := range p.resetq {
		if p.resetInPlace(s) {
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		gen, srv := s.gen, s.srv
		s.srv = nil
		p.mu.Unlock()
		start := time.Now()
		if srv != nil {
			srv.kill()
		}
		err := p.startSlot(context.Background(), s, gen)
		p.mu.Lock()
		switch {
		case errors.Is(err, errMovedOn) || (err != nil && s.gen != gen):
			p.log.Info("slot reset dropped: the slot moved on meanwhile", "template", p.Meta.Name, "slot", s.idx)
		case err != nil:
			p.resetFailed(s, err)
		default:
			if s.failing {
				p.log.Info("slot reset succeeded again", "template", p.Meta.Name, "slot", s.idx)
			}
			s.failing = false
			p.observe("reset", time.Since(start))
		}
		p.mu.Unlock()
	}
}

// resetFailed records a reset that could not start a server: the slot is
// Failed and retried after Pool.retryEvery. The caller holds p.mu.
func (p *Pool) resetFailed(s *slot, err error) {
	s.err = err.Error()
	p.stats.ResetFailures++
	if s.state != Failed && p.move(s, Failed, "the reset could not start a server") != nil {
		return
	}
	if !p.closed && !s.failing {
		// Logged once per run of failures; retried every second.
		p.emit(Event{Kind: EventSlotDied, Slot: s.idx, Reason: ReasonResetFailed, Detail: "reset failed (retried every second): " + err.Error()})
	}
	s.failing = true
	if !p.closed {
		go func() { time.Sleep(p.retryEvery); p.requeue(s) }()
	}
}

func (p *Pool) requeue(s *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.resetq <- s
	}
}

// janitor reclaims leases that expired or whose holder process exited.
func (p *Pool) janitor() {
	defer p.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		if !p.reap(time.Now()) {
			return
		}
	}
}

// reap reclaims the leases expired at now or whose holder process exited;
// false once the pool is closed.
func (p *Pool) reap(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, l := range p.leases {
		switch {
		case !l.Expires.IsZero() && now.After(l.Expires):
			p.stats.Expired++
			p.lose(*l, ReasonExpired, fmt.Sprintf("it expired at %s (its TTL) and its slot was reset", l.Expires.Format(time.RFC3339)))
		case l.PID > 0 && procStart(l.PID) != l.PIDStart:
			p.stats.HolderGone++
			p.lose(*l, ReasonHolderGone, fmt.Sprintf("its holder process (pid %d) exited and its slot was reset", l.PID))
		default:
			continue
		}
		p.resetIfDone(p.slots[l.Slot])
	}
	return true
}

// procStart identifies a process by its start time (field 22 of
// /proc/PID/stat), so a recycled pid is not mistaken for the holder. It is
// empty when the process does not exist.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name may hold spaces; fields count from after its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

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
		removed := p.backend.Remove(filepath.Join(s.dir, "data")) == nil
		if removed {
			p.releaseID(s)
		}
		p.mu.Lock()
		s.retiring = !removed
		p.mu.Unlock()
	}
}
