package pool

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

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
