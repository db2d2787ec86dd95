package svcuser

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
// IDDir/<id> (the tree's path, and the file system root it was claimed
// under), so two roots on one host never share an id; a record is held
// with an flock by the process that claimed it, and a record nobody holds
// whose tree is gone (or no longer owned by the id) is stale and reused. A
// record nobody holds whose tree is still there (a daemon killed with its
// pool) keeps its id, and the same tree claims it again when the daemon
// restarts on it. Only a process under the same root (chroot) as the
// record's judges it stale: elsewhere its path names another tree, or
// none, so a record of another root stays until a claim in that root
// finds it stale. A record without its root (written by an older
// pristine) counts as this root's.

// IDBase is the first id of the range servers run under as root.
const IDBase = 0x70000000

// IDCount is how many ids the range holds: servers (slots, builds) running
// at once on the host, across every root.
const IDCount = 65536

// FirstID is where a claim starts looking for a free id: IDBase. A test
// that records ids in an IDDir of its own moves it far into the range,
// away from the ids the host's daemons hand out: their records are not in
// that directory, and a dead daemon's (a slot's clone waiting for its
// daemon's restart) would otherwise not keep its id from the test.
var FirstID = IDBase

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
	c, err := ClaimAll([]string{path})
	if err != nil {
		return nil, err
	}
	return c[0], nil
}

// ClaimAll is Claim for every tree of paths at once, in one pass over the
// records under one lock: what a pool coming up claims for its slots. It
// costs about what one Claim does, where a Claim per tree reads every
// record each time. The ids come in the order of paths; on an error none
// is held.
func ClaimAll(paths []string) ([]*Claimed, error) {
	shared, err := Get()
	if err != nil {
		return nil, err
	}
	out := make([]*Claimed, len(paths))
	if !shared.Drop {
		for i := range out {
			out[i] = &Claimed{Account: shared}
		}
		return out, nil
	}
	abs := make([]string, len(paths))
	for i, p := range paths {
		if abs[i], err = filepath.Abs(p); err != nil {
			return nil, err
		}
	}
	idMu.Lock()
	defer idMu.Unlock()
	lock, err := lockIDs()
	if err != nil {
		return nil, fmt.Errorf("claim a server id: %w", err)
	}
	defer lock.Close()
	sc, err := scanRecords(abs)
	if err != nil {
		return nil, fmt.Errorf("claim a server id: %w", err)
	}
	defer sc.closeMine()
	next := FirstID
	for i, path := range abs {
		if out[i], err = sc.claim(shared, path, &next); err != nil {
			for _, c := range out[:i] {
				c.releaseLocked()
			}
			if i > 0 {
				noteRemoved()
			}
			return nil, err
		}
	}
	return out, nil
}

// scan is what ClaimAll read of the records and the processes, under the
// lock: the ids not to hand out, and the records the claimed trees' dead
// holders left (each tree's own id).
type scan struct {
	used   map[int]bool
	mine   map[string]*heldRecord
	listed map[int]bool
}

// heldRecord is a record whose holder died, flocked by this process.
type heldRecord struct {
	id int
	f  *os.File
}

