package pool

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/pristinedb/pristine/internal/units"
)

// A slot's memory has two bounds (Options.SlotMemory). The server's own
// ceilings (memoryArgs) stop one MEMORY table, one temporary table and
// one session; a lease can still make many of them. Where the kernel
// allows, each slot's server also runs in a memory cgroup of its own,
// limited to memLimit: past it the kernel reclaims the slot's page cache
// and then kills the slot's server (the OOM killer within the group),
// never another slot or process. The slot is then reported dead with
// reason out_of_memory, its lease lost, and it is reset.
//
// The group is <pristine's own group>/pristine/<pool>/slot-N, in the
// cgroup v2 hierarchy when its memory controller is available, else in
// cgroup v1's memory hierarchy. It needs pristine to run as root. A server is moved
// into its group as soon as it has started, before it allocates its
// buffer pool (v1 moves the charges it made before). Without a usable
// hierarchy (not root, no memory controller, a read-only /sys/fs/cgroup)
// slots have the server's ceilings only, and Status says why.

// memCgroupRoot is where the pristine groups are made; a variable for
// tests.
var memCgroupRoot = "pristine"

// memLimit is the memory cgroup limit of a slot whose server has buffer
// pool bp and memory ceiling m: the buffer pool, the MEMORY and temporary
// tables and sessions' memory a lease may hold twice over, and 128 MiB
// for the server itself (an idle slot takes about 50 MB).
func memLimit(bp, m int64) int64 { return bp + 2*m + 128<<20 }

// memCgroups are a pool's slot groups.
type memCgroups struct {
	dir   string // the pool's group; "" when slots have none
	v2    bool
	limit int64
	mu    sync.Mutex
	// ooms is each slot group's OOM kill count when its server was
	// added, so a death is known to be the kernel's.
	ooms map[int]int64
}

// newMemCgroups makes the pool's group, named name, for slots limited
// to limit bytes, or says why slots get none.
func newMemCgroups(name string, limit int64) (*memCgroups, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("pristine does not run as root")
	}
	mount, v2, err := memoryHierarchy()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroup(v2)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(mount, own)
	c := &memCgroups{dir: filepath.Join(base, memCgroupRoot, name), v2: v2, limit: limit, ooms: map[int]int64{}}
	if v2 {
		// Each level hands the memory controller down to the next; a
		// group with processes of its own (pristine's, unless it is the
		// root) cannot.
		for _, d := range []string{base, filepath.Join(base, memCgroupRoot), c.dir} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("make memory cgroup %s: %w", d, err)
			}
			if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+memory"), 0o644); err != nil {
				return nil, fmt.Errorf("enable the memory controller below %s (cgroup v2 lets a group with processes of its own hand it down only at the root: run pristine in a group of its own with the memory controller delegated): %w", d, err)
			}
		}
		return c, nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("make memory cgroup %s: %w", c.dir, err)
	}
	return c, nil
}

// ownCgroup is pristine's own group in the memory hierarchy (v2: the
// unified one), from /proc/self/cgroup: slots' groups go below it, so
// they count against whatever limits pristine runs under.
func ownCgroup(v2 bool) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if (v2 && f[0] == "0" && f[1] == "") || (!v2 && containsWord(f[1], "memory")) {
			return f[2], nil
		}
	}
	return "", errors.New("/proc/self/cgroup names no group of the memory hierarchy")
}

// memoryHierarchy finds the mount of the cgroup hierarchy with the memory
// controller: cgroup v2's when it has it, else v1's memory hierarchy.
func memoryHierarchy() (mount string, v2 bool, err error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	var v1 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		switch fields[2] {
		case "cgroup2":
			b, err := os.ReadFile(filepath.Join(fields[1], "cgroup.controllers"))
			if err == nil && containsWord(string(b), "memory") && !containsWord(fields[3], "ro") {
				return fields[1], true, nil
			}
		case "cgroup":
			if containsWord(strings.ReplaceAll(fields[3], ",", " "), "memory") && !containsWord(strings.ReplaceAll(fields[3], ",", " "), "ro") {
				v1 = fields[1]
			}
		}
	}
	if v1 != "" {
		return v1, false, nil
	}
	return "", false, errors.New("no writable cgroup hierarchy has the memory controller (cgroup v2's cgroup.controllers lacks memory, and no cgroup v1 memory hierarchy is mounted)")
}

func containsWord(s, w string) bool {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' }) {
		if f == w {
			return true
		}
	}
	return false
}

// slotDir is slot idx's group.
func (c *memCgroups) slotDir(idx int) string { return filepath.Join(c.dir, "slot-"+strconv.Itoa(idx)) }

