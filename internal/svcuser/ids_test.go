package svcuser

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestClaim: ids are distinct while held, given back by Release, kept for
// a tree a dead holder left on disk (and handed back to that tree), and
// reused once that tree is gone.
func TestClaim(t *testing.T) {
	if os.Geteuid() != 0 {
		c, err := Claim(t.TempDir())
		if err != nil || c.Drop || c.UID != os.Geteuid() {
			t.Fatalf("without root Claim = %+v, %v; want the current user", c, err)
		}
		c.Release()
		return
	}
	ownIDs(t)
	dir := t.TempDir()
	a, err := Claim(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Claim(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if a.UID == b.UID || a.UID < IDBase || b.UID < IDBase || a.GID != a.UID || !a.Drop {
		t.Fatalf("two trees got %+v and %+v", a.Account, b.Account)
	}
	shared, _ := Get()
	if a.RunGID != shared.GID {
		t.Errorf("run directory group %d, want group %s (%d)", a.RunGID, Name, shared.GID)
	}
	a.Release()
	a.Release() // twice is harmless
	c, err := Claim(filepath.Join(dir, "c"))
	if err != nil {
		t.Fatal(err)
	}
	// A lower id another package's server ran as may be free now, and that
	// package's servers may run as a.UID by now.
	if busy, _ := walkIDs(); c.UID > a.UID && !busy[a.UID] {
		t.Errorf("a released id is not reused: got %d, want %d", c.UID, a.UID)
	}
	// A holder that died (a record nobody holds) with its tree still on
	// disk, owned by the id: the id stays the tree's.
	dead := filepath.Join(dir, "dead")
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	deadID := unusedID(t, FirstID+100)
	if err := os.Chown(dead, deadID, deadID); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(IDDir, strconv.Itoa(deadID))
	if err := os.WriteFile(rec, []byte(dead+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var others []*Claimed
	for i := 0; i < 101; i++ {
		o, err := Claim(filepath.Join(dir, "o"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if o.UID == deadID {
			t.Fatalf("id %d given to another tree while %s, which it owns, is on disk", deadID, dead)
		}
		others = append(others, o)
	}
	again, err := Claim(dead)
	if err != nil || again.UID != deadID {
		t.Fatalf("the tree left by a dead holder got %+v, %v; want its id %d back", again, err, deadID)
	}
	// Dead again, and this time its tree is gone: the id is free.
	again.f.Close()
	again.f = nil
	if err := os.Remove(dead); err != nil {
		t.Fatal(err)
	}
	// The claims reach the stale id again: lower ids that other packages'
	// servers ran as during the claims above may come first.
	for {
		reuse, err := Claim(filepath.Join(dir, "new"+strconv.Itoa(len(others))))
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, reuse)
		if reuse.UID < deadID {
			continue
		}
		if busy, _ := walkIDs(); reuse.UID != deadID && !busy[deadID] {
			t.Errorf("a stale record's id was not reused: got %d, want %d", reuse.UID, deadID)
		}
		break
	}
	for _, o := range append(others, b, c) {
		o.Release()
	}
	if recs := records(t); len(recs) != 0 {
		t.Errorf("records left after every release: %v", recs)
	}
}

// records are the id records in IDDir (not its lock or release count).
func records(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(IDDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// runAs starts a process that runs as id (uid and gid) until the test
// ends, and returns it.
func runAs(t *testing.T, id int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id), Gid: uint32(id), Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// TestSecurityClaimSkipsIDInUse: an id whose tree and record are gone
// while a process still runs as it (a server's child that outlived its
// pool) is not handed to another tree, whether the process runs as its
// uid or only as its gid; Claim takes another id instead of failing, and
// hands the id out again once the process is gone. A record left by a
// dead holder does not give its tree the id back either while a process
// runs as it. docs/security.md, "A slot's processes die with it".
func TestSecurityClaimSkipsIDInUse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: server ids are claimed only as root")
	}
	ownIDs(t)
	dir := t.TempDir()
	a, err := Claim(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	left := runAs(t, a.UID) // outlives its tree
	a.Release()
	b, err := Claim(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatalf("Claim failed instead of taking another id: %v", err)
	}
	if b.UID == a.UID {
		t.Fatalf("id %d handed to another tree while process %d still runs as it", a.UID, left.Process.Pid)
	}
	_ = left.Process.Kill()
	_ = left.Wait()
	b.Release() // a release makes the next claim look at the processes again
	c, err := Claim(filepath.Join(dir, "c"))
	if err != nil {
		t.Fatal(err)
	}
	// Another root's server may run as it now, or a lower id another
	// root's server held at the first claim may be free again.
	if busy, _ := walkIDs(); c.UID != a.UID && c.UID > a.UID && !busy[a.UID] {
		t.Errorf("id %d not handed out again once its process was gone: got %d", a.UID, c.UID)
	}
	// Only the gid: a process in the id's group reads its group's files.
	gidOnly := exec.Command("sleep", "1000")
	gidOnly.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(IDBase + IDCount - 1), Gid: uint32(c.UID), Groups: []uint32{}}}
	if err := gidOnly.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gidOnly.Process.Kill(); _ = gidOnly.Wait() })
	c.Release()
	d, err := Claim(filepath.Join(dir, "d"))
	if err != nil {
		t.Fatal(err)
	}
	if d.UID == c.UID {
		t.Fatalf("id %d handed out while process %d runs with it as its gid", c.UID, gidOnly.Process.Pid)
	}
	// A holder that died with its record, its tree on disk and a process
	// of it still running: the tree does not get the id back.
	tree := filepath.Join(dir, "tree")
	if err := os.Mkdir(tree, 0o700); err != nil {
		t.Fatal(err)
	}
	e, err := Claim(tree)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tree, e.UID, e.UID); err != nil {
		t.Fatal(err)
	}
	runAs(t, e.UID)
	e.f.Close() // dies holding it; the next claim is another process's
	e.f = nil
	busyScan.ok = false
	again, err := Claim(tree)
	if err != nil {
		t.Fatal(err)
	}
	if again.UID == e.UID {
		t.Fatalf("id %d given back to its tree while a process of its dead holder runs as it", e.UID)
	}
	for _, x := range []*Claimed{d, again} {
		x.Release()
	}
	if recs := records(t); len(recs) != 0 {
		t.Errorf("records left after every release: %v", recs)
	}
}

// TestSeal: a sealed tree belongs to pristine's user, symlinks untouched;
// InnoDB's files and a table's definition are group DataGID's,
// read-write, a view's definition is not; no directory is open to group
// or others.
func TestSeal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sealing gives files to root: needs root")
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "db")
	redo := filepath.Join(dir, "#innodb_redo")
	for _, d := range []string{sub, redo} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shared := []string{filepath.Join(sub, "t.ibd"), filepath.Join(sub, "t.frm"), filepath.Join(dir, "ibdata1"), filepath.Join(dir, "undo_001"), filepath.Join(redo, "#ib_redo10")}
	own := []string{filepath.Join(sub, "v.frm"), filepath.Join(sub, "undo_log.MYD"), filepath.Join(dir, "aria_log_control")}
	for _, f := range append(append([]string{}, shared...), own...) {
		body := []byte{0xfe, 0x01, 0x0a} // a table's .frm
		if filepath.Base(f) == "v.frm" {
			body = []byte("TYPE=VIEW\n")
		}
		if err := os.WriteFile(f, body, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(sub, "link")); err != nil {
		t.Fatal(err)
	}
	all := append(append([]string{dir, sub, redo}, shared...), own...)
	for _, p := range all {
		if err := os.Lchown(p, IDBase+7, IDBase+7); err != nil {
			t.Fatal(err)
		}
	}
	if err := Seal(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 0 {
			t.Errorf("%s belongs to uid %d after Seal", p, st.Uid)
		}
	}
	for _, p := range []string{dir, sub, redo} {
		if m := mode(t, p); m&0o077 != 0 {
			t.Errorf("directory %s is %o after Seal: open to group or others", p, m)
		}
	}
	for _, p := range shared {
		if g, m := group(t, p), mode(t, p); g != DataGID || m != 0o660 {
			t.Errorf("%s: group %d mode %o after Seal; want group %d, 0660", p, g, m, DataGID)
		}
	}
	for _, p := range own {
		if g := group(t, p); g != 0 {
			t.Errorf("%s: group %d after Seal; want root's", p, g)
		}
	}
	if fi, _ := os.Stat("/etc/passwd"); fi == nil || owner(t, "/etc/passwd") != 0 {
		t.Error("/etc/passwd changed?")
	}
}

