package pool

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/pristinedb/pristine/internal/mountinfo"
)

// A slot's processes die with it. Where pristine runs as root and a
// cgroup hierarchy is writable, every process of a slot's server lives in
// a group of the slot, <pristine's own group>/pristine/<pool>/slot-N, and
// stopping the slot (pool down, a reset that replaces its server, a
// shrink, a dead slot's replacement) kills the whole group once its
// server is gone and, when the slot goes, removes it. A process the
// server forked cannot outlive the slot, so the slot's server id is never
// given back while something still runs as it (svcuser.Claim checks that
// too, for what no group holds).
//
// The group is made in every hierarchy that has a part to play:
//
//   - cgroup v2's unified hierarchy, mounted writable, tracks the
//     processes: the server is started in its group (clone3 into the
//     group), so nothing it forks is ever outside, and the group is
//     killed at once with cgroup.kill (Linux 5.14) or else by SIGKILL to
//     every process it lists, again until it lists none. It limits the
//     server's memory (memory.max) and its processes and threads
//     (pids.max) when its controllers can be handed down to pristine's
//     group.
//   - cgroup v1's pids and memory hierarchies limit what v2 cannot (a
//     host whose controllers are still in v1); the server is moved into
//     them right after it starts, before it runs anything a client sent.
//     Without a writable v2 hierarchy, the pids hierarchy (else the
//     memory one) tracks the processes: before its kill, pids.max 0 stops
//     every fork.
//
// The pool's group name holds a hash of the pool's directory, so pools of
// the same template in two roots never share a group. A pool coming up
// kills and removes its own groups a killed pristine left.

// groupRoot is the group below pristine's own where pool groups are made;
// a variable for tests.
var groupRoot = "pristine"

// useV2 lets slot groups use cgroup v2; tests turn it off to drive
// cgroup v1 alone.
var useV2 = true

// slotPids is the pids.max of a slot group whose server takes up to
// maxConn connections: every connection is a thread, and a thread counts
// as a process. An idle server has 13 threads of its own (MariaDB 10.11
// and 11.8) or 27 (MySQL 9.7; docs/security.md); twice the connections
// plus 256 leaves room for the threads a busy server adds (InnoDB's
// parallel reads and DDL), and still stops a fork bomb.
func slotPids(maxConn int) int64 { return int64(256 + 2*maxConn) }

// hierarchy is one cgroup hierarchy the pool's slot groups live in.
type hierarchy struct {
	dir    string // the pool's group in it
	v2     bool
	memory bool // slots' memory is limited here
	pids   bool // slots' processes are limited here
	kill   bool // cgroup.kill exists (v2, Linux 5.14)
}

// slotGroups are a pool's slot groups.
type slotGroups struct {
	// hs are the hierarchies; hs[0] tracks and kills the processes.
	hs       []hierarchy
	memLimit int64 // per slot; 0: none
	pidsMax  int64
	// memWhy and pidsWhy say why slots' memory or processes are not
	// limited; nil when they are (or, for memory, no limit was asked).
	memWhy, pidsWhy error
	mu              sync.Mutex
	made            map[int]bool  // slot groups made and limited
	ooms            map[int]int64 // each slot group's OOM kills when its server was added
}

// mounts are the writable cgroup hierarchies of the host.
type mounts struct {
	v2               string // the unified hierarchy's mount
	v1pids, v1memory string // cgroup v1's pids and memory hierarchies' mounts
}

// readMounts finds the writable cgroup mounts in /proc/self/mountinfo.
func readMounts() (mounts, error) {
	var m mounts
	all, err := mountinfo.Read()
	if err != nil {
		return m, err
	}
	for _, mt := range all {
		if containsWord(mt.MountOptions, "ro") || containsWord(mt.Options, "ro") {
			continue
		}
		switch mt.FSType {
		case "cgroup2":
			if m.v2 == "" {
				m.v2 = mt.Point
			}
		case "cgroup":
			if containsWord(mt.Options, "pids") && m.v1pids == "" {
				m.v1pids = mt.Point
			}
			if containsWord(mt.Options, "memory") && m.v1memory == "" {
				m.v1memory = mt.Point
			}
		}
	}
	return m, nil
}

// ownCgroup is pristine's own group in a hierarchy, from /proc/self/cgroup:
// v2's ("0::"), or v1's that carries controller ctl. Slots' groups go
// below it, so they count against whatever limits pristine runs under.
func ownCgroup(v2 bool, ctl string) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if (v2 && f[0] == "0" && f[1] == "") || (!v2 && containsWord(f[1], ctl)) {
			return f[2], nil
		}
	}
	if v2 {
		return "", errors.New("/proc/self/cgroup names no group of the unified hierarchy")
	}
	return "", fmt.Errorf("/proc/self/cgroup names no group of the %s hierarchy", ctl)
}

