package pool

import (
	"sort"
	"time"
)

// Stats are the pool's counters and recent timings.
type Stats struct {
	UpSeconds     float64 `json:"up_seconds"`
	Leases        int64   `json:"leases"`
	Expired       int64   `json:"expired"`
	HolderGone    int64   `json:"holder_gone"`
	Reused        int64   `json:"reused_unchanged"`
	JournalErrors int64   `json:"journal_errors,omitempty"`
	Replaced      int64   `json:"replaced"`
	ResetFailures int64   `json:"reset_failures"`
	// OverCap counts slots that wrote past their disk cap and were made
	// read-only until released.
	OverCap int64 `json:"over_cap,omitempty"`
	// CapKills counts the times a slot over its disk cap kept growing
	// (temporary tables, which read_only does not stop) and its
	// connections were killed.
	CapKills int64 `json:"cap_kills,omitempty"`
	// Grown counts the slots Grow added or started again; ShrunkIdle the
	// slots ShrinkIdle retired.
	Grown      int64 `json:"grown,omitempty"`
	ShrunkIdle int64 `json:"shrunk_idle,omitempty"`
	// GrownForWaits counts the slots of Grown the pool grew by itself
	// because lease requests waited behind resets (Options.Spares).
	GrownForWaits int64 `json:"grown_for_waits,omitempty"`
	// IllegalMoves counts slot moves the state machine refused and resets
	// queued against the queue's rule (resetworker.go): each a bug, logged.
	IllegalMoves int64 `json:"illegal_moves,omitempty"`
	// SlotDeaths counts slots whose server died, by reason (Reason*).
	SlotDeaths map[string]int64 `json:"slot_deaths,omitempty"`
	// LeasesLost counts leases that ended without their holder releasing
	// them, by reason (expiry and a holder's exit are counted apart).
	LeasesLost map[string]int64 `json:"leases_lost,omitempty"`
	// ResetPaths counts resets by the path they took: "inplace", "full"
	// (never tried in place) or "full:<reason>" (Fallback*).
	ResetPaths map[string]int64 `json:"reset_paths,omitempty"`
	// TablesRestored counts the tables in-place resets restored.
	TablesRestored int64 `json:"tables_restored,omitempty"`
	waits          ring
	resets         ring
}

// ring keeps the last samples of a duration.
type ring struct {
	buf  [1024]time.Duration
	n    int
	next int
}

func (r *ring) add(d time.Duration) {
	r.buf[r.next] = d
	r.next = (r.next + 1) % len(r.buf)
	if r.n < len(r.buf) {
		r.n++
	}
}

// quantiles returns p50, p99 and max of the samples, in milliseconds.
func (r *ring) quantiles() (p50, p99, maxMS float64) {
	if r.n == 0 {
		return 0, 0, 0
	}
	s := append([]time.Duration(nil), r.buf[:r.n]...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return ms(s[len(s)/2]), ms(s[(len(s)*99)/100]), ms(s[len(s)-1])
}

// SlotStatus is one slot as status reports it.
type SlotStatus struct {
	Slot   int       `json:"slot"`
	State  State     `json:"state"`
	Port   int       `json:"port"`
	PID    int       `json:"pid,omitempty"`
	Leases int       `json:"leases"`
	Since  time.Time `json:"since"`
	Error  string    `json:"error,omitempty"`
}

// Status is a snapshot of a pool.
type Status struct {
	Template string `json:"template"`
	Hash     string `json:"hash"`
	// Size counts the live slots (every state but retired), the ones
	// still starting included; Base is the size the pool was brought up
	// with, which idle shrinking keeps.
	Size       int           `json:"size"`
	Base       int           `json:"base_size"`
	DBsPerSlot int           `json:"dbs_per_slot"`
	Backend    string        `json:"backend"`
	States     map[State]int `json:"states"`
	Leased     int           `json:"leased"`
	Stats      Stats         `json:"stats"`
	WaitP50MS  float64       `json:"lease_wait_p50_ms"`
	WaitP99MS  float64       `json:"lease_wait_p99_ms"`
	ResetP50MS float64       `json:"reset_p50_ms"`
	ResetP99MS float64       `json:"reset_p99_ms"`
	ResetMaxMS float64       `json:"reset_max_ms"`
	Slots      []SlotStatus  `json:"slots,omitempty"`
	// DiskCap says how much each slot may write (pool up --slot-disk) and
	// how that is enforced, or why it is not ("off: ...").
	DiskCap string `json:"disk_cap,omitempty"`
	// MemoryCap says how each slot's memory is bounded (pool up
	// --slot-memory) and, where a slot server has no memory cgroup, why.
	MemoryCap string `json:"memory_cap,omitempty"`
	// Processes says how a slot's processes are held and killed with it
	// (a cgroup per slot) or why they are not.
	Processes string `json:"processes,omitempty"`
}

// Status reports the pool's slots and counters.
func (p *Pool) Status(withSlots bool) Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{Template: p.Meta.Name, Hash: p.Meta.Hash, Size: p.live(), Base: p.opt.Size, DBsPerSlot: len(p.Meta.Databases),
		Backend: p.backend.Name(), States: map[State]int{}, Leased: len(p.leases), Stats: p.stats, DiskCap: p.diskCap, MemoryCap: p.memCap, Processes: p.procCap}
	st.Stats.SlotDeaths, st.Stats.LeasesLost = copyCounts(p.stats.SlotDeaths), copyCounts(p.stats.LeasesLost)
	st.Stats.ResetPaths = copyCounts(p.stats.ResetPaths)
	st.WaitP50MS, st.WaitP99MS, _ = p.stats.waits.quantiles()
	st.ResetP50MS, st.ResetP99MS, st.ResetMaxMS = p.stats.resets.quantiles()
	for _, s := range p.slots {
		st.States[s.state]++
		if withSlots {
			ss := SlotStatus{Slot: s.idx, State: s.state, Port: s.port, Leases: s.active(), Since: s.since, Error: s.err}
			if s.srv != nil && s.srv.Running() {
				ss.PID = s.srv.PID()
			}
			st.Slots = append(st.Slots, ss)
		}
	}
	return st
}

func copyCounts(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
