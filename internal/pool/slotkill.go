package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Stopping a slot kills what is left in its group (slotgroups.go): the
// server was stopped first, so what is left is what it forked. A group
// that held processes is removed and made again for the next server.

// groupKillWait bounds how long a slot group's processes may take to die.
const groupKillWait = 10 * time.Second

// kill kills every process of slot idx's group and waits until the group
// is empty. The server's own stop came first; what is left is what it
// forked. An empty group costs one read.
func (g *slotGroups) kill(idx int) error {
	h := g.hs[0]
	d := h.slotDir(idx)
	pids, err := groupPids(d)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil // never made, or removed: nothing in it
	case err != nil:
		return fmt.Errorf("list slot %d's processes: %w", idx, err)
	case len(pids) == 0:
		return nil
	}
	if h.kill {
		if err := os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0o644); err != nil {
			return fmt.Errorf("kill slot %d's processes (cgroup.kill of %s): %w", idx, d, err)
		}
	} else if pidsDir := g.pidsSlotDir(idx); pidsDir != "" {
		// No fork from now on, so the kills below catch every process.
		_ = os.WriteFile(filepath.Join(pidsDir, "pids.max"), []byte("0"), 0o644)
	}
	deadline := time.Now().Add(groupKillWait)
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		if !h.kill {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if pids, err = groupPids(d); err != nil || len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slot %d's processes %v in cgroup %s did not die within %s", idx, pids, d, groupKillWait)
		}
		time.Sleep(pause)
	}
	// The next server gets new groups: Linux kills a process started
	// into a group (clone3) that cgroup.kill killed before, and pids.max
	// still counts the killed processes nobody has reaped yet.
	return g.drop(idx)
}

// drop removes slot idx's groups, which hold no process; the slot's next
// start makes them again.
func (g *slotGroups) drop(idx int) error {
	g.mu.Lock()
	delete(g.made, idx)
	g.mu.Unlock()
	var errs []error
	for _, h := range g.hs {
		if err := os.Remove(h.slotDir(idx)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove slot %d's cgroup: %w", idx, err))
		}
	}
	return errors.Join(errs...)
}

// pidsSlotDir is slot idx's group in the hierarchy that limits its
// processes, or "".
func (g *slotGroups) pidsSlotDir(idx int) string {
	for _, h := range g.hs {
		if h.pids {
			return h.slotDir(idx)
		}
	}
	return ""
}

// groupPids lists the processes in group d.
func groupPids(d string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// remove kills slot idx's processes and removes its groups. A group
// whose processes would not die is kept, and the error says so.
func (g *slotGroups) remove(idx int) error {
	if err := g.kill(idx); err != nil {
		return err
	}
	return g.drop(idx)
}

// removePool removes the pool's groups, and pristine's when no other pool
// has one; every slot group is gone.
func (g *slotGroups) removePool() {
	for _, h := range g.hs {
		_ = os.Remove(h.dir)
		_ = os.Remove(filepath.Dir(h.dir))
	}
}

// removeLeftovers kills and removes the slot groups of this pool that a
// pristine killed before its Down left.
func (g *slotGroups) removeLeftovers() {
	ents, _ := os.ReadDir(g.hs[0].dir)
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), "slot-")
		idx, err := strconv.Atoi(n)
		if ok && err == nil && e.IsDir() {
			_ = g.remove(idx)
		}
	}
}

// killGroup kills what is left in slot idx's group once its server is
// gone.
func (p *Pool) killGroup(idx int) error {
	if p.groups == nil {
		return nil
	}
	return p.groups.kill(idx)
}

// dropGroup kills what is left in slot idx's group once its server is
// gone, and removes the group: the slot goes.
func (p *Pool) dropGroup(idx int) error {
	if p.groups == nil {
		return nil
	}
	if err := p.groups.remove(idx); err != nil {
		p.log.Error("a slot's processes outlived it: its server id is kept", "template", p.Meta.Name, "slot", idx, "error", err.Error())
		return err
	}
	return nil
}

// foreignProcess reports whether slot idx's group holds a process other
// than its server, server: one read of the group's cgroup.procs (which
// lists processes, not the server's threads). Without groups it reports
// false.
func (p *Pool) foreignProcess(idx, server int) bool {
	if p.groups == nil {
		return false
	}
	pids, err := groupPids(p.groups.hs[0].slotDir(idx))
	if err != nil {
		return false // no group made: nothing in it
	}
	for _, pid := range pids {
		if pid != server {
			return true
		}
	}
	return false
}