func containsWord(s, w string) bool {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' }) {
		if f == w {
			return true
		}
	}
	return false
}

// poolGroupName is the name of the pool in directory dir of template
// hash: the template's and a hash of the directory, which holds the root.
func poolGroupName(hash, dir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return hash[:16] + "-" + hex.EncodeToString(sum[:4])
}

// newSlotGroups makes the pool's groups, named name, for slots limited to
// memLimit bytes (0: no memory limit) and pidsMax processes, or says why
// slots get none. It kills and removes slot groups of the same name a
// killed pristine left.
func newSlotGroups(name string, memLimit, pidsMax int64) (*slotGroups, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("pristine does not run as root")
	}
	m, err := readMounts()
	if err != nil {
		return nil, err
	}
	g := &slotGroups{memLimit: memLimit, pidsMax: pidsMax, made: map[int]bool{}, ooms: map[int]int64{}}
	var v2err error
	if m.v2 != "" && useV2 {
		v2err = g.addV2(m.v2, name)
	}
	if !g.limits("pids") {
		g.addV1(m.v1pids, "pids", true, name, &g.pidsWhy)
	}
	if memLimit > 0 && !g.limits("memory") {
		g.addV1(m.v1memory, "memory", true, name, &g.memWhy)
	}
	if len(g.hs) == 0 && memLimit == 0 {
		var why error // a v1 memory group without a limit tracks processes
		g.addV1(m.v1memory, "memory", false, name, &why)
	}
	if len(g.hs) == 0 {
		if v2err != nil {
			return nil, v2err
		}
		return nil, errors.New("no writable cgroup hierarchy: neither cgroup v2 nor cgroup v1's pids or memory hierarchy is mounted writable")
	}
	if g.pidsWhy == nil && !g.limits("pids") {
		g.pidsWhy = errors.New("no cgroup hierarchy has the pids controller")
	}
	if memLimit > 0 && g.memWhy == nil && !g.limits("memory") {
		g.memWhy = errors.New("no writable cgroup hierarchy has the memory controller (cgroup v2's cgroup.controllers lacks memory, and no cgroup v1 memory hierarchy is mounted)")
	}
	g.removeLeftovers()
	return g, nil
}

// limits reports whether a hierarchy of g limits controller ctl.
func (g *slotGroups) limits(ctl string) bool {
	for _, h := range g.hs {
		if (ctl == "pids" && h.pids) || (ctl == "memory" && h.memory) {
			return true
		}
	}
	return false
}

// addV2 makes the pool's group in the unified hierarchy mounted at mount
// and hands it the pids and memory controllers where it can. Each level
// hands a controller down to the next; a group with processes of its own
// (pristine's, unless it is the root) cannot, and then v1 limits instead,
// where mounted.
func (g *slotGroups) addV2(mount, name string) error {
	own, err := ownCgroup(true, "")
	if err != nil {
		return err
	}
	base := filepath.Join(mount, own)
	h := hierarchy{dir: filepath.Join(base, groupRoot, name), v2: true}
	levels := []string{base, filepath.Join(base, groupRoot), h.dir}
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		return fmt.Errorf("make cgroup %s: %w", h.dir, err)
	}
	ctls, _ := os.ReadFile(filepath.Join(base, "cgroup.controllers"))
	enable := func(ctl string) error {
		if !containsWord(string(ctls), ctl) {
			return fmt.Errorf("cgroup v2's cgroup.controllers lacks %s", ctl)
		}
		for _, d := range levels {
			if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+"+ctl), 0o644); err != nil {
				return fmt.Errorf("enable the %s controller below %s (cgroup v2 lets a group with processes of its own hand it down only at the root: run pristine in a group of its own with the %s controller delegated): %w", ctl, d, ctl, err)
			}
		}
		return nil
	}
	g.pidsWhy = enable("pids")
	h.pids = g.pidsWhy == nil
	if g.memLimit > 0 {
		g.memWhy = enable("memory")
		h.memory = g.memWhy == nil
	}
	_, err = os.Stat(filepath.Join(h.dir, "cgroup.kill"))
	h.kill = err == nil
	g.hs = append(g.hs, h)
	return nil
}

// addV1 makes the pool's group in cgroup v1's hierarchy of controller
// ctl, mounted at mount (none: nothing to do), limiting ctl there when
// limit is set (else tracking only). A failure is kept in why.
func (g *slotGroups) addV1(mount, ctl string, limit bool, name string, why *error) {
	if mount == "" {
		return
	}
	own, err := ownCgroup(false, ctl)
	if err != nil {
		*why = err
		return
	}
	h := hierarchy{dir: filepath.Join(mount, own, groupRoot, name), memory: limit && ctl == "memory", pids: limit && ctl == "pids"}
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		*why = fmt.Errorf("make cgroup %s: %w", h.dir, err)
		return
	}
	*why = nil
	g.hs = append(g.hs, h)
}

