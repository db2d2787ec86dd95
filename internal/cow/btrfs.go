package cow

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/mountinfo"
	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// Btrfs keeps every tree in a subvolume and clones it with a snapshot, whose
// cost does not depend on the size of the tree. A source that is a plain
// directory rather than a subvolume is cloned into a new subvolume by
// reflinking its files. It needs btrfs and, to delete subvolumes, root (or
// the mount option user_subvol_rm_allowed).
type Btrfs struct {
	root *rootdir.Root
}

// NewBtrfs returns the btrfs backend, confined to root. It does not check
// the filesystem; ByName and Detect do.
func NewBtrfs(root *rootdir.Root) *Btrfs { return &Btrfs{root: root} }

// Name returns "btrfs".
func (b *Btrfs) Name() string { return "btrfs" }

// MakeDir creates an empty subvolume.
func (b *Btrfs) MakeDir(path string) error {
	if err := checkDst(b.root, "make dir", path); err != nil {
		return err
	}
	if err := subvolCreate(filepath.Dir(path), filepath.Base(path)); err != nil {
		return fmt.Errorf("make dir %s: btrfs subvolume create: %w", path, err)
	}
	return nil
}

// Clone snapshots src at dst when src is a subvolume, and otherwise creates
// a subvolume at dst and reflinks src's files into it.
func (b *Btrfs) Clone(src, dst string) error { return b.CloneAs(src, dst, nil) }

// CloneAs is Clone with every file of the copy given to own (nil: the
// source's owners). A snapshot keeps its source's owners, so it is then
// walked and every entry chowned (a metadata write per file; docs/security.md
// has what it costs).
func (b *Btrfs) CloneAs(src, dst string, own *Owner) error {
	if err := checkDst(b.root, "clone", dst); err != nil {
		return err
	}
	if isSubvol(src) {
		if err := snapCreate(src, filepath.Dir(dst), filepath.Base(dst)); err != nil {
			return cloneErr("btrfs snapshot", src, dst, err)
		}
		if own != nil {
			if err := own.ChownTree(dst); err != nil {
				_ = b.Remove(dst)
				return cloneErr("btrfs snapshot", src, dst, err)
			}
		}
		return nil
	}
	mk := func(path string) error {
		if err := subvolCreate(filepath.Dir(path), filepath.Base(path)); err != nil {
			return fmt.Errorf("btrfs subvolume create %s: %w", path, err)
		}
		return nil
	}
	if err := cloneTree(src, dst, mk, reflinkData, own); err != nil {
		return cloneErr("btrfs reflink", src, dst, err)
	}
	return nil
}

// Remove deletes the subvolume at path with one ioctl, or removes path file
// by file when it is not a subvolume. A subvolume with a filesystem mounted
// inside is refused (deleting it would detach that mount).
func (b *Btrfs) Remove(path string) error {
	if err := checkInside(b.root, "remove", path); err != nil {
		return err
	}
	if !isSubvol(path) {
		return removeTree(path)
	}
	below, err := mountinfo.Below(filepath.Clean(path))
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if len(below) > 0 {
		return fmt.Errorf("remove %s: %s is a mount point inside it; unmount it first", path, below[0])
	}
	err = snapDestroy(filepath.Dir(path), filepath.Base(path))
	if errors.Is(err, unix.ENOTEMPTY) {
		return fmt.Errorf("remove %s: btrfs subvolume delete: it holds other subvolumes; remove those first: %w", path, err)
	}
	if err != nil {
		return fmt.Errorf("remove %s: btrfs subvolume delete: %w", path, err)
	}
	return nil
}

// isSubvol reports whether path is the top directory of a btrfs subvolume.
func isSubvol(path string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Ino != btrfsFirstFreeInode {
		return false
	}
	var sfs unix.Statfs_t
	return unix.Statfs(path, &sfs) == nil && sfs.Type == unix.BTRFS_SUPER_MAGIC
}
