package cow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// fileData fills the freshly created, empty file dfd with the contents of
// sfd, whose size is size.
type fileData func(dfd, sfd int, size int64) error

// mkRoot creates the top directory of a clone, empty, mode 0700.
type mkRoot func(path string) error

// treeEntry is a directory or file found while walking the source tree.
type treeEntry struct {
	rel string // path relative to the tree's top, "" for the top itself
	st  unix.Stat_t
}

// plan is the walk of a source tree: directories in pre-order (parents first),
// regular files and symlinks.
type plan struct {
	dirs, files, links []treeEntry
}

// walk lists the tree at src without following symlinks.
func walk(src string) (*plan, error) {
	p := &plan{}
	var top treeEntry
	if err := unix.Lstat(src, &top.st); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	if top.st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("%s: not a directory", src)
	}
	p.dirs = append(p.dirs, top)
	for i := 0; i < len(p.dirs); i++ {
		dir := p.dirs[i].rel
		ents, err := os.ReadDir(join(src, dir))
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			ent := treeEntry{rel: join(dir, e.Name())}
			if err := unix.Lstat(join(src, ent.rel), &ent.st); err != nil {
				return nil, fmt.Errorf("%s: %w", join(src, ent.rel), err)
			}
			switch ent.st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				p.dirs = append(p.dirs, ent)
			case unix.S_IFREG:
				p.files = append(p.files, ent)
			case unix.S_IFLNK:
				p.links = append(p.links, ent)
			case unix.S_IFSOCK:
				// A socket is meaningless in a copy: skip it.
			default:
				return nil, fmt.Errorf("%s: cannot clone a device or FIFO", join(src, ent.rel))
			}
		}
	}
	return p, nil
}

// join joins a relative path onto dir; rel may be "".
func join(dir, rel string) string {
	if rel == "" {
		return dir
	}
	if dir == "" {
		return rel
	}
	return dir + "/" + rel
}

// cloneTree copies the tree src to dst, which must not exist, using mk for the
// top directory and data for file contents. Files are copied by several
// workers at once; with own, every copy belongs to own instead of the
// source's owner. On failure it removes whatever it made at dst.
func cloneTree(src, dst string, mk mkRoot, data fileData, own *Owner) (err error) {
	p, err := walk(src)
	if err != nil {
		return err
	}
	if own != nil {
		for _, l := range [][]treeEntry{p.dirs, p.links} {
			for i := range l {
				own.set(&l[i].st)
			}
		}
	}
	if err := mk(dst); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if rerr := removeTree(dst); rerr != nil {
				err = fmt.Errorf("%w (and cleaning up %s failed: %v)", err, dst, rerr)
			}
		}
	}()
	for _, d := range p.dirs[1:] {
		if err := unix.Mkdir(join(dst, d.rel), 0o700); err != nil {
			return fmt.Errorf("mkdir %s: %w", join(dst, d.rel), err)
		}
	}
	for _, l := range p.links {
		if err := cloneLink(src, dst, l); err != nil {
			return err
		}
	}
	if err := cloneFiles(src, dst, p.files, data, own); err != nil {
		return err
	}
	// Children before parents, so setting a directory's times comes after
	// everything that changes them.
	for i := len(p.dirs) - 1; i >= 0; i-- {
		if err := setMeta(join(dst, p.dirs[i].rel), -1, &p.dirs[i].st); err != nil {
			return err
		}
	}
	return nil
}

// workers is how many files cloneFiles copies at once.
var workers = min(8, 2*runtime.GOMAXPROCS(0))

// cloneFiles copies files, spreading them over workers (eachFile); it
// returns the first error and stops handing out work after it.
func cloneFiles(src, dst string, files []treeEntry, data fileData, own *Owner) error {
	return eachFile(files, func(f *treeEntry) error { return cloneFile(src, dst, f, data, own) })
}

// testHookFile, when set by a test, runs before each file is cloned; an error
// it returns fails the clone there. It is a fault-injection seam.
var testHookFile func(rel string) error

// cloneFile creates the copy of one regular file and sets its metadata.
func cloneFile(src, dst string, f *treeEntry, data fileData, own *Owner) error {
	if testHookFile != nil {
		if err := testHookFile(f.rel); err != nil {
			return err
		}
	}
	sp, dp := join(src, f.rel), join(dst, f.rel)
	sfd, err := unix.Open(sp, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", sp, err)
	}
	defer unix.Close(sfd)
	var st unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", sp, err)
	}
	if own != nil {
		own.set(&st)
	}
	dfd, err := unix.Open(dp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", dp, err)
	}
	defer unix.Close(dfd)
	if err := data(dfd, sfd, st.Size); err != nil {
		return fmt.Errorf("%s: %w", dp, err)
	}
	return setMeta(dp, dfd, &st)
}

// cloneLink recreates one symlink.
func cloneLink(src, dst string, l treeEntry) error {
	sp, dp := join(src, l.rel), join(dst, l.rel)
	target, err := os.Readlink(sp)
	if err != nil {
		return fmt.Errorf("readlink %s: %w", sp, err)
	}
	if err := unix.Symlink(target, dp); err != nil {
		return fmt.Errorf("symlink %s: %w", dp, err)
	}
	if err := chown(dp, -1, &l.st); err != nil {
		return err
	}
	ts := []unix.Timespec{l.st.Atim, l.st.Mtim}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, dp, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times of %s: %w", dp, err)
	}
	return nil
}

var euid, egid = os.Geteuid(), os.Getegid()

// chown gives path (or the open fd, when fd >= 0) the owner in st. Without
// privileges a change of owner is skipped, as cp -a does.
func chown(path string, fd int, st *unix.Stat_t) error {
	if euid != 0 && int(st.Uid) == euid && int(st.Gid) == egid {
		return nil
	}
	var err error
	if fd >= 0 {
		err = unix.Fchown(fd, int(st.Uid), int(st.Gid))
	} else {
		err = unix.Lchown(path, int(st.Uid), int(st.Gid))
	}
	if err != nil && !(euid != 0 && errors.Is(err, unix.EPERM)) {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	return nil
}

// setMeta sets owner, mode and times of a file or directory (fd < 0: by path).
func setMeta(path string, fd int, st *unix.Stat_t) error {
	if err := chown(path, fd, st); err != nil {
		return err
	}
	mode := st.Mode & 0o7777
	var err error
	if fd >= 0 {
		err = unix.Fchmod(fd, mode)
	} else {
		err = unix.Chmod(path, mode)
	}
	if err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times of %s: %w", path, err)
	}
	return nil
}

// lstat is os.Lstat without the allocation of a FileInfo on the error path.
func lstat(path string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return &st, nil
}
