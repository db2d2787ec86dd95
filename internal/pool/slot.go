// Package pool keeps a pool of slots, each a mariadbd running on its own
// copy-on-write clone of a template's data directory, and hands them out as
// leases. A released slot is reset in the background: its clone is thrown
// away, cloned again from the template and a new server started on it,
// without touching other slots.
//
// A slot moves through an explicit state machine (see docs/architecture.md):
//
//	starting -> ready -> leased -> resetting -> starting ...
//	                 \-> kept (held for debugging until removed)
//	any state -> failed (the slot is then reset, i.e. replaced)
//
// Every transition bumps the slot's generation, so a background worker that
// finishes late can tell that its slot has moved on.
package pool

import (
	"database/sql"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
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
	// Retired slots were stopped to give their memory to another pool.
	Retired State = "retired"
)

// slot is one server on one clone. Its fields are guarded by Pool.mu.
type slot struct {
	idx   int
	gen   uint64
	state State
	dir   string // clone lives in dir/data
	run   string // socket, pid file, error log
	port  int
	inst  *mariadb.Instance
	admin *sql.DB  // root over the unix socket; never handed out
	mark  string   // write counters when the slot became ready
	files fileMark // the slot's files when it became ready
	clone string   // the id of the slot's clone (cloneIDFile); "" while it is replaced
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
	// baseBlocks is what the clone's files took when the slot became
	// ready; overCap is set once it wrote more than Options.SlotDisk.
	baseBlocks int64
	overCap    bool
}

// unit is one database of a slot, the thing a lease hands out.
type unit struct {
	db       string
	acct     account // the account the next (or current) lease gets
	lease    *Lease  // nil when not leased
	spent    bool    // handed out since the last reset
	checking bool    // released as unchanged; being checked
}

func (s *slot) set(st State) {
	s.state = st
	s.gen++
	s.since = time.Now()
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
