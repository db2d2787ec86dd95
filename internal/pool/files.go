package pool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// fileMark is every file and directory under a slot's directories (its
// clone, and its run directory: socket, error log, tmpdir) with what
// changes when it is written: inode, size, modification and change times.
// They are read with lstat, which sees a write the moment it returns. (A
// btrfs generation search, as `btrfs subvolume find-new` does, would not:
// it reads the subvolume's tree, which gets a write only at writeback or
// at a transaction commit, so it needs the whole filesystem synced first,
// every slot's writes with it.)
// release --unchanged compares the mark taken when the slot became ready
// with one taken at release: a file a holder made the server write outside
// the storage engines (SELECT ... INTO DUMPFILE or OUTFILE, a planted
// table's .frm/.CSV/.CSM) shows as a new file, and a file changed in place
// as a new size or time. The change time cannot be set from user space,
// so a write cannot hide by restoring the modification time.
type fileMark map[string]fileStat

type fileStat struct {
	ino          uint64
	mode         uint32
	size         int64
	mtime, ctime int64 // nanoseconds
	// settled is set on a directory whose change time was at least
	// settleAge old when it was looked at: any entry made, removed or
	// renamed in it since moves its change time (remark).
	settled bool
}

// settleAge is how old a directory's change time must be for remark to
// trust it: one changed less than a timestamp's granularity before it was
// looked at could change again with its change time the same (a clock
// tick, a few milliseconds, where the kernel keeps coarse times; a
// second on filesystems that keep whole seconds).
const settleAge = 2 * time.Second

// markFiles walks dirs (missing ones are skipped). Each directory is
// opened once and its entries are looked at relative to it (fstatat), so
// a file costs one lookup of its own name, not of its whole path.
func markFiles(dirs ...string) (fileMark, error) {
	return markFilesUsed(nil, dirs...)
}

// usage adds up the bytes allocated to the files under dir, as usedBlocks
// does.
type usage struct {
	dir   string
	bytes int64
}

// markFilesUsed is markFiles that also adds up u's bytes (when not nil)
// from the same look at each entry: a slot's start needs both, and one
// walk of its clone.
func markFilesUsed(u *usage, dirs ...string) (fileMark, error) {
	m := fileMark{}
	w := walk{m: m, u: u, now: time.Now().UnixNano()}
	for _, dir := range dirs {
		if err := w.dir(unix.AT_FDCWD, dir, dir); err != nil {
			return nil, fmt.Errorf("list the slot's files under %s: %w", dir, err)
		}
	}
	return m, nil
}

// walk is one walk of a slot's files into m: a whole one (markFiles), or
// one that lists again only the directories changed since old (remark).
type walk struct {
	m   fileMark
	u   *usage
	now int64 // when the walk began, in nanoseconds
	// old and kids, for remark: the mark walked again, and its entries'
	// names by their directory's path.
	old  fileMark
	kids map[string][]string
}

// dir adds to w.m the entry name of the directory at fd, known as path,
// and, when it is a directory, everything under it, and to w.u what those
// under w.u.dir take. An entry gone between its directory's listing and
// the look at it is left out: that listing shows it.
func (w *walk) dir(fd int, name, path string) error {
	st, ok, err := w.look(fd, name, path)
	if err != nil || !ok {
		return err
	}
	if w.u != nil && under(path, w.u.dir) {
		w.u.bytes += st.Blocks << 9
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	if was, ok := w.old[path]; ok && was.settled && sameDir(was, w.m[path]) {
		// Its entries are w.old's: each is looked at again but the files
		// a storage engine rewrites, whose times diff never compares and
		// whose inode cannot change without a change of the directory.
		return w.list(fd, name, path, w.kids[path], true)
	}
	return w.list(fd, name, path, nil, false)
}

// look adds path's lstat to w.m; ok is false when it is gone.
func (w *walk) look(fd int, name, path string) (unix.Stat_t, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return st, false, nil
		}
		return st, false, fmt.Errorf("lstat %s: %w", path, err)
	}
	fs := statOf(&st)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		fs.settled = w.now-fs.ctime >= settleAge.Nanoseconds()
	}
	w.m[path] = fs
	return st, true, nil
}

// list walks the directory name of fd, known as path: the entries names
// gives when known, else all it lists.
func (w *walk) list(fd int, name, path string, names []string, known bool) error {
	dfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	d := os.NewFile(uintptr(dfd), path)
	defer d.Close()
	if !known {
		if names, err = d.Readdirnames(-1); err != nil {
			return fmt.Errorf("list %s: %w", path, err)
		}
	}
	for _, n := range names {
		p := path + "/" + n
		if was, ok := w.old[p]; known && ok && was.mode&unix.S_IFMT != unix.S_IFDIR && engineFile(p) {
			w.m[p] = was
			continue
		}
		if err := w.dir(dfd, n, p); err != nil {
			return err
		}
	}
	return nil
}

