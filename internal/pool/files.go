package pool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
}

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
	for _, dir := range dirs {
		if err := markDir(m, unix.AT_FDCWD, dir, dir, u); err != nil {
			return nil, fmt.Errorf("list the slot's files under %s: %w", dir, err)
		}
	}
	return m, nil
}

// markDir adds to m the entry name of the directory at fd, known as path,
// and, when it is a directory, everything under it, and to u what those
// under u.dir take. An entry gone between its directory's listing and the
// look at it is left out: that listing shows it.
func markDir(m fileMark, fd int, name, path string, u *usage) error {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("lstat %s: %w", path, err)
	}
	m[path] = statOf(&st)
	if u != nil && under(path, u.dir) {
		u.bytes += st.Blocks << 9
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	dfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	d := os.NewFile(uintptr(dfd), path)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("list %s: %w", path, err)
	}
	for _, n := range names {
		if err := markDir(m, dfd, n, path+"/"+n, u); err != nil {
			return err
		}
	}
	return nil
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
