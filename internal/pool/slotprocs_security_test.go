package pool_test

// A process forked from a slot's server (played here by the test: a
// process run as the slot's id, in the slot server's groups, ignoring
// SIGTERM as it would inherit a server's blocked signals) tries to
// outlive its slot, and then to share its id with the next slot that
// gets it. docs/security.md, "A slot's processes die with it".

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pristinedb/pristine/internal/mariadb"
	"github.com/pristinedb/pristine/internal/pool"
	"github.com/pristinedb/pristine/internal/svcuser"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/template/templatetest"
)

// leftover is a process the test started that pristine should or should
// not kill; done is closed once it has exited.
type leftover struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (l *leftover) alive() bool {
	select {
	case <-l.done:
		return false
	default:
		return true
	}
}

// startAs starts a process as id (uid and gid) that ignores SIGTERM and
// sleeps; join, when set, moves it into those groups before the test
// goes on (it forks nothing: the shell execs sleep, which keeps SIGTERM
// ignored).
func startAs(t *testing.T, id int, join []string) *leftover {
	t.Helper()
	cmd := exec.Command("sh", "-c", `trap "" TERM; exec sleep 1000`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id), Gid: uint32(id), Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &leftover{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(l.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-l.done })
	for _, d := range join {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatalf("join %s: %v", d, err)
		}
	}
	return l
}

// slotGroupsOf lists the slot groups process pid is in, as directories
// of the mounted hierarchies (every group whose path holds /pristine/).
func slotGroupsOf(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.Contains(f[2], "/pristine/") {
			continue
		}
		if mount := cgroupMount(t, f[1]); mount != "" {
			dirs = append(dirs, filepath.Join(mount, f[2]))
		}
	}
	return dirs
}

// cgroupMount is the mount of the hierarchy /proc/<pid>/cgroup names by
// its controllers (ctls; "" is cgroup v2's).
func cgroupMount(t *testing.T, ctls string) string {
	t.Helper()
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := strings.Fields(sc.Text())
		if len(m) < 4 {
			continue
		}
		if ctls == "" && m[2] == "cgroup2" {
			return m[1]
		}
		if ctls != "" && m[2] == "cgroup" && strings.Contains(","+m[3]+",", ","+strings.Split(ctls, ",")[0]+",") {
			return m[1]
		}
	}
	return ""
}

// uidOf is process pid's real uid.
func uidOf(t *testing.T, pid int) int {
	t.Helper()
	uids, _ := procIDs(t, pid)
	id, err := strconv.Atoi(uids[0])
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// slotThreads counts a server's threads (each counts against pids.max).
func slotThreads(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return len(ents)
}

// TestSecuritySlotProcessesDieWithSlot: a process forked from a slot's
// server, ignoring SIGTERM, is killed when the slot's server is replaced
// (a full reset) and when the pool goes down, and pool down removes the
// slot's groups.
func TestSecuritySlotProcessesDieWithSlot(t *testing.T) {
	needRoot(t)
	t.Setenv("PRISTINE_INPLACE_RESET", "off") // a reset replaces the server
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	l := lease(t, p)
	srv := serverPID(t, l)
	t.Logf("idle slot server (%s): %d threads", st.Binary().Version, slotThreads(srv))
	procs := p.Status(false).Processes
	t.Logf("slot processes: %s", procs)
	if !strings.HasPrefix(procs, "cgroup") {
		t.Skipf("no cgroup per slot here: %s", procs)
	}
	groups := slotGroupsOf(t, srv)
	if len(groups) == 0 {
		t.Fatalf("slot server %d is in no slot group", srv)
	}
	id := uidOf(t, srv)
	reset := startAs(t, id, groups)
	if err := syscall.Kill(reset.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if !reset.alive() {
		t.Fatal("the test's process died of SIGTERM: it plays one that ignores it")
	}
	if _, err := p.Release(context.Background(), l.ID, pool.Dirty); err != nil {
		t.Fatal(err)
	}
	l = lease(t, p) // after the reset: one slot
	select {
	case <-reset.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("process %d, run as slot %d's id %d in its groups, outlived the reset that replaced the slot's server", reset.cmd.Process.Pid, l.Slot, id)
	}
	down := startAs(t, id, slotGroupsOf(t, serverPID(t, l)))
	if err := p.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-down.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("process %d, run as slot %d's id %d in its groups, outlived pool down", down.cmd.Process.Pid, l.Slot, id)
	}
	for _, d := range groups {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("slot group %s left after pool down", d)
		}
	}
}

