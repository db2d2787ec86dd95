package pool

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
)

// janitor reclaims leases that expired or whose holder process exited,
// and keeps the slots' error logs within their cap.
func (p *Pool) janitor() {
	defer p.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for pass := 0; ; pass++ {
		<-t.C
		if !p.reap(time.Now()) {
			return
		}
		if pass%capLogsEvery == 0 {
			p.capLogs()
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

// errorLogCap is how large a slot server's error log may grow before the
// janitor cuts it to its last errorLogKeep bytes (docs/security.md, "Logs
// are capped"): a server logs errors, not refused logins, yet whatever
// makes it write warnings without end must not fill the disk. The kept
// part holds more than the lines a dead server's report reads.
const (
	errorLogCap  = 1 << 20
	errorLogKeep = 128 << 10
)

// capLogsEvery is how many janitor passes go by between two looks at the
// slots' error logs: one stat per slot about once a second.
const capLogsEvery = 4

// capLogs cuts the error log of every slot whose server runs, once it is
// over errorLogCap.
func (p *Pool) capLogs() {
	p.mu.Lock()
	type run struct {
		idx  int
		path string
	}
	var runs []run
	for _, s := range p.slots {
		if s.srv != nil {
			runs = append(runs, run{s.idx, mariadb.Config{RunDir: s.run}.ErrorLog()})
		}
	}
	p.mu.Unlock()
	for _, r := range runs {
		cut, err := mariadb.CapErrorLog(r.path, errorLogCap, errorLogKeep)
		if err != nil {
			p.log.Error("cap a slot's error log", "template", p.Meta.Name, "slot", r.idx, "err", err)
		} else if cut > 0 {
			p.log.Warn("a slot's error log passed its cap: its start was cut", "template", p.Meta.Name, "slot", r.idx, "cut", cut, "cap", errorLogCap)
		}
	}
}
