package pool

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// ErrLeaseLost is returned (wrapped, with the reason) for a lease that
// ended without its holder releasing it: its slot's server died, its slot
// could not be restored after a daemon restart, it expired, or its holder
// process exited. The holder's database is gone; it needs a new lease.
var ErrLeaseLost = errors.New("lease lost")

// LostLease records why a lease ended without its holder releasing it.
type LostLease struct {
	ID       string    `json:"id"`
	Template string    `json:"template"`
	Slot     int       `json:"slot"`
	Holder   string    `json:"holder,omitempty"`
	Reason   string    `json:"reason"` // a label: see the Reason* constants
	Detail   string    `json:"detail"` // for people: what happened
	At       time.Time `json:"at"`
}

// Error is the message a holder of a lost lease gets.
func (l LostLease) Error() string {
	return fmt.Sprintf("lease %s was lost: %s (at %s): take a new lease", l.ID, l.Detail, l.At.Format(time.RFC3339))
}

// The kinds of Event.
const (
	EventSlotDied  = "slot_died"
	EventLeaseLost = "lease_lost"
)

// Reasons label slot deaths and lost leases, in logs and metrics.
const (
	ReasonKilled        = "killed"         // the server was killed by a signal pristine did not send
	ReasonDiskFull      = "disk_full"      // the server stopped on a full disk or its slot's cap
	ReasonOutOfMemory   = "out_of_memory"  // the kernel killed the server in its slot's memory cgroup
	ReasonExited        = "exited"         // the server exited or crashed otherwise
	ReasonResetFailed   = "reset_failed"   // a reset could not start a server
	ReasonStartFailed   = "start_failed"   // a slot did not start while its pool was coming up (after pool up returned)
	ReasonRestoreFailed = "restore_failed" // after a daemon restart, the slot did not start on its clone
	ReasonCloneReplaced = "clone_replaced" // after a daemon restart, the slot's clone is not the lease's
	ReasonSuperseded    = "superseded"     // a newer lease of the same database was recorded
	ReasonNoAccount     = "account_missing"
	ReasonPoolGone      = "pool_gone" // after a daemon restart, the lease's pool did not come back
	ReasonExpired       = "expired"
	ReasonHolderGone    = "holder_gone"
)

// Event reports a slot death or a lost lease (Options.Event), for metrics.
type Event struct {
	Kind     string // EventSlotDied or EventLeaseLost
	Template string
	Slot     int
	Lease    string // the lease's id, for EventLeaseLost
	Reason   string // one of the Reason* labels
	Detail   string
}

// maxLost bounds the lost leases a pool remembers in memory.
const maxLost = 4096

// emit logs an event, counts it and hands it to Options.Event; the caller
// holds p.mu.
func (p *Pool) emit(ev Event) {
	ev.Template = p.Meta.Name
	switch ev.Kind {
	case EventSlotDied:
		p.stats.SlotDeaths[ev.Reason]++
		p.log.Warn("slot died", "template", ev.Template, "slot", ev.Slot, "reason", ev.Reason, "detail", ev.Detail)
	case EventLeaseLost:
		p.stats.LeasesLost[ev.Reason]++
		p.log.Warn("lease lost", "template", ev.Template, "slot", ev.Slot, "lease", ev.Lease, "reason", ev.Reason, "detail", ev.Detail)
	}
	if p.opt.Event != nil {
		p.opt.Event(ev)
	}
}