// slotDir is slot idx's group in h.
func (h hierarchy) slotDir(idx int) string { return filepath.Join(h.dir, "slot-"+strconv.Itoa(idx)) }

// prepare makes slot idx's groups and their limits, once per slot (a
// reset keeps them), and returns the v2 group its server is to start in
// ("" when there is none: the server is moved after it starts, enter).
func (g *slotGroups) prepare(idx int) (string, error) {
	g.mu.Lock()
	made := g.made[idx]
	g.mu.Unlock()
	if !made {
		for _, h := range g.hs {
			if err := g.makeSlot(h, idx); err != nil {
				return "", err
			}
		}
		g.mu.Lock()
		g.made[idx] = true
		g.mu.Unlock()
	}
	if g.memLimit > 0 {
		n := g.oomKills(idx)
		g.mu.Lock()
		g.ooms[idx] = n
		g.mu.Unlock()
	}
	if g.hs[0].v2 {
		return g.hs[0].slotDir(idx), nil
	}
	return "", nil
}

// makeSlot makes slot idx's group in h with h's limits.
func (g *slotGroups) makeSlot(h hierarchy, idx int) error {
	d := h.slotDir(idx)
	if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make slot cgroup: %w", err)
	}
	if h.pids {
		if err := os.WriteFile(filepath.Join(d, "pids.max"), []byte(strconv.FormatInt(g.pidsMax, 10)), 0o644); err != nil {
			return fmt.Errorf("limit slot cgroup %s: %w", d, err)
		}
	}
	if h.memory {
		return limitMemory(d, h.v2, g.memLimit)
	}
	return nil
}

// enter moves server pid of slot idx into the slot's groups it was not
// started in: every v1 hierarchy's.
func (g *slotGroups) enter(idx, pid int) error {
	for _, h := range g.hs {
		if h.v2 {
			continue // started in it (mariadb.Config.Cgroup)
		}
		d := h.slotDir(idx)
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("move slot server %d into cgroup %s: %w", pid, d, err)
		}
	}
	return nil
}

// describe says how slots' processes are held, for Status.
func (g *slotGroups) describe(why error) string {
	if g == nil {
		return fmt.Sprintf("no cgroup per slot (%v): a slot's server is killed with it, what it forked is not; a server id is still never handed out while a process runs as it", why)
	}
	h := g.hs[0]
	s := "cgroup v1 " + filepath.Dir(h.dir) + "/<pool>/slot-N per slot, killed with it (SIGKILL to each of its processes)"
	if h.v2 {
		how := "SIGKILL to each of its processes"
		if h.kill {
			how = "cgroup.kill"
		}
		s = fmt.Sprintf("cgroup v2 %s/<pool>/slot-N per slot, servers started in it, killed with it (%s)", filepath.Dir(h.dir), how)
	}
	if g.pidsWhy != nil {
		return s + fmt.Sprintf("; no process limit (%v)", g.pidsWhy)
	}
	for _, h := range g.hs {
		if h.pids && !h.v2 {
			return s + fmt.Sprintf("; at most %d processes and threads (cgroup v1 pids.max)", g.pidsMax)
		}
	}
	return s + fmt.Sprintf("; at most %d processes and threads (pids.max)", g.pidsMax)
}

// setupGroups gives the pool its slot groups (memory limited with
// Options.SlotMemory) or notes, in the log and in Status, why slots have
// none.
func (p *Pool) setupGroups() {
	var mem int64
	if p.opt.SlotMemory > 0 {
		mem = memLimit(p.opt.Profile.BufferPool, p.opt.SlotMemory)
	}
	g, err := newSlotGroups(poolGroupName(p.Meta.Hash, p.dir), mem, slotPids(p.opt.Profile.MaxConnections))
	switch {
	case err != nil:
		p.log.Warn("slot servers have no cgroup of their own: what a server forks is not killed with its slot, and its memory has only the server's per-table and per-session ceilings", "template", p.Meta.Name, "reason", err.Error())
	case mem > 0 && g.memWhy != nil:
		p.log.Warn("slot servers have no memory limit of their own, only the server's per-table and per-session ceilings", "template", p.Meta.Name, "reason", g.memWhy.Error())
	}
	p.groups, p.memCap, p.procCap = g, describeMemory(p.opt.SlotMemory, g, err), g.describe(err)
}

// slotCgroup makes slot idx's groups, if the pool has them, and returns
// the v2 group its server starts in ("": none).
func (p *Pool) slotCgroup(idx int) (string, error) {
	if p.groups == nil {
		return "", nil
	}
	return p.groups.prepare(idx)
}

// enterGroups moves slot idx's new server pid into the slot's groups it
// did not start in.
func (p *Pool) enterGroups(idx, pid int) error {
	if p.groups == nil {
		return nil
	}
	return p.groups.enter(idx, pid)
}