// scanRecords reads every record once: live holders' ids and trees still
// on disk are used; a stale record (its tree gone) is removed; the record
// of one of trees is kept aside for it. Then the ids processes run as are
// used too, and a tree's own id a process still runs as is given up (the
// tree gets another id: its old files are not the new id's, so its
// server refuses them, and the tree is made again), unless that process
// was only exiting and is gone within exitWait (awaitExits).
func scanRecords(trees []string) (*scan, error) {
	ents, err := os.ReadDir(IDDir)
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(trees))
	for _, t := range trees {
		want[t] = true
	}
	sc := &scan{used: map[int]bool{}, mine: map[string]*heldRecord{}}
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		rec := filepath.Join(IDDir, e.Name())
		b, err := os.ReadFile(rec)
		if err != nil {
			sc.used[id] = true
			continue
		}
		owner, root := parseRecord(b)
		f, held := tryHold(rec)
		switch {
		case f == nil && held:
			sc.used[id] = true // a live holder
		case f == nil:
			sc.used[id] = true // unreadable: leave it
		case root != "" && root != fsRoot():
			f.Close() // another root's: its path means nothing here
			sc.used[id] = true
		case want[owner] && sc.mine[owner] == nil:
			// The tree's own id: taken back below unless a process of
			// its dead holder still runs as it.
			sc.mine[owner] = &heldRecord{id: id, f: f}
			sc.used[id] = true
		case treeOwnedBy(owner, id):
			f.Close() // its tree is still there: the id stays its
			sc.used[id] = true
		default:
			// Stale: the tree is gone. Reuse the number below.
			_ = os.Remove(rec)
			noteRemoved()
			f.Close()
		}
	}
	busy, err := busyIDs()
	if err != nil {
		sc.closeMine()
		return nil, err
	}
	var own []int
	for _, m := range sc.mine {
		if busy[m.id] {
			own = append(own, m.id)
		}
	}
	if len(own) > 0 {
		still := awaitExits(own)
		for _, id := range own {
			if !still[id] {
				delete(busy, id) // its processes are gone
			}
		}
	}
	for tree, m := range sc.mine {
		if busy[m.id] {
			_ = os.Remove(filepath.Join(IDDir, strconv.Itoa(m.id)))
			noteRemoved()
			m.f.Close()
			delete(sc.mine, tree)
		}
	}
	for id := range busy {
		sc.used[id] = true
	}
	sc.listed = listedIDs()
	return sc, nil
}

// claim takes an id for path: its own record's, the id that owns it on
// disk when nobody holds that, or the first free one from *next on.
func (sc *scan) claim(shared Account, path string, next *int) (*Claimed, error) {
	if m := sc.mine[path]; m != nil {
		delete(sc.mine, path)
		return claimed(shared, m.id, path, m.f), nil
	}
	// A tree already on disk (a daemon restarting on its clones after a
	// reboot) takes back the id that owns it when nobody holds that id.
	if id := ownerID(path); id > 0 && !sc.used[id] && !sc.listed[id] {
		if c, err := createRecord(shared, id, path); err == nil && c != nil {
			sc.used[id] = true
			return c, nil
		}
	}
	for ; *next < IDBase+IDCount; *next++ {
		id := *next
		if sc.used[id] || sc.listed[id] {
			continue
		}
		c, err := createRecord(shared, id, path)
		if err != nil {
			return nil, err
		}
		sc.used[id] = true
		if c != nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w: all %d ids from %d are held by running servers, by processes still running as them, or by trees still on disk (listed in %s): stop some pools, or remove what a killed pristine left", ErrNoID, IDCount, IDBase, IDDir)
}

// closeMine lets go of the records kept aside for trees that did not take
// them (a ClaimAll that failed part-way).
func (sc *scan) closeMine() {
	for _, m := range sc.mine {
		m.f.Close()
	}
	sc.mine = nil
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
	if _, err := f.WriteString(path + "\nroot " + fsRoot() + "\n"); err != nil {
		f.Close()
		os.Remove(rec)
		return nil, fmt.Errorf("claim a server id: %w", err)
	}
	return claimed(shared, id, path, f), nil
}

// parseRecord reads a record: the tree's path, and the file system root
// it was claimed under ("" in a record of an older pristine).
func parseRecord(b []byte) (path, root string) {
	path, rest, _ := strings.Cut(string(b), "\n")
	for _, ln := range strings.Split(rest, "\n") {
		if v, ok := strings.CutPrefix(ln, "root "); ok {
			root = strings.TrimSpace(v)
		}
	}
	return strings.TrimSpace(path), root
}

// fsRoot names this process's file system root, "device:inode" of "/":
// processes chrooted into different trees see different ones.
var fsRoot = sync.OnceValue(func() string {
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		return "unknown"
	}
	return strconv.FormatUint(st.Dev, 10) + ":" + strconv.FormatUint(st.Ino, 10)
})

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
func (c *Claimed) Release() { ReleaseAll([]*Claimed{c}) }

