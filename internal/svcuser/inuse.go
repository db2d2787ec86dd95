package svcuser

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
	ents, err := os.ReadDir(procDir)
	if err != nil {
		return nil, fmt.Errorf("list processes to see which server ids are in use: %w", err)
	}
	busy := map[int]bool{}
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
		if dead(buf[:n]) {
			continue
		}
		for _, key := range []string{"Uid:", "Gid:"} {
			for _, f := range strings.Fields(statusField(buf[:n], key)) {
				if id, err := strconv.Atoi(f); err == nil && id >= IDBase && id < IDBase+IDCount {
					busy[id] = true
				}
			}
		}
	}
	return busy, nil
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
