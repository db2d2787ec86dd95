package svcuser

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// One slot, one uid. When pristine runs as root, every server that runs SQL
// a test or a client chose (a slot, a template build, an API build, a
// verify or bench clone) runs under an id of its own, taken from a reserved
// range and given back when its tree goes: uid and gid are the same
// number, with no passwd or group entry. The kernel needs nothing more than
// the number (setuid, file owners and permission checks are numeric); `ls
// -l` and `ps` show the number. Such a server owns only its own data and run
// directory, so even as root of its slot (SET GLOBAL general_log_file=...)
// it can write nowhere else: templates and bases belong to pristine's own
// user (Seal), other slots to other ids.
//
// Why not system users pristine-s0..N: Debian gives system accounts uids
// 100-999, 900 in all for every package of the host, and a pool of 200
// slots per template would take them; each useradd rewrites /etc/passwd
// under a lock; cleanup would need userdel. A numeric range needs no
// cleanup in /etc at all.
//
// The range is IDBase .. IDBase+IDCount-1 (0x70000000 up): above the
// subordinate ids useradd hands out (SUB_UID_MAX 600100000), above
// systemd-nspawn's container range (up to 0x6FFFFFFF) and below 2^31, in
// systemd's "unused" block. Ids that have a passwd or group entry are
// skipped. Which id serves which tree is recorded machine-wide in
// IDDir/<id> (the tree's path), so two roots on one host never share an id;
// a record is held with an flock by the process that claimed it, and a
// record nobody holds whose tree is gone (or no longer owned by the id) is
// stale and reused. A record nobody holds whose tree is still there (a
// daemon killed with its pool) keeps its id, and the same tree claims it
// again when the daemon restarts on it.

// IDBase is the first id of the range servers run under as root.
const IDBase = 0x70000000

// IDCount is how many ids the range holds: servers (slots, builds) running
// at once on the host, across every root.
const IDCount = 65536

// IDDir is where claimed ids are recorded, machine-wide.
// It is on disk, not in /run: a clone outlives a reboot, and its id must
// not go to another tree while it does.
var IDDir = "/var/lib/pristine-ids"

// ErrNoID is wrapped when every id of the range is taken.
var ErrNoID = errors.New("no free server id")

// Claimed is a server id held for one tree. Release gives it back.
type Claimed struct {
	Account
	path string
	f    *os.File // the record, flocked while held
}

var idMu sync.Mutex // one claim at a time within the process (flock is per open file)