// lose ends a lease its holder did not release: it is dropped from the
// pool, moved to the journal's lost records (never restored again) and
// remembered, so its holder is told why. The caller holds p.mu.
func (p *Pool) lose(l Lease, reason, detail string) {
	if cur, ok := p.leases[l.ID]; ok {
		s := p.slots[cur.Slot]
		for i := range s.units {
			if s.units[i].lease == cur {
				s.units[i].lease = nil
			}
		}
		delete(p.leases, l.ID)
	}
	rec := LostLease{ID: l.ID, Template: p.Meta.Name, Slot: l.Slot, Holder: l.Holder, Reason: reason, Detail: detail, At: time.Now().UTC()}
	if p.opt.Journal != nil {
		if err := p.opt.Journal.LoseLease(l.ID, rec); err != nil {
			p.stats.JournalErrors++
			p.log.Error("journal a lost lease", "lease", l.ID, "err", err)
		}
	}
	if len(p.lostOrder) >= maxLost {
		delete(p.lost, p.lostOrder[0])
		p.lostOrder = p.lostOrder[1:]
	}
	p.lost[l.ID] = rec
	p.lostOrder = append(p.lostOrder, l.ID)
	switch reason {
	case ReasonExpired, ReasonHolderGone:
		// Counted as reclaimed; logged for the holder's sake.
		p.log.Info("lease reclaimed", "template", p.Meta.Name, "slot", l.Slot, "lease", l.ID, "reason", reason)
	default:
		p.emit(Event{Kind: EventLeaseLost, Slot: l.Slot, Lease: l.ID, Reason: reason, Detail: detail})
	}
}

// lostErr is the error for a lease that was lost, or nil; the caller holds
// p.mu.
func (p *Pool) lostErr(id string) error {
	if rec, ok := p.lost[id]; ok {
		return fmt.Errorf("%w: %w", ErrLeaseLost, rec)
	}
	return nil
}

// Lost returns why lease id was lost, when this pool lost it.
func (p *Pool) Lost(id string) (LostLease, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec, ok := p.lost[id]
	return rec, ok
}

// diskFullMarks are what a server's error log says when a write failed for
// lack of space (ENOSPC is errno 28, EDQUOT 122), compared without case:
// InnoDB writes "Operating system error number 122" and "... or a disk
// quota exceeded", the server "(Errcode: 122 "Disk quota exceeded")".
var diskFullMarks = []string{"no space left on device", "disk quota exceeded", "errno 28", "errno 122", "errno: 28", "errno: 122",
	"error number 28", "error number 122", "error 28", "error 122", "errcode: 28", "errcode: 122", "disk full", "out of disk space", "disk is full"}

// diskFullLines is how far back an error log is searched for a full
// disk: the crash report (a stack trace, the server's variables) follows
// the cause.
const diskFullLines = 400

// exitReason says why a server died, as a label and a sentence.
func exitReason(in *mariadb.Instance) (label, detail string) {
	return classifyExit(in.PID(), in.Err(), in.LogTail(3), in.LogTail(diskFullLines))
}

// classifyExit labels the exit (err) of server pid whose error log ends
// with tail (short, for the message) and long.
func classifyExit(pid int, err error, tail, long string) (label, detail string) {
	if diskFull(long) {
		return ReasonDiskFull, fmt.Sprintf("slot server (pid %d) stopped on a full disk (its slot's --slot-disk cap or the filesystem); its error log ends: %s", pid, tail)
	}
	var ee interface{ Sys() any }
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return ReasonKilled, fmt.Sprintf("slot server (pid %d) was killed (SIGKILL) by something other than pristine (the OOM killer?); its error log ends: %s", pid, tail)
		}
	}
	return ReasonExited, fmt.Sprintf("slot server (pid %d) %v; its error log ends: %s", pid, err, tail)
}

// diskFull reports whether an error log says a write failed for lack of
// space.
func diskFull(log string) bool {
	log = strings.ToLower(log)
	for _, m := range diskFullMarks {
		if strings.Contains(log, m) {
			return true
		}
	}
	return false
}

// overCapExit relabels the exit of a slot's server that had written past
// its disk cap: one that exited on its own (not killed by a signal) then
// stopped on the filesystem's cap behind the watched one, whatever its
// log says. The caller holds p.mu.
func overCapExit(s *slot, reason, detail string) (string, string) {
	if s.overCap && reason == ReasonExited {
		return ReasonDiskFull, "over its disk cap (--slot-disk): " + detail
	}
	return reason, detail
}
