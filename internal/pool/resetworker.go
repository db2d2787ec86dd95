package pool

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The reset queue (Pool.resetq) and its rule: a slot is in the queue at
// most once, and only while it is Resetting or Failed.
//
// A slot is queued by its move into Resetting (resetIfDone) or Failed
// (watch), or by the retry of a reset that failed (requeue), always under
// p.mu with the pool open; a reset worker takes it off before it resets
// it, and a slot leaves Resetting and Failed only through that worker.
// The queue's buffer holds every slot a pool may have (MaxSlots), so with
// the rule kept no send blocks, though every send is made holding p.mu.
//
// queueReset enforces the rule at every send: a slot already queued, or
// in another state, is refused, logged and counted as an illegal move
// (the state machine let a slot in twice: a bug), and the send never
// blocks. TestResetQueueRule checks the guard; TestResetQueueOnce drives
// every path that queues a slot and fails if any queued one twice.

// resetIfDone queues a slot for reset once none of its databases is on
// lease, being checked, or fresh.
func (p *Pool) resetIfDone(s *slot) {
	if !p.closed && s.needsReset() && (s.state == Leased || s.state == Kept) {
		if p.move(s, Resetting, "its last lease ended") == nil {
			p.queueReset(s)
		}
	}
}

// resetWorker resets slots from the queue: kill the server, throw the clone
// away, clone again, start. A failed reset is retried after a pause.
func (p *Pool) resetWorker() {
	defer p.wg.Done()
	for s := range p.resetq {
		p.mu.Lock()
		s.queued = false // taken: the rule above
		p.mu.Unlock()
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
		err := p.killGroup(s.idx) // what the old server forked
		if err == nil {
			err = p.startSlot(context.Background(), s, gen)
		}
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
	p.stats.ResetFailures++
	p.slotFailed(s, err, "the reset could not start a server", ReasonResetFailed, "reset failed (retried every second): ")
}

// slotFailed moves a slot that could not start a server (why) to Failed
// and retries it after Pool.retryEvery; the first failure of a run is
// reported as a slot death for reason, its detail prefixed. The caller
// holds p.mu.
func (p *Pool) slotFailed(s *slot, err error, why, reason, prefix string) {
	s.err = err.Error()
	if s.state != Failed && p.move(s, Failed, why) != nil {
		return
	}
	if !p.closed && !s.failing {
		// Logged once per run of failures; retried every second.
		p.emit(Event{Kind: EventSlotDied, Slot: s.idx, Reason: reason, Detail: prefix + err.Error()})
	}
	s.failing = true
	if !p.closed {
		go func() { time.Sleep(p.retryEvery); p.requeue(s) }()
	}
}

// requeue queues a slot whose reset failed again, after the pause.
func (p *Pool) requeue(s *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.queueReset(s)
	}
}

// queueReset puts slot s in the reset queue, keeping the queue's rule
// (above): a slot already queued, or neither Resetting nor Failed, is
// refused, logged and counted (Stats.IllegalMoves). The caller holds p.mu
// and has checked that the pool is open.
func (p *Pool) queueReset(s *slot) {
	if err := queueable(s); err != nil {
		p.stats.IllegalMoves++
		p.log.Error("reset queueing refused", "template", p.Meta.Name, "slot", s.idx, "error", err.Error())
		return
	}
	select {
	case p.resetq <- s:
		s.queued = true
	default:
		// Cannot happen while the rule holds: the buffer has room for
		// every slot once. Blocking here would hold p.mu for ever.
		panic(fmt.Sprintf("pool %s: the reset queue is full with %d slots (buffer %d): a slot was queued twice", p.Meta.Name, len(p.slots), cap(p.resetq)))
	}
}

// queueable says why slot s may not be queued for reset now, or nil.
func queueable(s *slot) error {
	switch {
	case s.queued:
		return fmt.Errorf("slot %d is in the reset queue already (%s)", s.idx, s.state)
	case s.state != Resetting && s.state != Failed:
		return fmt.Errorf("slot %d is %s, and only a resetting or failed slot is reset", s.idx, s.state)
	}
	return nil
}
