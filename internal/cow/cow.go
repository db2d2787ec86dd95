// Package cow makes cheap copies of directory trees: the copy-on-write
// storage under pristine's slots. Three backends implement one interface:
//
//   - btrfs: every tree is a subvolume and a clone is a snapshot, a single
//     ioctl whose cost does not depend on the size of the tree;
//   - reflink: a clone walks the tree and shares each file's extents with
//     FICLONE (XFS made with reflink=1, btrfs, and other filesystems that
//     support it); the cost is a few system calls per file;
//   - copy: a clone walks the tree and copies the bytes with
//     copy_file_range, keeping holes; it works everywhere and costs O(data).
//
// Detect picks the best backend for a directory. Every backend is bound to a
// rootdir.Root and refuses to create or remove anything outside it.
package cow

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/pristinedb/pristine/internal/rootdir"
)

// Backend makes and removes trees that can be cloned cheaply.
type Backend interface {
	// Name returns "btrfs", "reflink" or "copy".
	Name() string
	// MakeDir creates an empty directory that can later be a Clone source
	// (btrfs: a subvolume). Its parent must exist; path must not.
	MakeDir(path string) error
	// Clone makes a copy of the tree src at dst, which must not exist:
	// regular files, directories and symlinks with their modes, owners and
	// times (sockets are skipped; devices, FIFOs, hard links and extended
	// attributes are not preserved). The copy is independent of src: writes
	// to one never show in the other. On failure nothing is left at dst.
	Clone(src, dst string) error
	// Remove removes a tree made by MakeDir or Clone. Removing a path that
	// does not exist is not an error. Remove never crosses into another
	// mounted filesystem.
	Remove(path string) error
}

// Names lists the backend names ByName accepts besides "auto".
var Names = []string{"btrfs", "reflink", "copy"}

// ErrUnsupported is returned (wrapped) when a backend cannot work on the
// filesystem it is asked to use.
var ErrUnsupported = errors.New("backend not supported here")

// ErrExist is returned (wrapped) when the destination of Clone or MakeDir
// already exists.
var ErrExist = errors.New("destination exists")

// Compile-time checks that every backend implements Backend.
var (
	_ Backend = (*Btrfs)(nil)
	_ Backend = (*Reflink)(nil)
	_ Backend = (*Copy)(nil)
)

// checkDst refuses a destination outside the root, the root's data directory
// itself, and one that already exists.
func checkDst(root *rootdir.Root, op, path string) error {
	if err := checkInside(root, op, path); err != nil {
		return err
	}
	if _, err := lstat(path); err == nil {
		return fmt.Errorf("%s %s: %w", op, path, ErrExist)
	}
	if _, err := lstat(filepath.Dir(path)); err != nil {
		return fmt.Errorf("%s %s: parent directory: %w", op, path, err)
	}
	return nil
}

// checkInside refuses a path outside the root and the root's data directory
// itself.
func checkInside(root *rootdir.Root, op, path string) error {
	if root == nil {
		return fmt.Errorf("%s %s: no pristine root given", op, path)
	}
	if err := root.Check(path); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if filepath.Clean(path) == root.Data() {
		return fmt.Errorf("%s %s: refusing the root's data directory itself: %w", op, path, rootdir.ErrOutside)
	}
	return nil
}
