package cow

import (
	"errors"
	"fmt"

	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// Reflink clones trees file by file with FICLONE: each copy shares the
// source's extents until either side writes. It needs a filesystem that can
// reflink (XFS made with reflink=1, btrfs) and src and dst on the same one.
type Reflink struct {
	root *rootdir.Root
}

// NewReflink returns the reflink backend, confined to root. It does not check
// that the filesystem can reflink; ByName and Detect do.
func NewReflink(root *rootdir.Root) *Reflink { return &Reflink{root: root} }

// Name returns "reflink".
func (b *Reflink) Name() string { return "reflink" }

// MakeDir creates an empty directory.
func (b *Reflink) MakeDir(path string) error {
	if err := checkDst(b.root, "make dir", path); err != nil {
		return err
	}
	if err := unix.Mkdir(path, 0o755); err != nil {
		return fmt.Errorf("make dir %s: %w", path, err)
	}
	return nil
}

// Clone copies the tree src to dst, sharing every file's extents.
func (b *Reflink) Clone(src, dst string) error { return b.CloneAs(src, dst, nil) }

// CloneAs is Clone with every copy given to own (nil: the source's owners).
func (b *Reflink) CloneAs(src, dst string, own *Owner) error {
	if err := checkDst(b.root, "clone", dst); err != nil {
		return err
	}
	if err := cloneTree(src, dst, mkdir0700, reflinkData, own); err != nil {
		return cloneErr("reflink", src, dst, err)
	}
	return nil
}

// Remove removes the tree at path.
func (b *Reflink) Remove(path string) error {
	if err := checkInside(b.root, "remove", path); err != nil {
		return err
	}
	return removeTree(path)
}

// reflinkData shares sfd's extents with the empty file dfd.
func reflinkData(dfd, sfd int, size int64) error {
	if size == 0 {
		return nil
	}
	if err := unix.IoctlFileClone(dfd, sfd); err != nil {
		if errors.Is(err, unix.EXDEV) {
			return fmt.Errorf("reflink: source and destination are on different filesystems: %w", err)
		}
		return fmt.Errorf("reflink: %w", err)
	}
	return nil
}

func mkdir0700(path string) error {
	if err := unix.Mkdir(path, 0o700); err != nil {
		return fmt.Errorf("mkdir %s: %w", path, err)
	}
	return nil
}

// cloneErr wraps a failed clone; a full filesystem gets the cause and the fix.
func cloneErr(backend, src, dst string, err error) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return fmt.Errorf("clone %s to %s: %s: the filesystem holding %s is full (%w); free space there, or make a larger one with \"pristine scratch down && pristine scratch up --size BIGGER\"",
			src, dst, backend, dst, err)
	}
	return fmt.Errorf("clone %s to %s: %s: %w", src, dst, backend, err)
}