// Claim takes a server id for the tree at path (a clone, a build's data
// directory): a free id of the range, or the id path had when its
// previous holder died without releasing it. Without root it returns the
// current user (Drop false) and Release does nothing.
func Claim(path string) (*Claimed, error) {
	shared, err := Get()
	if err != nil {
		return nil, err
	}
	if !shared.Drop {
		return &Claimed{Account: shared}, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	idMu.Lock()
	defer idMu.Unlock()
	lock, err := lockIDs()
	if err != nil {
		return nil, fmt.Errorf("claim a server id: %w", err)
	}
	defer lock.Close()
	ents, err := os.ReadDir(IDDir)
	if err != nil {
		return nil, fmt.Errorf("claim a server id: %w", err)
	}
	used := map[int]bool{}
	var mine *os.File // path's own record, left by a holder that died
	mineID := 0
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		rec := filepath.Join(IDDir, e.Name())
		b, err := os.ReadFile(rec)
		if err != nil {
			used[id] = true
			continue
		}
		owner := strings.TrimSpace(string(b))
		f, held := tryHold(rec)
		switch {
		case f == nil && held:
			used[id] = true // a live holder
		case f == nil:
			used[id] = true // unreadable: leave it
		case owner == abs && mine == nil:
			// The tree's own id: taken back below unless a process of
			// its dead holder still runs as it.
			mine, mineID = f, id
			used[id] = true
		case treeOwnedBy(owner, id):
			f.Close() // its tree is still there: the id stays its
			used[id] = true
		default:
			// Stale: the tree is gone. Reuse the number below.
			_ = os.Remove(rec)
			noteRemoved()
			f.Close()
		}
	}
	busy, err := busyIDs()
	if err != nil {
		if mine != nil {
			mine.Close()
		}
		return nil, fmt.Errorf("claim a server id: %w", err)
	}
	if mine != nil {
		if !busy[mineID] {
			return claimed(shared, mineID, abs, mine), nil
		}
		// A process of the dead holder runs as it: the tree gets
		// another id (its old files are not the new id's, so its server
		// refuses them, and the tree is made again).
		_ = os.Remove(filepath.Join(IDDir, strconv.Itoa(mineID)))
		noteRemoved()
		mine.Close()
	}
	for id := range busy {
		used[id] = true
	}
	listed := listedIDs()
	// A tree already on disk (a daemon restarting on its clones after a
	// reboot) takes back the id that owns it when nobody holds that id.
	if id := ownerID(abs); id > 0 && !used[id] && !listed[id] {
		if c, err := createRecord(shared, id, abs); err == nil && c != nil {
			return c, nil
		}
	}
	for id := IDBase; id < IDBase+IDCount; id++ {
		if used[id] || listed[id] {
			continue
		}
		c, err := createRecord(shared, id, abs)
		if err != nil {
			return nil, err
		}
		if c != nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w: all %d ids from %d are held by running servers, by processes still running as them, or by trees still on disk (listed in %s): stop some pools, or remove what a killed pristine left", ErrNoID, IDCount, IDBase, IDDir)
}

// createRecord records id for path; nil, nil when the id was taken meanwhile.
func createRecord(shared Account, id int, path string) (*Claimed, error) {
	rec := filepath.Join(IDDir, strconv.Itoa(id))
	f, err := os.OpenFile(rec, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("claim a server id: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, nil
	}
	if _, err := f.WriteString(path + "\n"); err != nil {
		f.Close()
		os.Remove(rec)
		return nil, fmt.Errorf("claim a server id: %w", err)
	}
	return claimed(shared, id, path, f), nil
}

// ownerID is the id of the range that owns path, or 0.
func ownerID(path string) int {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil || int(st.Uid) < IDBase || int(st.Uid) >= IDBase+IDCount {
		return 0
	}
	return int(st.Uid)
}

func claimed(shared Account, id int, path string, f *os.File) *Claimed {
	return &Claimed{Account: Account{Name: "id " + strconv.Itoa(id), UID: id, GID: id, RunGID: shared.GID, Drop: true}, path: path, f: f}
}

// tryHold opens a record and takes its flock without waiting: f is nil
// and held true when a live process holds it.
func tryHold(rec string) (f *os.File, held bool) {
	f, err := os.OpenFile(rec, os.O_RDWR, 0)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, true
	}
	return f, false
}

// treeOwnedBy reports whether path exists and belongs to uid id.
func treeOwnedBy(path string, id int) bool {
	var st unix.Stat_t
	return path != "" && unix.Lstat(path, &st) == nil && int(st.Uid) == id
}

// listedIDs are the ids of the range that /etc/passwd or /etc/group name:
// they belong to someone else.
func listedIDs() map[int]bool {
	out := map[int]bool{}
	for _, file := range []string{"/etc/passwd", "/etc/group"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ":")
			for _, i := range []int{2, 3} {
				if i < len(fields) {
					if n, err := strconv.Atoi(fields[i]); err == nil && n >= IDBase && n < IDBase+IDCount {
						out[n] = true
					}
				}
			}
		}
		f.Close()
	}
	return out
}

// Release gives the id back once its tree is gone (or sealed to
// pristine's user): another tree may get it next. Releasing twice, or a
// Claimed of the current user, does nothing.
func (c *Claimed) Release() {
	if c == nil || c.f == nil {
		return
	}
	idMu.Lock()
	defer idMu.Unlock()
	lock, err := lockIDs()
	_ = os.Remove(filepath.Join(IDDir, strconv.Itoa(c.UID)))
	if err == nil {
		noteRemoved()
		lock.Close()
	} else {
		busyScan.ok = false // other processes see the record gone and walk anyway
	}
	c.f.Close()
	c.f = nil
}

// Seal gives every file under dir (dir included, symlinks not followed) to
// pristine's own user, so no server can write it or read it: templates and
// bases, once their server has stopped. Without root it does nothing.
func Seal(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid := os.Geteuid(), os.Getegid()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return unix.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("seal %s (give it to pristine's user, out of every server's reach): %w", dir, err)
	}
	return nil
}
