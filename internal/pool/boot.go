package pool

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/exportmeta"
	"github.com/pristinedb/pristine/internal/mariadb"
)

// startSlot clones the template for s and starts a server on the clone,
// for work begun at the slot's generation gen.
func (p *Pool) startSlot(ctx context.Context, s *slot, gen uint64) error {
	if err := p.ops.clone(ctx, s); err != nil {
		return err
	}
	return p.bootSlot(ctx, s, gen)
}

// bootSlot starts a server on the slot's clone (ops.boot) and publishes
// it: the slot becomes Ready, or Leased or Kept with the leases it
// restores. gen is the slot's generation when the work began; a slot that
// moved on meanwhile keeps its state and the new server is killed
// (errMovedOn).
func (p *Pool) bootSlot(ctx context.Context, s *slot, gen uint64) error {
	b, err := p.ops.boot(ctx, s)
	if err != nil {
		return err
	}
	return p.publish(s, gen, b)
}

// bootServer starts a server on the slot's clone, waits until it answers
// and makes each unit's lease account. A port taken by another program is
// retried on another.
func (p *Pool) bootServer(ctx context.Context, s *slot) (*booted, error) {
	data := filepath.Join(s.dir, "data")
	port := s.wantPort
	id, err := p.slotID(s)
	if err != nil {
		return nil, fmt.Errorf("slot %d: %w", s.idx, err)
	}
	extra, err := slotArgs(data, p.bin.Flavor, p.opt)
	if err != nil {
		return nil, fmt.Errorf("slot %d: %w", s.idx, err)
	}
	for try := 0; try < 3; try++ {
		var cgroup string // made again after a kill that found processes
		if cgroup, err = p.slotCgroup(s.idx); err != nil {
			break
		}
		var in *mariadb.Instance
		in, err = mariadb.Start(p.bin, mariadb.Config{Datadir: data, RunDir: s.run, Port: port, BindAddress: p.opt.Network.bind(), TLS: p.opt.Network.serverTLS(), Profile: p.opt.Profile, AdminPassword: p.cat.Admin(), Extra: extra, Account: &id.Account, Cgroup: cgroup})
		if err != nil {
			break
		}
		if err = p.enterGroups(s.idx, in.PID()); err == nil {
			err = in.WaitReady(ctx)
		}
		if err == nil {
			var b *booted
			if b, err = p.prepareUnits(ctx, s, in); err == nil {
				return b, nil
			}
		}
		in.Kill()
		if kerr := p.killGroup(s.idx); kerr != nil {
			return nil, fmt.Errorf("slot %d: %w (and %v)", s.idx, err, kerr)
		}
		if !errors.Is(err, mariadb.ErrPortInUse) {
			break
		}
		port = 0
	}
	return nil, fmt.Errorf("slot %d: %w", s.idx, err)
}

// prepareUnits makes the lease accounts of a freshly started server (or
// finds a restored lease's) and records its port, write counters and
// files.
func (p *Pool) prepareUnits(ctx context.Context, s *slot, in *mariadb.Instance) (*booted, error) {
	admin, err := openAdmin(in)
	if err != nil {
		return nil, err
	}
	if len(s.restore) == 0 {
		p.exportMeta(ctx, admin, s) // for the in-place reset (inplace.go)
	}
	b, err := prepare(ctx, s, admin, in.Binary.Flavor, p.opt.SlotDisk > 0, p.templateFacts, &p.globals)
	if err != nil {
		admin.Close()
		return nil, err
	}
	live := &liveServer{Instance: in, admin: admin, globals: &serverGlobals{pool: &p.globals, admin: admin},
		purge: newPurgeWaker(in.Binary.Flavor, func() (*sql.DB, error) { return in.Open("") })}
	for i, a := range b.accts {
		if !b.restored[i] {
			live.warmLogins(ctx, a)
		}
	}
	b.srv = live
	return b, nil
}

