package pool

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pristinedb/pristine/internal/units"
)

// A slot's memory has two bounds (Options.SlotMemory). The server's own
// ceilings (memoryArgs) stop one MEMORY table, one temporary table and
// one session; a lease can still make many of them. Where the kernel
// allows, each slot's server also runs in a memory cgroup of its own (its
// slot group, slotgroups.go), limited to memLimit: past it the kernel
// reclaims the slot's page cache and then kills the slot's server (the
// OOM killer within the group), never another slot or process. The slot
// is then reported dead with reason out_of_memory, its lease lost, and it
// is reset.
//
// The limit is set in cgroup v2's hierarchy when its memory controller is
// available, else in cgroup v1's memory hierarchy. It needs pristine to
// run as root. A server is started in its v2 group, or moved into its v1
// group as soon as it has started, before it allocates its buffer pool
// (v1 moves the charges it made before). Without a usable hierarchy (not
// root, no memory controller, a read-only /sys/fs/cgroup) slots have the
// server's ceilings only, and Status says why.

// memLimit is the memory cgroup limit of a slot whose server has buffer
// pool bp and memory ceiling m: the buffer pool, the MEMORY and temporary
// tables and sessions' memory a lease may hold twice over, and 128 MiB
// for the server itself (an idle slot takes about 50 MB).
func memLimit(bp, m int64) int64 { return bp + 2*m + 128<<20 }

// limitMemory limits slot group d (v2 or v1) to limit bytes, swap
// included.
func limitMemory(d string, v2 bool, limit int64) error {
	l := strconv.FormatInt(limit, 10)
	if v2 {
		if err := os.WriteFile(filepath.Join(d, "memory.max"), []byte(l), 0o644); err != nil {
			return fmt.Errorf("limit slot memory cgroup %s: %w", d, err)
		}
		_ = os.WriteFile(filepath.Join(d, "memory.swap.max"), []byte("0"), 0o644)
		return nil
	}
	// No swap past the limit either (memsw is absent without swap
	// accounting). It may never be below the limit: written before the
	// limit for a larger one, after it for a smaller one.
	memsw := filepath.Join(d, "memory.memsw.limit_in_bytes")
	_ = os.WriteFile(memsw, []byte(l), 0o644)
	if err := os.WriteFile(filepath.Join(d, "memory.limit_in_bytes"), []byte(l), 0o644); err != nil {
		return fmt.Errorf("limit slot memory cgroup %s: %w", d, err)
	}
	_ = os.WriteFile(memsw, []byte(l), 0o644)
	// Charges made before the move come along (deprecated in newer
	// kernels, where the move is early enough anyway).
	_ = os.WriteFile(filepath.Join(d, "memory.move_charge_at_immigrate"), []byte("1"), 0o644)
	return nil
}

// memoryHier is the hierarchy that limits slots' memory, if any.
func (g *slotGroups) memoryHier() (hierarchy, bool) {
	for _, h := range g.hs {
		if h.memory {
			return h, true
		}
	}
	return hierarchy{}, false
}

// oomKills reads how many processes the kernel killed in slot idx's
// memory group for want of memory ("oom_kill N" in memory.events, v2, or
// memory.oom_control, v1); 0 when the kernel does not say.
func (g *slotGroups) oomKills(idx int) int64 {
	h, ok := g.memoryHier()
	if !ok {
		return 0
	}
	name := "memory.oom_control"
	if h.v2 {
		name = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(h.slotDir(idx), name))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// oomKilled reports whether the kernel killed a process in slot idx's
// memory group since its server was added.
func (g *slotGroups) oomKilled(idx int) bool {
	g.mu.Lock()
	was := g.ooms[idx]
	g.mu.Unlock()
	return g.oomKills(idx) > was
}

// describeMemory says how slots' memory is bounded, for Status: m is
// Options.SlotMemory, g the pool's slot groups (nil: none, for reason
// why).
func describeMemory(m int64, g *slotGroups, why error) string {
	if m <= 0 {
		return "the server's own limits (a lease can raise them)"
	}
	s := fmt.Sprintf("%s per MEMORY table, temporary table and session", units.Bytes(m))
	if g != nil {
		why = g.memWhy
	}
	h, ok := hierarchy{}, false
	if g != nil {
		h, ok = g.memoryHier()
	}
	switch {
	case ok && h.v2:
		return s + fmt.Sprintf("; %s per slot server (cgroup v2 memory.max)", units.Bytes(g.memLimit))
	case ok:
		return s + fmt.Sprintf("; %s per slot server (cgroup v1 memory.limit_in_bytes)", units.Bytes(g.memLimit))
	default:
		return s + fmt.Sprintf("; no limit per slot server (%v)", why)
	}
}

// memoryExit relabels the death of slot s's server that the kernel
// killed in its memory group: out_of_memory, with the group's limit.
func (p *Pool) memoryExit(s *slot, reason, detail string) (string, string) {
	if reason == ReasonKilled && p.groups != nil && p.groups.oomKilled(s.idx) {
		return ReasonOutOfMemory, fmt.Sprintf("slot server went over its memory limit of %s (pool up --slot-memory: buffer pool + 2 x %s + 128 MiB) and the kernel killed it: %s",
			units.Bytes(p.groups.memLimit), units.Bytes(p.opt.SlotMemory), detail)
	}
	return reason, detail
}
