package pool

// Spares: the pool adapts to the lease rate. When a lease request has to
// wait because no slot is free while some slot is resetting, the pool
// grows by one slot (Options.Spares > 0), so a burst of leases does not
// queue behind resets. At most one such growth is in flight: none starts
// while any slot is starting (it will be ready soon) or while the last
// one is still being checked against the budget. The pool never grows
// this way past Options.Spares slots beyond its size, or beyond the size
// a client last grew it to; the idle shrink (ShrinkIdle) retires the
// spares once the burst is over.

// spareState is the pool's growing for waits; guarded by p.mu.
type spareState struct {
	// asked is the largest size a client grew the pool to (Grow).
	asked int
	// growing is set while a growth for waits is checked and begun.
	growing bool
	// lastErr is the last reason a growth for waits was refused, logged
	// once each time it changes.
	lastErr string
}

// GrowForWait grows the pool to want slots like Grow, counted as a
// growth for waiting lease requests (Stats.GrownForWaits). It does not
// check memory or disk: its caller does (Options.GrowForWait).
func (p *Pool) GrowForWait(want int) (int, error) { return p.grow(want, true) }

// spareCeiling is how many live slots growing for waits may reach; the
// caller holds p.mu.
func (p *Pool) spareCeiling() int {
	return max(p.opt.Size, p.spares.asked) + p.opt.Spares
}

// needSpare reports the size to grow to for a lease request that found
// no free slot, or 0 when the pool should not grow (off, a growth under
// way, a slot starting, nothing resetting, at the ceiling). A non-zero
// answer marks a growth as under way; the caller holds p.mu and runs
// growSpare.
func (p *Pool) needSpare() int {
	if p.opt.Spares <= 0 || p.spares.growing || p.closed {
		return 0
	}
	live, resetting := 0, false
	for _, s := range p.slots {
		switch s.state {
		case Starting:
			return 0
		case Resetting:
			resetting = true
		}
		if s.state != Retired {
			live++
		}
	}
	if !resetting || live >= p.spareCeiling() || live >= MaxSlots {
		return 0
	}
	p.spares.growing = true
	return live + 1
}

// growSpare grows the pool to want slots for waiting lease requests,
// within the budget (Options.GrowForWait, or CheckGrow); a refusal is
// logged when its reason changes. The caller did p.wg.Add(1).
func (p *Pool) growSpare(want int) {
	defer p.wg.Done()
	var err error
	if p.opt.GrowForWait != nil {
		err = p.opt.GrowForWait(p, want)
	} else if err = p.CheckGrow(1); err == nil {
		_, err = p.GrowForWait(want)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spares.growing = false
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != "" && msg != p.spares.lastErr {
		p.log.Info("pool not grown for waiting leases", "template", p.Meta.Name, "to", want, "err", msg)
	}
	p.spares.lastErr = msg
}
