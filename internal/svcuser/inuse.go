package svcuser

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// An id goes to a tree only while no process runs as it. A process a
// server forked (or anything run as the server's id) can outlive its
// server and its record: the server's pool was stopped where cgroups are
// not usable, or a pristine was killed. As long as it runs, its id is
// never handed out again: the next tree's server would run as the same
// uid, and the old process could read and write its files and its
// memory. Claim skips such an id and takes the next one.
//
// Knowing which ids processes run as takes a walk over /proc (the Uid
// and Gid lines of every process's status: the owner of /proc/<pid> is
// root for a process that made itself undumpable). A walk costs about
// 35 us a process, so one walk serves every claim until an id could have
// come free with a process still running as it: until a record is
// removed (a Release, or a stale record Claim drops), in this process or
// any other, which bumps the count in IDDir/.released. No process can
// take an id of the range that had no record at the walk but root, and
// pristine runs servers only as ids it holds.

// procDir is where processes are listed; a variable for tests.
var procDir = "/proc"

// releasedFile, in IDDir, counts the records ever removed.
const releasedFile = ".released"

// busyScan is the last walk: the ids of the range processes ran as, when
// IDDir/.released read gen. Guarded by idMu and the flock of IDDir/.lock.
var busyScan struct {
	gen  string
	busy map[int]bool
	ok   bool
}

// busyIDs returns the ids of the range some process runs as (real,
// effective, saved or filesystem uid or gid), from the last walk when no
// record was removed since. The caller holds idMu and the flock of
// IDDir/.lock.
func busyIDs() (map[int]bool, error) {
	gen, _ := os.ReadFile(filepath.Join(IDDir, releasedFile))
	if busyScan.ok && busyScan.gen == string(gen) {
		return busyScan.busy, nil
	}
	busy, err := walkIDs()
	if err != nil {
		return nil, err
	}
	busyScan.gen, busyScan.busy, busyScan.ok = string(gen), busy, true
	return busy, nil
}

// walkIDs reads which ids of the range the processes of the host run as.
func walkIDs() (map[int]bool, error) {
	uses, err := walkUses()
	if err != nil {
		return nil, err
	}
	busy := make(map[int]bool, len(uses))
	for id := range uses {
		busy[id] = true
	}
	return busy, nil
}

// idUse is how the processes running as an id stand.
type idUse uint8

const (
	// useExiting: a process running as the id is on its way out (see
	// exiting); it runs no more code of its own.
	useExiting idUse = 1 << iota
	// useLive: a process running as the id is alive.
	useLive
)

// walkUses reads which ids of the range the processes of the host run
// as, and whether any of those processes is alive.
func walkUses() (map[int]idUse, error) {
	ents, err := os.ReadDir(procDir)
	if err != nil {
		return nil, fmt.Errorf("list processes to see which server ids are in use: %w", err)
	}
	uses := map[int]idUse{}
	buf := make([]byte, 4096)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		f, err := os.Open(filepath.Join(procDir, e.Name(), "status"))
		if err != nil {
			continue // gone meanwhile
		}
		n, _ := f.Read(buf)
		f.Close()
		st := buf[:n]
		if dead(st) {
			continue
		}
		use := useLive
		if exiting(st) {
			use = useExiting
		}
		for _, key := range []string{"Uid:", "Gid:"} {
			for _, f := range strings.Fields(statusField(st, key)) {
				if id, err := strconv.Atoi(f); err == nil && id >= IDBase && id < IDBase+IDCount {
					uses[id] |= use
				}
			}
		}
	}
	return uses, nil
}

// exitWait is how long a claim waits for the exiting processes of a
// tree's own id to be gone (awaitExits).
var exitWait = 5 * time.Second

// awaitExits returns which of ids some process still runs as, once the
// processes that were only exiting had up to exitWait to go. A server
// killed with its daemon (SIGKILL) is on its way out for a while after
// it stops answering: its threads exit one by one, the last of them
// long after its command line is gone. A daemon restarting at once on
// the server's clone would otherwise find the clone's id in use and
// give the clone another, whose server refuses the clone's files.
func awaitExits(ids []int) map[int]bool {
	deadline := time.Now().Add(exitWait)
	for {
		uses, err := walkUses()
		still := map[int]bool{}
		waiting := false
		for _, id := range ids {
			switch u := uses[id]; {
			case err != nil, u&useLive != 0:
				still[id] = true
			case u&useExiting != 0:
				still[id] = true
				waiting = true
			}
		}
		if !waiting || time.Now().After(deadline) {
			return still
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// statusField is the value of field key ("Uid:") in a /proc/<pid>/status.
func statusField(status []byte, key string) string {
	i := bytes.Index(status, []byte("\n"+key))
	if i < 0 {
		return ""
	}
	line, _, _ := bytes.Cut(status[i+1+len(key):], []byte("\n"))
	return string(line)
}

// dead reports whether a process's status is a zombie's with no thread
// left: it runs nothing, and its parent has yet to reap it (a killed
// server's, reparented to an init that reaps late). A zombie leader whose
// other threads still run counts them in Threads, and is alive.
func dead(status []byte) bool {
	return strings.HasPrefix(strings.TrimSpace(statusField(status, "State:")), "Z") &&
		strings.TrimSpace(statusField(status, "Threads:")) == "1"
}

// exiting reports whether a process's status is that of a process on
// its way out: a zombie leader whose other threads are still exiting, a
// process whose memory is gone (no VmSize: only exit takes a user
// process's memory away; kernel threads run as root, never as an id of
// the range), or one with SIGKILL pending.
func exiting(status []byte) bool {
	state := strings.TrimSpace(statusField(status, "State:"))
	if strings.HasPrefix(state, "Z") || strings.HasPrefix(state, "X") || !bytes.Contains(status, []byte("\nVmSize:")) {
		return true
	}
	for _, key := range []string{"SigPnd:", "ShdPnd:"} {
		if mask, err := strconv.ParseUint(strings.TrimSpace(statusField(status, key)), 16, 64); err == nil && mask&(1<<(unix.SIGKILL-1)) != 0 {
			return true
		}
	}
	return false
}

// noteRemoved counts a removed record in IDDir/.released, so every
// process walks /proc again before it hands out an id. The caller holds
// the flock of IDDir/.lock.
func noteRemoved() {
	rel := filepath.Join(IDDir, releasedFile)
	b, _ := os.ReadFile(rel)
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	_ = os.WriteFile(rel, []byte(strconv.FormatUint(n+1, 10)+"\n"), 0o600)
	busyScan.ok = false
}

// lockIDs takes IDDir's lock: one claim or release at a time on the
// host. The caller closes the returned file to let go.
func lockIDs() (*os.File, error) {
	if err := os.MkdirAll(IDDir, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(IDDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		lock.Close()
		return nil, err
	}
	return lock, nil
}
