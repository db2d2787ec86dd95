package pool

import (
	"fmt"
	"sort"
)

// planRestore decides which leases of a previous daemon come back: those
// recorded on the clone each slot still has, the newest one per database.
// The others are lost. Each slot asks for the port its newest lease knows.
func (p *Pool) planRestore(leases []Lease) {
	sort.Slice(leases, func(i, j int) bool { return leases[i].Created.After(leases[j].Created) })
	type unitKey struct {
		slot int
		db   string
	}
	taken := map[unitKey]string{}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range leases {
		if l.Slot < 0 || l.Slot >= len(p.slots) {
			p.lose(l, ReasonCloneReplaced, fmt.Sprintf("the pool has %d slots now and slot %d is gone", len(p.slots), l.Slot))
			continue
		}
		s := p.slots[l.Slot]
		k := unitKey{l.Slot, l.Database}
		switch {
		case s.clone == "" || l.Clone != s.clone:
			p.lose(l, ReasonCloneReplaced, fmt.Sprintf("slot %d was reset (its clone replaced) after this lease was handed out, before the daemon restarted", l.Slot))
		case !s.hasDB(l.Database):
			p.lose(l, ReasonCloneReplaced, fmt.Sprintf("slot %d has no database %q", l.Slot, l.Database))
		case taken[k] != "":
			p.lose(l, ReasonSuperseded, fmt.Sprintf("lease %s of the same database of slot %d was handed out later", taken[k], l.Slot))
		default:
			taken[k] = l.ID
			s.restore = append(s.restore, l)
			if s.wantPort == 0 {
				s.wantPort = l.Port
			}
		}
	}
}

// loseRestore loses the leases a slot was to restore and makes it a new
// slot.
func (p *Pool) loseRestore(s *slot, reason, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range s.restore {
		p.lose(l, reason, detail)
	}
	s.restore, s.wantPort = nil, 0
}
