package pool

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestSlotGroups drives a slot's groups through the start and stop of a
// slot, with cgroup v2 tracking the processes (where mounted writable)
// and with cgroup v1 alone: a process started in the slot's groups that
// ignores SIGTERM and forks until pids.max stops it, all of it killed by
// kill, the groups gone after remove. It logs what each step costs.
func TestSlotGroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: cgroups")
	}
	for _, v2 := range []bool{true, false} {
		t.Run(map[bool]string{true: "v2", false: "v1"}[v2], func(t *testing.T) {
			defer func(old bool) { useV2 = old }(useV2)
			useV2 = v2
			const pidsMax = 16
			g, err := newSlotGroups(fmt.Sprintf("test-%d-%t", os.Getpid(), v2), 64<<20, pidsMax)
			if err != nil {
				t.Skipf("no slot groups here: %v", err)
			}
			t.Cleanup(func() { cleanGroups(g, 0) })
			if g.hs[0].v2 != v2 {
				t.Skipf("no writable cgroup v2 hierarchy here: %s", g.describe(nil))
			}
			t.Logf("%s", g.describe(nil))
			for round := 0; round < 2; round++ { // the second: a reset's group, killed before
				start := time.Now()
				cg, err := g.prepare(0)
				if err != nil {
					t.Fatal(err)
				}
				prepared := time.Since(start)
				cmd, in := forkBomb(t, cg)
				start = time.Now()
				if err := g.enter(0, cmd.Process.Pid); err != nil {
					t.Fatal(err)
				}
				entered := time.Since(start)
				if _, err := io.WriteString(in, "go\n"); err != nil {
					t.Fatal(err)
				}
				n := waitForks(t, g, pidsMax)
				done := make(chan struct{})
				go func() { _ = cmd.Wait(); close(done) }()
				start = time.Now()
				if err := g.kill(0); err != nil {
					t.Fatal(err)
				}
				killed := time.Since(start)
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Fatal("the slot's first process outlived its group's kill")
				}
				start = time.Now()
				if err := g.kill(0); err != nil {
					t.Fatal(err)
				}
				t.Logf("round %d: prepare %v, enter %v, %d processes (pids.max %d), kill %v, kill of an empty group %v", round, prepared, entered, n, pidsMax, killed, time.Since(start))
			}
			if err := g.remove(0); err != nil {
				t.Fatal(err)
			}
			for _, h := range g.hs {
				if _, err := os.Stat(h.slotDir(0)); err == nil {
					t.Errorf("%s left after remove", h.slotDir(0))
				}
			}
		})
	}
}

// forkBomb starts, in v2 group cg ("": none), a shell that ignores
// SIGTERM and, once told on stdin, forks sleepers until it cannot (and
// then exits: its sleepers stay).
func forkBomb(t *testing.T, cg string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := command(t, cg, `trap "" TERM; read x; i=0; while [ $i -lt 64 ]; do sleep 1000 & i=$((i+1)); done; wait`)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, in
}

// startIn starts shell script in v2 group cg ("": none).
func startIn(t *testing.T, cg, script string) *exec.Cmd {
	t.Helper()
	cmd := command(t, cg, script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

// command is shell script to be started in v2 group cg ("": none).
func command(t *testing.T, cg, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if cg != "" {
		f, err := os.Open(cg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(f.Fd())
	}
	return cmd
}

// waitForks waits until slot 0's group stops growing and returns how
// many processes it holds; more than max fails.
func waitForks(t *testing.T, g *slotGroups, max int) int {
	t.Helper()
	last, same := -1, 0
	for i := 0; i < 500 && same < 10; i++ {
		pids, err := groupPids(g.hs[0].slotDir(0))
		if err != nil {
			t.Fatal(err)
		}
		if len(pids) == last {
			same++
		} else {
			last, same = len(pids), 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	if last > max {
		t.Errorf("%d processes in a slot group of pids.max %d", last, max)
	}
	if last < 2 {
		t.Errorf("only %d process in the slot group: the test's forks did not happen", last)
	}
	if b, err := os.ReadFile(filepath.Join(g.pidsSlotDir(0), "pids.max")); err == nil {
		if n, _ := strconv.Atoi(string(b[:len(b)-1])); n != max {
			t.Errorf("pids.max %q, want %d", b, max)
		}
	}
	return last
}

// TestSlotGroupsLeftovers: a process left in a slot group by a pristine
// killed before its pool went down (the server died with it, what it
// forked did not) is killed, and its group removed, when the same pool
// comes up again; another pool's group is not touched.
func TestSlotGroupsLeftovers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: cgroups")
	}
	name := fmt.Sprintf("test-%d-left", os.Getpid())
	dead, err := newSlotGroups(name, 0, 16)
	if err != nil {
		t.Skipf("no slot groups here: %v", err)
	}
	t.Cleanup(func() { cleanGroups(dead, 3) })
	other, err := newSlotGroups(name+"-other", 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanGroups(other, 3) })
	started := func(g *slotGroups) chan struct{} {
		cg, err := g.prepare(3)
		if err != nil {
			t.Fatal(err)
		}
		cmd := startIn(t, cg, `trap "" TERM; exec sleep 1000`)
		if err := g.enter(3, cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		return done
	}
	left, kept := started(dead), started(other)
	again, err := newSlotGroups(name, 0, 16) // the next daemon's pool
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-left:
	case <-time.After(5 * time.Second):
		t.Fatal("a process left in the pool's slot group outlived the pool coming up again")
	}
	for _, h := range again.hs {
		if _, err := os.Stat(h.slotDir(3)); err == nil {
			t.Errorf("%s left after the pool came up again", h.slotDir(3))
		}
	}
	select {
	case <-kept:
		t.Fatal("another pool's slot process was killed")
	default:
	}
	if err := other.remove(3); err != nil {
		t.Fatal(err)
	}
	<-kept
}

// cleanGroups removes slot idx's groups and the pool's, killing what is
// left in them, whatever the test did.
func cleanGroups(g *slotGroups, idx int) {
	_ = g.remove(idx)
	g.removePool()
}
