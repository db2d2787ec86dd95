// Package pool keeps a pool of slots, each a mariadbd running on its own
// copy-on-write clone of a template's data directory, and hands them out as
// leases. A released slot is reset in the background: its clone is thrown
// away, cloned again from the template and a new server started on it,
// without touching other slots.
//
// A slot moves through an explicit state machine. Every move goes through
// Pool.move, which refuses a move not in the table moves; the table is the
// diagram (docs/architecture.md draws it, TestStateDiagram keeps the two
// equal):
//
//	[*] -> starting: pool up or grown, clone the template and start mariadbd
//	starting -> ready: the server answered
//	starting -> leased: restarted on its clone with its leases (daemon restart)
//	starting -> kept: restarted on its clone with its kept lease (daemon restart)
//	starting -> retired: a grown slot did not start
//	starting -> failed: it did not start after pool up returned (retried every second)
//	ready -> leased: lease
//	ready -> retired: shrunk, its memory given to another pool, or idle after growing
//	ready -> failed: its server died
//	leased -> ready: released unchanged, nothing was written
//	leased -> kept: keep
//	leased -> resetting: its last lease ended (released, expired, holder exited, lost)
//	leased -> failed: its server died, its leases are lost
//	kept -> resetting: release
//	kept -> failed: its server died, its lease is lost
//	resetting -> ready: server killed, clone replaced, new server answered
//	resetting -> failed: the reset could not start a server
//	failed -> ready: replaced in the background (retried every second)
//	retired -> starting: grown again, a client needed more slots
//
// Every move bumps the slot's generation. Work done outside the pool's lock
// (a reset, release --unchanged's check, the disk watch) notes the
// generation when it starts and drops its result when the slot has moved
// on meanwhile.
package pool

import (
	"errors"
	"fmt"
	"time"

	"github.com/pristinedb/pristine/internal/svcuser"
)

// State is where a slot is in its life cycle.
type State string

// The slot states.
const (
	Starting  State = "starting"
	Ready     State = "ready"
	Leased    State = "leased"
	Resetting State = "resetting"
	Kept      State = "kept"
	Failed    State = "failed"
	// Retired slots were stopped to give their memory to another pool,
	// or shrunk when idle after the pool grew; Grow starts them again.
	Retired State = "retired"
	// none is where a slot is before the pool makes it ("[*]").
	none State = ""
)

// edge is one legal move of a slot, with what makes it.
type edge struct {
	from, to State
	why      string
}

// moves is the slot state machine: every legal move, and nothing else.
// The package doc and docs/architecture.md draw it (TestStateDiagram).
var moves = []edge{
	{none, Starting, "pool up or grown, clone the template and start mariadbd"},
	{Starting, Ready, "the server answered"},
	{Starting, Leased, "restarted on its clone with its leases (daemon restart)"},
	{Starting, Kept, "restarted on its clone with its kept lease (daemon restart)"},
	{Starting, Retired, "a grown slot did not start"},
	{Starting, Failed, "it did not start after pool up returned (retried every second)"},
	{Ready, Leased, "lease"},
	{Ready, Retired, "shrunk, its memory given to another pool, or idle after growing"},
	{Ready, Failed, "its server died"},
	{Leased, Ready, "released unchanged, nothing was written"},
	{Leased, Kept, "keep"},
	{Leased, Resetting, "its last lease ended (released, expired, holder exited, lost)"},
	{Leased, Failed, "its server died, its leases are lost"},
	{Kept, Resetting, "release"},
	{Kept, Failed, "its server died, its lease is lost"},
	{Resetting, Ready, "server killed, clone replaced, new server answered"},
	{Resetting, Failed, "the reset could not start a server"},
	{Failed, Ready, "replaced in the background (retried every second)"},
	{Retired, Starting, "grown again, a client needed more slots"},
}

// legal reports whether a slot may move from one state to another.
func legal(from, to State) bool {
	for _, e := range moves {
		if e.from == from && e.to == to {
			return true
		}
	}
	return false
}

// errIllegalMove is wrapped by the error of a move the table refuses.
var errIllegalMove = errors.New("illegal slot move")

// errMovedOn says that work begun on a slot was dropped because the slot
// moved on (its generation changed) before the work finished.
var errMovedOn = errors.New("the slot moved on meanwhile")

