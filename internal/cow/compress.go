package cow

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"unsafe"

	"github.com/pristinedb/pristine/internal/mountinfo"
	"golang.org/x/sys/unix"
)

// Compression returns the transparent compression of the btrfs
// filesystem that holds dir, as its mount options name it ("zstd:3",
// "lzo"; compress-force counts too), or "" when it has none or is not
// btrfs: what `pristine scratch up --compress` sets, or what an
// administrator mounted a root's own btrfs with.
func Compression(dir string) (string, error) {
	m, err := mountinfo.Of(dir)
	if err != nil || m == nil || m.FSType != "btrfs" {
		return "", err
	}
	for _, o := range []string{"compress-force", "compress"} {
		if v, ok := m.Option(o); ok && v != "no" && v != "none" {
			return v, nil
		}
	}
	return "", nil
}

// Recompress rewrites every regular file under dir through the page
// cache, so that the btrfs filesystem holding it stores it with its
// compression (Compression), and reports whether it did. A database
// server extends its tablespaces with fallocate and writes into those
// preallocated extents, which btrfs fills in place, uncompressed,
// whatever the mount says (and which its defragment ioctl does not
// recompress either): a template is rewritten once, when its build is
// done and before anything is cloned from it. Each file is copied to a
// new one beside it, holes kept (a page-compressed tablespace is mostly
// holes), with its owner, mode and times, and renamed over the old one;
// the files keep names (by their path relative to dir) stay as written,
// and every file is then marked not to compress later writes
// (noCompress). A filesystem without compression is left alone.
func Recompress(dir string, keep func(rel string) bool) (bool, error) {
	c, err := Compression(dir)
	if err != nil || c == "" {
		return false, err
	}
	buf := make([]byte, 1<<20)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if rel, rerr := filepath.Rel(dir, p); rerr == nil && keep != nil && keep(rel) {
			return nil
		}
		if err := rewrite(p, buf); err != nil {
			return fmt.Errorf("compress %s (%s): %w", p, c, err)
		}
		return nil
	})
	if err == nil {
		err = syncfs(dir)
	}
	if err == nil {
		// Only now: btrfs compresses at writeback, and the flag applies
		// to what is written back after it is set.
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			return noCompress(p)
		})
	}
	if err == nil {
		trim(dir)
	}
	return err == nil, err
}

// fstrimRange is struct fstrim_range (linux/fs.h).
type fstrimRange struct{ start, len, minlen uint64 }

const fitrim = 0xC0185879 // _IOWR('X', 121, struct fstrim_range)

// trim tells the filesystem holding dir to discard its free space now:
// on a loop-mounted scratch that gives the uncompressed copy's blocks
// back to the image's RAM at once, instead of when the asynchronous
// discard gets to them. Best effort: a filesystem or device without
// discard keeps them until it reuses them.
func trim(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	r := fstrimRange{len: ^uint64(0)}
	_ = ioctlPtr(fd, fitrim, unsafe.Pointer(&r))
}

// rewrite copies the file at p to a new file beside it with ordinary
// writes, its holes kept, and renames the copy over it.
func rewrite(p string, buf []byte) (err error) {
	src, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(p), ".pristine-compress-"+filepath.Base(p))
	dst, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		unix.Close(dst)
		if err != nil {
			unix.Unlink(tmp)
		}
	}()
	if err := unix.Ftruncate(dst, st.Size); err != nil {
		return err
	}
	if err := writeData(src, dst, st.Size, buf); err != nil {
		return err
	}
	if err := unix.Fchown(dst, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := unix.Fchmod(dst, st.Mode&0o7777); err != nil {
		return err
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, tmp, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	return unix.Rename(tmp, p)
}

// noCompress marks the file at p as one btrfs does not compress from now on
// (FS_NOCOMP_FL, chattr +m); what it holds stays compressed. Snapshots of
// a template (a slot on btrfs) carry the flag, so what a slot's server
// writes over the template's pages is stored as written: compressed, a
// page or a redo block at a time, it saved nothing measurable and cost
// the slot CPU on every write. A filesystem mounted compress-force
// compresses whatever the flag says.
func noCompress(p string) error {
	const fsNoCompFL = 0x400 // FS_NOCOMP_FL, linux/fs.h
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return fmt.Errorf("read the flags of %s: %w", p, err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, flags|fsNoCompFL); err != nil {
		return fmt.Errorf("mark %s not to compress: %w", p, err)
	}
	return nil
}

// writeData copies the data segments of src (SEEK_DATA / SEEK_HOLE) to
// the same offsets of dst with pread and pwrite.
func writeData(src, dst int, size int64, buf []byte) error {
	for off := int64(0); off < size; {
		data, err := unix.Seek(src, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // only a hole is left
		} else if err != nil {
			return err
		}
		hole, err := unix.Seek(src, data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		for data < hole {
			n, err := unix.Pread(src, buf[:min(int64(len(buf)), hole-data)], data)
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			if _, err := unix.Pwrite(dst, buf[:n], data); err != nil {
				return err
			}
			data += int64(n)
		}
		off = hole
	}
	return nil
}

// syncfs writes back the filesystem that holds dir, so the rewritten
// extents are on it (and measured) before the template is cloned.
func syncfs(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}