// TestSecuritySlotIDNotReusedWhileInUse: a process that runs as a slot's
// id outside the slot's groups (escaped, or run where cgroups are not
// usable) survives pool down, as pristine kills nothing it did not
// create; the next pool, in another root, never gives its slot that id
// while the process runs.
func TestSecuritySlotIDNotReusedWhileInUse(t *testing.T) {
	needRoot(t)
	// A record directory of the test's own, and ids from far into the
	// range, where no daemon of the host hands out any: the test's two
	// pools are offered the same id unless its process keeps it.
	oldDir, oldFirst := svcuser.IDDir, svcuser.FirstID
	svcuser.IDDir, svcuser.FirstID = filepath.Join(t.TempDir(), "ids"), svcuser.IDBase+svcuser.IDCount-4096
	t.Cleanup(func() { svcuser.IDDir, svcuser.FirstID = oldDir, oldFirst })
	st, m := build(t, "auto", 1)
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	id := uidOf(t, serverPID(t, lease(t, p)))
	escaped := startAs(t, id, nil)
	if err := p.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !escaped.alive() {
		t.Fatal("pool down killed a process it did not start and that was in none of its groups")
	}
	st2, m2 := build(t, "auto", 1)
	p2, err := pool.Up(context.Background(), st2.Catalog(), st2.Binary(), m2, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p2.Down(context.Background()) })
	l2 := lease(t, p2)
	if got := uidOf(t, serverPID(t, l2)); got == id {
		t.Fatalf("the next pool's slot server runs as id %d while process %d of the last slot of that id still runs as it", id, escaped.cmd.Process.Pid)
	}
	if owner := ownerOf(t, slotData(st2, m2, l2)); owner == strconv.Itoa(id) {
		t.Fatalf("the next pool's clone belongs to id %d while process %d still runs as it", id, escaped.cmd.Process.Pid)
	}
}

// TestSecurityInPlaceResetKillsForked: a process forked from a slot's
// server would outlive an in-place reset, which keeps the server running,
// and meet the slot's next holder; the reset sees it in the slot's group
// and takes the full reset instead (reason "process"), which kills it.
func TestSecurityInPlaceResetKillsForked(t *testing.T) {
	needRoot(t)
	st := templatetest.NewScratchBuilder(t, "btrfs", 1<<30)
	m := templatetest.Build(t, st, "app", "CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO t VALUES (1);", template.BuildOptions{})
	p, err := pool.Up(context.Background(), st.Catalog(), st.Binary(), m, pool.Options{Size: 1, Profile: mariadb.DefaultProfile()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Down(context.Background()) })
	if procs := p.Status(false).Processes; !strings.HasPrefix(procs, "cgroup") {
		t.Skipf("no cgroup per slot here: %s", procs)
	}
	l := lease(t, p)
	srv := serverPID(t, l)
	forked := startAs(t, uidOf(t, srv), slotGroupsOf(t, srv))
	if _, err := p.Release(context.Background(), l.ID, pool.Dirty); err != nil {
		t.Fatal(err)
	}
	l = lease(t, p) // after the reset: one slot
	select {
	case <-forked.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("process %d, forked into slot %d's group, outlived its reset into the next lease", forked.cmd.Process.Pid, l.Slot)
	}
	want := "full:" + pool.FallbackProcess
	if got := p.Status(false).Stats.ResetPaths; got[want] != 1 {
		t.Errorf("reset paths %v, want one %s", got, want)
	}
}