// move takes slot s to state to: it updates the state, the time it was
// entered and the generation. A move the table does not list is refused:
// logged, counted (Stats.IllegalMoves) and returned as an error, with the
// slot left as it was. why says what made the move. The caller holds p.mu.
func (p *Pool) move(s *slot, to State, why string) error {
	from := s.state
	if !legal(from, to) {
		p.stats.IllegalMoves++
		p.log.Error("illegal slot move refused", "template", p.Meta.Name, "slot", s.idx, "from", string(from), "to", string(to), "why", why)
		return fmt.Errorf("slot %d: %w: %s -> %s (%s)", s.idx, errIllegalMove, from, to, why)
	}
	s.state, s.since = to, time.Now()
	s.gen++
	p.log.Debug("slot moved", "template", p.Meta.Name, "slot", s.idx, "from", string(from), "to", string(to), "why", why)
	return nil
}

// slot is one server on one clone. Its fields are guarded by Pool.mu.
type slot struct {
	idx   int
	gen   uint64 // bumped by every move
	state State
	dir   string // clone lives in dir/data
	run   string // socket, pid file, error log
	port  int
	srv   server   // the running server; nil while it is replaced
	mark  string   // write counters when the slot became ready
	files fileMark // the slot's files when it became ready
	clone string   // the id of the slot's clone (cloneIDFile); "" while it is replaced
	// cloned is set once the slot was cloned in this pool's life: its
	// next clone (a full reset) comes from its seed (Pool.seed).
	cloned bool
	// wantPort asks a restart to keep the port a lease already knows.
	wantPort int
	// restore holds the leases of this slot from before a daemon restart.
	restore []Lease
	// units are the databases of the slot: one, or K with --dbs-per-slot.
	units []unit
	// since is when the slot entered its state, for status and metrics.
	since time.Time
	err   string // last failure, for status
	// failing is set while resets of the slot keep failing.
	failing bool
	// queued is set while the slot is in the reset queue (Pool.resetq;
	// at most once: queueReset).
	queued bool
	// baseBlocks is what the clone's files took when the slot became
	// ready; overCap is set once it wrote more than Options.SlotDisk.
	baseBlocks int64
	overCap    bool
	// frozenAt is what the slot had written when it was frozen (or its
	// sessions last killed) over its cap.
	frozenAt int64
	// retiring is set from a slot's move to Retired until its server is
	// killed and its clone removed (Pool.retire): Grow does not start it
	// again before.
	retiring bool
	// id is the server id the slot's server runs as and its clone
	// belongs to (Pool.slotID); nil until its first clone.
	id *svcuser.Claimed
	// inplace is what the in-place reset compares against (inplace.go);
	// nil: the slot resets fully.
	inplace *inplaceBase
	// handed is what a failed release --unchanged check did of the
	// in-place reset's first steps, for the reset that follows (recycle.go);
	// nil: none.
	handed *handedOver
	// imported is the server that last restored tables in place: a fork
	// of a lease on it writes its dirty pages out first (flushPages).
	imported server
}

// unit is one database of a slot, the thing a lease hands out.
type unit struct {
	db       string
	acct     account // the account the next (or current) lease gets
	lease    *Lease  // nil when not leased
	spent    bool    // handed out since the last reset
	checking bool    // released as unchanged; being checked
}

// freeUnit returns the index of a fresh, unleased unit, or -1.
func (s *slot) freeUnit() int {
	if s.state != Ready && s.state != Leased {
		return -1
	}
	for i := range s.units {
		if s.units[i].lease == nil && !s.units[i].spent && !s.units[i].checking {
			return i
		}
	}
	return -1
}

// active counts the units on lease or being checked after one.
func (s *slot) active() int {
	n := 0
	for i := range s.units {
		if s.units[i].lease != nil || s.units[i].checking {
			n++
		}
	}
	return n
}

// needsReset is true when nothing is on lease and nothing fresh is left.
func (s *slot) needsReset() bool {
	if s.active() > 0 {
		return false
	}
	for i := range s.units {
		if !s.units[i].spent {
			return false
		}
	}
	return true
}

// hasDB reports whether db is one of the slot's databases.
func (s *slot) hasDB(db string) bool {
	for i := range s.units {
		if s.units[i].db == db {
			return true
		}
	}
	return false
}

// restoredLease returns the restored lease of database db, if any.
func (s *slot) restoredLease(db string) *Lease {
	for i := range s.restore {
		if s.restore[i].Database == db {
			l := s.restore[i]
			return &l
		}
	}
	return nil
}