func TestShareable(t *testing.T) {
	dir := t.TempDir()
	table := []byte{0xfe, 0x01, 0x0a, 0x0c}
	view := []byte("TYPE=VIEW\nquery=select 1\n")
	for _, c := range []struct {
		name string
		body []byte
		want bool
	}{
		{"t.ibd", nil, true}, {"t#P#p0.ibd", nil, true}, {"mysql.ibd", nil, true},
		{"ibdata1", nil, true}, {"ib_logfile0", nil, true}, {"undo001", nil, true},
		{"undo_002", nil, true}, {"#ib_redo10", nil, true}, {"#ib_redo11_tmp", nil, true},
		{"t.frm", table, true},
		{"v.frm", view, false}, {"short.frm", []byte{0xfe}, false}, {"empty.frm", nil, false},
		{"t.TRG", []byte("TYPE=TRIGGERS\n"), false},
		{"undo_log.MYD", nil, false}, {"t.MAI", nil, false}, {"aria_log_control", nil, false},
		{"ibtmp1", nil, false}, {"ib_buffer_pool", nil, false}, {"auto.cnf", nil, false},
		{"t.ibd.tmp", nil, false}, {"db.opt", nil, false},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.body, 0o600); err != nil {
			t.Fatal(err)
		}
		if got := Shareable(p); got != c.want {
			t.Errorf("Shareable(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

// lstat is p's inode, not following a symlink.
func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func group(t *testing.T, p string) int   { return int(lstat(t, p).Gid) }
func mode(t *testing.T, p string) uint32 { return lstat(t, p).Mode & 0o7777 }
func owner(t *testing.T, p string) int   { return int(lstat(t, p).Uid) }

// TestMeasureClaim measures what the check for processes adds to a claim:
// 200 claims in a row (a pool of 200 slots coming up: one walk over /proc
// for all of them) against the same with a walk for each. It only
// reports; set PRISTINE_MEASURE_CLAIM=1 to run it.
func TestMeasureClaim(t *testing.T) {
	if os.Getenv("PRISTINE_MEASURE_CLAIM") == "" || os.Geteuid() != 0 {
		t.Skip("a measurement, as root: set PRISTINE_MEASURE_CLAIM=1 to run it")
	}
	ownIDs(t)
	dir := t.TempDir()
	procs, _ := os.ReadDir("/proc")
	for _, walkEach := range []bool{false, true} {
		var held []*Claimed
		start := time.Now()
		for i := 0; i < 200; i++ {
			if walkEach {
				busyScan.ok = false
			}
			c, err := Claim(filepath.Join(dir, strconv.Itoa(i)))
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		t.Logf("200 claims, a walk over /proc (%d entries) %s: %v, %v a claim", len(procs), map[bool]string{false: "for all", true: "for each"}[walkEach], time.Since(start), time.Since(start)/200)
		for _, c := range held {
			c.Release()
		}
	}
}

// TestDeadStatus: a zombie with no thread left runs nothing and holds no
// id; a zombie leader whose threads still run does.
func TestDeadStatus(t *testing.T) {
	for _, c := range []struct {
		status string
		dead   bool
	}{
		{"Name:\tsleep\nState:\tS (sleeping)\nUid:\t1\t1\t1\t1\nThreads:\t1\n", false},
		{"Name:\tsleep\nState:\tZ (zombie)\nUid:\t1\t1\t1\t1\nThreads:\t1\n", true},
		{"Name:\tpython3\nState:\tZ (zombie)\nUid:\t1\t1\t1\t1\nThreads:\t2\n", false},
	} {
		if got := dead([]byte(c.status)); got != c.dead {
			t.Errorf("dead(%q) = %v, want %v", c.status, got, c.dead)
		}
	}
}

// ownIDs gives the test a record directory of its own, and claims that
// start far into the range (FirstID), where no daemon of the host hands
// out ids: a killed daemon's records, which the test's directory lacks,
// keep their ids from it only while they are the host's.
func ownIDs(t *testing.T) {
	t.Helper()
	oldDir, oldFirst := IDDir, FirstID
	IDDir, FirstID = filepath.Join(t.TempDir(), "ids"), IDBase+IDCount-4096
	t.Cleanup(func() { IDDir, FirstID = oldDir, oldFirst })
}

// unusedID is the first id from from that has no record and that no
// process runs as: other packages' tests claim ids of the same range at
// the same time, and a dead holder's record must not overwrite theirs.
func unusedID(t *testing.T, from int) int {
	t.Helper()
	busy, err := walkIDs()
	if err != nil {
		t.Fatal(err)
	}
	for id := from; id < IDBase+IDCount; id++ {
		if _, err := os.Stat(filepath.Join(IDDir, strconv.Itoa(id))); busy[id] || err == nil {
			continue
		}
		return id
	}
	t.Fatal("no unused id in the range")
	return 0
}

// TestClaimAll: one pass gives every tree its own id, distinct from the
// ids already held and from each other; a tree a dead holder left on disk
// gets its id back in the batch, and a process running as an id keeps it
// out of the batch; ReleaseAll gives every id back.
func TestClaimAll(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: server ids are claimed only as root")
	}
	ownIDs(t)
	dir := t.TempDir()
	// An id a process runs as, with no record (started before any claim:
	// a claim's walk of the processes serves until a record goes).
	busyID := unusedID(t, FirstID+1)
	runAs(t, busyID)
	noteRemoved()
	held, err := Claim(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	// A dead holder's tree, still on disk and its id's.
	dead := filepath.Join(dir, "dead")
	deadID := unusedID(t, FirstID+50)
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dead, deadID, deadID); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(IDDir, strconv.Itoa(deadID)), []byte(dead+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{dead}
	for i := range 20 {
		paths = append(paths, filepath.Join(dir, "t"+strconv.Itoa(i)))
	}
	ids, err := ClaimAll(paths)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(paths) || ids[0].UID != deadID {
		t.Fatalf("ClaimAll gave %d ids, the dead holder's tree %d; want %d and id %d", len(ids), ids[0].UID, len(paths), deadID)
	}
	seen := map[int]bool{held.UID: true}
	for i, c := range ids {
		if seen[c.UID] || c.UID == busyID || c.UID < IDBase || c.GID != c.UID || !c.Drop {
			t.Fatalf("tree %s got %+v: taken twice, run as by a process (%d), or not of the range", paths[i], c.Account, busyID)
		}
		seen[c.UID] = true
	}
	ReleaseAll(ids)
	if recs := records(t); len(recs) != 1 || recs[0] != strconv.Itoa(held.UID) {
		t.Errorf("records after ReleaseAll: %v, want only the held id %d", recs, held.UID)
	}
}

// TestClaimLeavesOtherRootsRecords: a record claimed under another file
// system root (a chroot sharing the host's records, as the server matrix's
// roots do) whose holder died and whose path does not exist here is not
// stale here: the path names a tree in that root, which a daemon
// restarting there takes back with its id. A record of this root in the
// same state is stale, and a record of an older pristine (no root) counts
// as this root's.
func TestClaimLeavesOtherRootsRecords(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: server ids are claimed only as root")
	}
	ownIDs(t)
	if err := os.MkdirAll(IDDir, 0o700); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "gone")
	foreign := unusedID(t, FirstID)
	write := func(id int, text string) string {
		rec := filepath.Join(IDDir, strconv.Itoa(id))
		if err := os.WriteFile(rec, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	foreignRec := write(foreign, gone+"\nroot 1:2\n")
	mine := unusedID(t, foreign+1)
	mineRec := write(mine, gone+"\nroot "+fsRoot()+"\n")
	older := unusedID(t, mine+1)
	olderRec := write(older, gone+"\n")
	var got []*Claimed
	defer func() {
		for _, c := range got {
			c.Release()
		}
	}()
	for i := 0; i < 3; i++ {
		c, err := Claim(filepath.Join(t.TempDir(), "t"))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
		if c.UID == foreign {
			t.Fatalf("id %d, recorded for a tree under another root, was given to a tree here", foreign)
		}
	}
	if _, err := os.Stat(foreignRec); err != nil {
		t.Errorf("another root's record was removed: %v", err)
	}
	for _, rec := range []string{mineRec, olderRec} {
		if b, err := os.ReadFile(rec); err == nil && strings.HasPrefix(string(b), gone) {
			t.Errorf("%s, a record of this root whose tree is gone, was not found stale", rec)
		}
	}
	b, err := os.ReadFile(filepath.Join(IDDir, strconv.Itoa(got[0].UID)))
	if err != nil || !strings.Contains(string(b), "\nroot "+fsRoot()+"\n") {
		t.Errorf("a new record %q (%v) does not name this root %s", b, err, fsRoot())
	}
}

// TestClaimWaitsForExitingProcess: a daemon killed with its pool restarts
// at once on the pool's clones, while a killed server's threads may still
// be exiting. A tree whose own id only an exiting process runs as gets
// its id back once that process is gone; a live process, or one still
// exiting after exitWait, keeps the id from it (the process list is a
// directory of status files here, as /proc is, so the processes' states
// can be chosen).
func TestClaimWaitsForExitingProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: server ids are claimed only as root")
	}
	ownIDs(t)
	oldProc, oldWait := procDir, exitWait
	procDir, exitWait = t.TempDir(), 2*time.Second
	t.Cleanup(func() { procDir, exitWait = oldProc, oldWait })
	if err := os.Mkdir(IDDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		status string // of the one process running as the tree's id
		goes   bool   // the process is gone after 300 ms
		keeps  bool   // the tree gets its own id back
	}{
		{"zombie leader, threads exiting", "State:\tZ (zombie)\nThreads:\t12\n", true, true},
		{"memory gone", "State:\tR (running)\nThreads:\t1\n", true, true},
		{"SIGKILL pending", "State:\tS (sleeping)\nVmSize:\t 1000 kB\nThreads:\t3\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n", true, true},
		{"exiting past the wait", "State:\tZ (zombie)\nThreads:\t12\n", false, false},
		{"alive", "State:\tS (sleeping)\nVmSize:\t 1000 kB\nThreads:\t3\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree := filepath.Join(t.TempDir(), "data")
			id := unusedID(t, FirstID+100)
			if err := os.Mkdir(tree, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(tree, id, id); err != nil {
				t.Fatal(err)
			}
			// The killed daemon's record: nobody holds it.
			if err := os.WriteFile(filepath.Join(IDDir, strconv.Itoa(id)), []byte(tree+"\nroot "+fsRoot()+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			pid := filepath.Join(procDir, "4242")
			if err := os.Mkdir(pid, 0o755); err != nil {
				t.Fatal(err)
			}
			ids := fmt.Sprintf("\t%d\t%d\t%d\t%d\n", id, id, id, id)
			if err := os.WriteFile(filepath.Join(pid, "status"), []byte("Name:\tmysqld\n"+c.status+"Uid:"+ids+"Gid:"+ids), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(pid) })
			if c.goes {
				go func() {
					time.Sleep(300 * time.Millisecond)
					os.RemoveAll(pid)
				}()
			}
			noteRemoved() // the claim walks the processes afresh
			got, err := Claim(tree)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			if kept := got.UID == id; kept != c.keeps {
				t.Errorf("the tree of id %d got id %d with a process %s; want its own id back: %v", id, got.UID, c.name, c.keeps)
			}
		})
	}
}
