package cow

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pristinedb/pristine/internal/errtag"
	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// Detect returns the best backend for the filesystem holding dir, a
// directory inside root that is created when missing: btrfs when dir is on btrfs and pristine runs as
// root, else reflink when a probe clone in dir succeeds, else copy.
func Detect(root *rootdir.Root, dir string) (Backend, error) {
	fsType, err := fsTypeOf(root, dir)
	if err != nil {
		return nil, err
	}
	if fsType == unix.BTRFS_SUPER_MAGIC && euid == 0 {
		return NewBtrfs(root), nil
	}
	ok, err := probeReflink(dir)
	if err != nil {
		return nil, fmt.Errorf("detect backend for %s: %w", dir, err)
	}
	if ok {
		return NewReflink(root), nil
	}
	return NewCopy(root), nil
}

// ByName returns the backend called name for dir, a directory inside root:
// "auto" (Detect), "btrfs", "reflink" or "copy". A backend the filesystem
// cannot support is refused with the cause and the fix.
func ByName(root *rootdir.Root, name, dir string) (Backend, error) {
	switch name {
	case "", "auto":
		return Detect(root, dir)
	case "copy":
		if _, err := fsTypeOf(root, dir); err != nil {
			return nil, err
		}
		return NewCopy(root), nil
	case "btrfs":
		fsType, err := fsTypeOf(root, dir)
		if err != nil {
			return nil, err
		}
		if fsType != unix.BTRFS_SUPER_MAGIC {
			return nil, errtag.New(ErrUnsupported, "backend btrfs: %s is on %s, not btrfs; use --backend auto, or run \"pristine scratch up\" for a RAM-backed btrfs",
				dir, fsName(fsType))
		}
		if euid != 0 {
			return nil, errtag.New(ErrUnsupported, "backend btrfs: deleting subvolumes needs root; run pristine as root or use --backend reflink")
		}
		return NewBtrfs(root), nil
	case "reflink":
		fsType, err := fsTypeOf(root, dir)
		if err != nil {
			return nil, err
		}
		ok, err := probeReflink(dir)
		if err != nil {
			return nil, fmt.Errorf("backend reflink: %w", err)
		}
		if !ok {
			what := fsName(fsType)
			if fsType == unix.XFS_SUPER_MAGIC {
				what = "xfs made without reflink (mkfs.xfs -m reflink=0)"
			}
			return nil, errtag.New(ErrUnsupported, "backend reflink: %s is on %s, which cannot reflink; use --backend copy, or run \"pristine scratch up\" for a RAM-backed XFS/btrfs",
				dir, what)
		}
		return NewReflink(root), nil
	}
	return nil, fmt.Errorf("backend %q: unknown; use one of auto, %s", name, strings.Join(Names, ", "))
}

// fsTypeOf checks that dir is inside root, creates it when missing, and
// returns the magic number of its filesystem.
func fsTypeOf(root *rootdir.Root, dir string) (int64, error) {
	if root == nil {
		return 0, fmt.Errorf("backend for %s: no pristine root given", dir)
	}
	if dir != root.Path {
		if err := root.Check(dir); err != nil {
			return 0, fmt.Errorf("backend: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("backend for %s: %w", dir, err)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return 0, fmt.Errorf("backend for %s: statfs: %w", dir, err)
	}
	return int64(sfs.Type), nil
}

// probeReflink reports whether FICLONE works between two new files in dir.
// Errors that say "not here" give false; others (a full disk, no permission)
// are returned.
func probeReflink(dir string) (bool, error) {
	src, err := os.CreateTemp(dir, ".pristine-probe-*")
	if err != nil {
		return false, fmt.Errorf("reflink probe: %w", err)
	}
	defer os.Remove(src.Name())
	defer src.Close()
	dst, err := os.CreateTemp(dir, ".pristine-probe-*")
	if err != nil {
		return false, fmt.Errorf("reflink probe: %w", err)
	}
	defer os.Remove(dst.Name())
	defer dst.Close()
	if _, err := src.Write(make([]byte, 4096)); err != nil {
		return false, fmt.Errorf("reflink probe: %w", err)
	}
	err = unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL),
		errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		return false, nil
	}
	return false, fmt.Errorf("reflink probe: %w", err)
}

// fsName names a filesystem by its statfs magic number.
func fsName(magic int64) string {
	switch magic {
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	case unix.NFS_SUPER_MAGIC:
		return "nfs"
	case 0x2fc12fc1:
		return "zfs"
	case 0x65735546:
		return "a FUSE filesystem"
	}
	return fmt.Sprintf("a filesystem of type %#x", magic)
}