// ReleaseAll is Release of every id of cs under one lock: what a pool
// going down gives back.
func ReleaseAll(cs []*Claimed) {
	held := false
	for _, c := range cs {
		held = held || (c != nil && c.f != nil)
	}
	if !held {
		return
	}
	idMu.Lock()
	defer idMu.Unlock()
	lock, err := lockIDs()
	for _, c := range cs {
		c.releaseLocked()
	}
	if err == nil {
		noteRemoved()
		lock.Close()
	} else {
		busyScan.ok = false // other processes see the records gone and walk anyway
	}
}

// releaseLocked removes c's record and lets go of it; the caller holds
// idMu (and, where it could take it, the lock of IDDir) and notes the
// removal.
func (c *Claimed) releaseLocked() {
	if c == nil || c.f == nil {
		return
	}
	_ = os.Remove(filepath.Join(IDDir, strconv.Itoa(c.UID)))
	c.f.Close()
	c.f = nil
}

// DataGID is the group of a sealed template's shareable files (Seal):
// every server id has it as its one supplementary group (Credential), so
// a btrfs snapshot of a template can be given to a slot's id without
// touching those files' metadata (cow.Owner.Shared). It lies just past
// the ids' range, so no server has it as its own group. A server reaches
// such a file only inside a tree whose top directory is its own: the
// template's, a seed's and every other slot's top directory are closed
// to it.
const DataGID = IDBase + IDCount

// Seal gives every file under dir (dir included, symlinks not followed) to
// pristine's own user, so no server can write it or read it: templates and
// bases, once their server has stopped. InnoDB's files and tables'
// definitions (Shareable) are given to group DataGID, read-write, and
// every directory is closed to group and others, so a server reaches them
// only in its own clone. Without root it does nothing.
func Seal(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid := os.Geteuid(), os.Getegid()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := unix.Lchown(p, uid, gid); err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if fi.Mode().Perm()&0o077 != 0 {
				return os.Chmod(p, fi.Mode().Perm()&^0o077)
			}
			return nil
		case d.Type().IsRegular() && Shareable(p):
			if err := unix.Lchown(p, uid, DataGID); err != nil {
				return err
			}
			return os.Chmod(p, 0o660)
		default:
			return unix.Lchown(p, uid, gid)
		}
	})
	if err != nil {
		return fmt.Errorf("seal %s (give it to pristine's user, out of every server's reach): %w", dir, err)
	}
	return nil
}

// Shareable reports whether the sealed file at path may stay the
// template's in a clone, written through group DataGID: one of InnoDB's
// files, which a server opens, writes, renames and removes but never
// chowns, chmods or copies the owner of (tablespaces, MySQL's mysql.ibd
// among them, the system and undo tablespaces, the redo log), or a
// table's definition (.frm), which MariaDB rewrites under a new name. A
// view's or a trigger's definition (a text file, "TYPE=VIEW") is not:
// CREATE OR REPLACE VIEW copies the old file's owner to its backup, which
// only the owner may do; nor are MyISAM's and Aria's files, whose repair
// does the same.
func Shareable(path string) bool {
	name := filepath.Base(path)
	switch {
	case strings.HasSuffix(name, ".ibd"), innodbFile.MatchString(name):
		return true
	case strings.HasSuffix(name, ".frm"):
		return tableDefinition(path)
	}
	return false
}

// tableDefinition reports whether the .frm file at path is a table's:
// binary, from the bytes 0xfe 0x01.
func tableDefinition(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [2]byte
	n, _ := f.Read(head[:])
	return n == 2 && head[0] == 0xfe && head[1] == 0x01
}

// innodbFile names InnoDB's files other than tablespaces: MariaDB's and
// MySQL's system tablespace, undo tablespaces (undo001, undo_001) and redo
// log (ib_logfile0; #innodb_redo/#ib_redo10, and its spares "_tmp").
var innodbFile = regexp.MustCompile(`^(ibdata[0-9]+|ib_logfile[0-9]+|undo_?[0-9]+|#ib_redo[0-9]+(_tmp)?)$`)