// sameDir reports whether a directory looked at again is as it was: the
// same inode, and neither its modification nor its change time moved, so
// no entry was made, removed or renamed in it since.
func sameDir(was, now fileStat) bool {
	return was.ino == now.ino && was.mode == now.mode && was.size == now.size && was.mtime == now.mtime && was.ctime == now.ctime
}

// remark is markFiles(dirs...) after a walk that marked m: a directory
// that was settled in m and did not change since is not listed again (its
// entries are m's), and of its entries only those a storage engine
// rewrites are not looked at again. diff(m, remark) is what
// diff(m, markFiles) is.
func (m fileMark) remark(dirs ...string) (fileMark, error) {
	w := walk{m: make(fileMark, len(m)), now: time.Now().UnixNano(), old: m, kids: map[string][]string{}}
	for p := range m {
		if i := strings.LastIndexByte(p, '/'); i > 0 {
			w.kids[p[:i]] = append(w.kids[p[:i]], p[i+1:])
		}
	}
	for _, dir := range dirs {
		if err := w.dir(unix.AT_FDCWD, dir, dir); err != nil {
			return nil, fmt.Errorf("list the slot's files under %s: %w", dir, err)
		}
	}
	return w.m, nil
}

// restat is a copy of m with paths looked at again (a path gone is
// dropped): the mark after a change to those paths alone, without a walk.
func (m fileMark) restat(paths ...string) (fileMark, error) {
	out := make(fileMark, len(m)+len(paths))
	for p, st := range m {
		out[p] = st
	}
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				delete(out, p)
				continue
			}
			return nil, fmt.Errorf("look at %s again: %w", p, err)
		}
		out[p] = statOf(&st)
	}
	return out, nil
}

// statOf is what a fileMark keeps of a stat.
func statOf(st *unix.Stat_t) fileStat {
	return fileStat{ino: st.Ino, mode: st.Mode, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// diff lists what changed from old to now, at most max entries: files that
// appeared or went, and files changed in place other than those a storage
// engine rewrites on its own (whose writes the server's counters cover)
// and directories (whose lists are compared entry by entry).
func (old fileMark) diff(now fileMark, max int) []string {
	var out []string
	for path, st := range now {
		was, ok := old[path]
		switch {
		case engineDir(path):
		case !ok:
			out = append(out, "new "+path)
		case was.ino != st.ino || was.mode&unix.S_IFMT != st.mode&unix.S_IFMT:
			out = append(out, "replaced "+path)
		case st.mode&unix.S_IFMT == unix.S_IFDIR || engineFile(path):
		case was != st:
			out = append(out, "changed "+path)
		}
	}
	for path := range old {
		if _, ok := now[path]; !ok && !engineDir(path) {
			out = append(out, "removed "+path)
		}
	}
	sort.Strings(out)
	if len(out) > max {
		out = append(out[:max], fmt.Sprintf("and %d more", len(out)-max))
	}
	return out
}

// under reports whether path is dir or lies inside it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// without returns the entries of m outside dir.
func (m fileMark) without(dir string) fileMark {
	out := fileMark{}
	for p, st := range m {
		if !under(p, dir) {
			out[p] = st
		}
	}
	return out
}

// engineDir reports whether path lies in a directory whose files MySQL's
// InnoDB makes, renames and removes on its own: the redo log
// (#innodb_redo, whose spare files #ib_redoN_tmp come and go as the log
// moves) and the session temporary tablespaces (#innodb_temp). The log
// sequence number covers what is written there; nothing there is ever
// opened as a table.
func engineDir(path string) bool {
	switch filepath.Base(filepath.Dir(path)) {
	case "#innodb_redo", "#innodb_temp":
		return true
	}
	return false
}

// engineFile reports whether the server rewrites path on its own, in the
// background or on a write the server's counters already see: InnoDB's
// tablespaces and logs (the log sequence number moves), Aria's, MyISAM's
// and CSV's data and index files and logs (Handler_write, _update and
// _delete move), the transaction coordinator log, and the error log, pid
// file and socket of the run directory; MySQL's redo log files
// (#innodb_redo/#ib_redoN), doublewrite files (.dblwr) and session
// temporary tablespaces (#innodb_temp/*.ibt). New files of these kinds are
// never tolerated.
func engineFile(path string) bool {
	name := filepath.Base(path)
	switch name {
	case "ibtmp1", "ib_buffer_pool", "aria_log_control", "tc.log", "ddl_recovery.log",
		"error.log", "mysqld.pid", "mysqld.sock":
		return true
	}
	for _, p := range []string{"ibdata", "ib_logfile", "undo", "aria_log.", "#ib_redo"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".ibd", ".mai", ".mad", ".myi", ".myd", ".csv", ".csm", ".ibt", ".dblwr":
		return true
	}
	return false
}

// slotDirs are the directories of a slot whose files a holder could have
// the server write: the slot's directory (the clone and anything beside
// it) and its run directory (the server's tmpdir).
func slotDirs(s *slot) []string { return []string{s.dir, s.run} }