// prepare does prepareUnits' queries over admin; facts returns the
// template's facts (bootBase); globals hashes the pool's global
// variables (poolGlobals).
func prepare(ctx context.Context, s *slot, admin *sql.DB, f mariadb.Flavor, capped bool, facts func() *exportmeta.Facts, globals *poolGlobals) (*booted, error) {
	b := &booted{accts: make([]account, len(s.units)), restored: make([]bool, len(s.units))}
	for i := range s.units {
		db := s.units[i].db
		if l := s.restoredLease(db); l != nil {
			// The account of a lease from before a restart lives in the
			// clone, unless crash recovery lost it.
			ok, err := accountExists(ctx, admin, l.User)
			if err != nil {
				return nil, err
			}
			if ok {
				b.accts[i], b.restored[i] = account{user: l.User, password: l.Password}, true
				continue
			}
		}
		var err error
		if b.accts[i], err = newAccount(ctx, admin, db, len(s.units)); err != nil {
			return nil, err
		}
	}
	if err := inplaceSetup(ctx, admin, f); err != nil {
		return nil, err
	}
	var err error
	var status map[string]string
	if b.mark, status, err = writeMark(ctx, admin, f, slotDirs(s), globals, len(s.restore) == 0); err != nil {
		return nil, err
	}
	if b.inplace, err = bootBase(ctx, admin, f, s, b.mark, status, facts); err != nil {
		return nil, err
	}
	if b.port, err = serverPort(ctx, admin); err != nil {
		return nil, err
	}
	var used *usage // the cap's base (usedBlocks), from the same walk
	if capped {
		used = &usage{dir: filepath.Join(s.dir, "data")}
	}
	if b.files, err = markFilesUsed(used, slotDirs(s)...); err != nil {
		return nil, err
	}
	if capped {
		b.base = used.bytes
	}
	return b, nil
}

// publish makes a booted server the slot's and moves the slot on: to
// Ready, or with leases restored after a daemon restart to Leased (Kept
// for a kept lease). A restored lease whose account the clone lost is
// lost; a slot that restored none is reset. gen is the slot's generation
// when the boot began: if the slot moved on since, b is killed and
// errMovedOn returned.
func (p *Pool) publish(s *slot, gen uint64, b *booted) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.gen != gen {
		b.srv.kill()
		return fmt.Errorf("slot %d: start dropped: %w", s.idx, errMovedOn)
	}
	if p.closed {
		b.srv.kill() // Down is at work: nothing it has not seen may be left
		return ErrClosed
	}
	units := make([]unit, len(s.units))
	for i := range units {
		units[i] = unit{db: s.units[i].db, acct: b.accts[i]}
		l := s.restoredLease(units[i].db)
		if l == nil {
			continue
		}
		if !b.restored[i] {
			p.lose(*l, ReasonNoAccount, fmt.Sprintf("slot %d came back after a daemon restart without the lease's account (crash recovery lost it)", s.idx))
			continue
		}
		l.restored = true
		units[i].lease, units[i].spent = l, true
	}
	if s.srv != nil {
		s.srv.kill() // a server left behind; none is expected
	}
	// The port is the one the server listens on, which a restored lease
	// may not have recorded (its port was taken meanwhile).
	s.srv, s.port, s.wantPort, s.mark, s.files = b.srv, b.port, 0, b.mark, b.files
	s.baseBlocks, s.overCap = b.base, false
	s.err = ""
	s.units = units
	restoring := len(s.restore) > 0
	s.restore = nil
	if s.inplace = b.inplace; restoring {
		s.inplace = nil // counted from after the restored holders' writes: never in place
	}
	to, why := Ready, "the server answered"
	for i := range units {
		l := units[i].lease
		if l == nil {
			// A clone restarted for its leases was written by holders it
			// may no longer serve: none of its databases is fresh.
			units[i].spent = units[i].spent || restoring
			continue
		}
		l.fill(s, &s.units[i], p.opt.Network)
		p.leases[l.ID] = l
		p.record(l)
		to, why = Leased, "restarted on its clone with its leases"
		if l.Kept && len(units) == 1 {
			to, why = Kept, "restarted on its clone with its kept lease"
		}
	}
	if restoring && s.active() == 0 {
		to, why = Leased, "restarted on its clone, every lease of it lost" // then reset
	}
	if err := p.move(s, to, why); err != nil {
		b.srv.kill()
		s.srv = nil
		return err
	}
	p.resetIfDone(s)
	p.signal()
	go p.watch(s, b.srv)
	return nil
}

// watch replaces a slot whose server dies while it is ready, leased or
// kept; its leases are lost, with the reason.
func (p *Pool) watch(s *slot, srv server) {
	<-srv.Done()
	reason, detail := srv.exitReason()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || s.srv != srv || (s.state != Ready && s.state != Leased && s.state != Kept) {
		return // killed by the pool: reset, retired or shut down
	}
	reason, detail = overCapExit(s, reason, detail)
	reason, detail = p.memoryExit(s, reason, detail)
	s.err = detail
	p.emit(Event{Kind: EventSlotDied, Slot: s.idx, Reason: reason, Detail: detail})
	for i := range s.units {
		if l := s.units[i].lease; l != nil {
			p.lose(*l, reason, fmt.Sprintf("slot %d's server died: %s", s.idx, detail))
		}
		s.units[i].lease, s.units[i].spent = nil, true
	}
	if p.move(s, Failed, "its server died") != nil {
		return
	}
	p.stats.Replaced++
	p.queueReset(s)
}