// add puts server pid of slot idx in the slot's group, made and limited
// on first use.
func (c *memCgroups) add(idx, pid int) error {
	d := c.slotDir(idx)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("make slot memory cgroup: %w", err)
	}
	limit := strconv.FormatInt(c.limit, 10)
	if c.v2 {
		if err := os.WriteFile(filepath.Join(d, "memory.max"), []byte(limit), 0o644); err != nil {
			return fmt.Errorf("limit slot memory cgroup %s: %w", d, err)
		}
		_ = os.WriteFile(filepath.Join(d, "memory.swap.max"), []byte("0"), 0o644)
	} else {
		// No swap past the limit either (memsw is absent without swap
		// accounting). It may never be below the limit: written before
		// the limit for a larger one, after it for a smaller one.
		memsw := filepath.Join(d, "memory.memsw.limit_in_bytes")
		_ = os.WriteFile(memsw, []byte(limit), 0o644)
		if err := os.WriteFile(filepath.Join(d, "memory.limit_in_bytes"), []byte(limit), 0o644); err != nil {
			return fmt.Errorf("limit slot memory cgroup %s: %w", d, err)
		}
		_ = os.WriteFile(memsw, []byte(limit), 0o644)
		// Charges made before the move come along (deprecated in newer
		// kernels, where the move is early enough anyway).
		_ = os.WriteFile(filepath.Join(d, "memory.move_charge_at_immigrate"), []byte("1"), 0o644)
	}
	c.mu.Lock()
	c.ooms[idx] = c.oomKills(idx)
	c.mu.Unlock()
	if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("move slot server %d into memory cgroup %s: %w", pid, d, err)
	}
	return nil
}

// oomKills reads how many processes the kernel killed in slot idx's
// group for want of memory ("oom_kill N" in memory.events, v2, or
// memory.oom_control, v1); 0 when the kernel does not say.
func (c *memCgroups) oomKills(idx int) int64 {
	name := "memory.oom_control"
	if c.v2 {
		name = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(c.slotDir(idx), name))
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
// group since its server was added.
func (c *memCgroups) oomKilled(idx int) bool {
	c.mu.Lock()
	was := c.ooms[idx]
	c.mu.Unlock()
	return c.oomKills(idx) > was
}

// remove removes the groups of slots 0..n-1 and the pool's group; their
// servers have exited.
func (c *memCgroups) remove(n int) {
	for i := 0; i < n; i++ {
		_ = os.Remove(c.slotDir(i))
	}
	_ = os.Remove(c.dir)
	_ = os.Remove(filepath.Dir(c.dir)) // when no other pool has a group
}

// describe says how slots' memory is bounded, for Status.
func describeMemory(m int64, c *memCgroups, why error) string {
	if m <= 0 {
		return "the server's own limits (a lease can raise them)"
	}
	s := fmt.Sprintf("%s per MEMORY table, temporary table and session", units.Bytes(m))
	switch {
	case c != nil && c.v2:
		return s + fmt.Sprintf("; %s per slot server (cgroup v2 memory.max)", units.Bytes(c.limit))
	case c != nil:
		return s + fmt.Sprintf("; %s per slot server (cgroup v1 memory.limit_in_bytes)", units.Bytes(c.limit))
	default:
		return s + fmt.Sprintf("; no limit per slot server (%v)", why)
	}
}

// setupMemory gives the pool its slots' memory groups (Options.SlotMemory)
// or notes, in the log and in Status, why slots have none.
func (p *Pool) setupMemory() {
	if p.opt.SlotMemory <= 0 {
		p.memCap = describeMemory(0, nil, nil)
		return
	}
	c, err := newMemCgroups(p.Meta.Hash[:16], memLimit(p.opt.Profile.BufferPool, p.opt.SlotMemory))
	if err != nil {
		p.log.Warn("slot servers have no memory limit of their own, only the server's per-table and per-session ceilings", "template", p.Meta.Name, "reason", err.Error())
		c = nil
	}
	p.memcg, p.memCap = c, describeMemory(p.opt.SlotMemory, c, err)
}

// limitMemory puts slot idx's new server pid in its memory group, if the
// pool has them.
func (p *Pool) limitMemory(idx, pid int) error {
	if p.memcg == nil {
		return nil
	}
	return p.memcg.add(idx, pid)
}

// memoryExit relabels the death of slot s's server that the kernel
// killed in its memory group: out_of_memory, with the group's limit.
func (p *Pool) memoryExit(s *slot, reason, detail string) (string, string) {
	if reason == ReasonKilled && p.memcg != nil && p.memcg.oomKilled(s.idx) {
		return ReasonOutOfMemory, fmt.Sprintf("slot server went over its memory limit of %s (pool up --slot-memory: buffer pool + 2 x %s + 128 MiB) and the kernel killed it: %s",
			units.Bytes(p.memcg.limit), units.Bytes(p.opt.SlotMemory), detail)
	}
	return reason, detail
}
