package pool

import (
	"context"
	"errors"
	"time"
)

// resetIfDone queues a slot for reset once none of its databases is on
// lease, being checked, or fresh.
func (p *Pool) resetIfDone(s *slot) {
	if !p.closed && s.needsReset() && (s.state == Leased || s.state == Kept) {
		if p.move(s, Resetting, "its last lease ended") == nil {
			p.resetq <- s
		}
	}
}

// resetWorker resets slots from the queue: kill the server, throw the clone
// away, clone again, start. A failed reset is retried after a pause.
func (p *Pool) resetWorker() {
	defer p.wg.Done()
	for s := range p.resetq {
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
