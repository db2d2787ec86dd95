package cow

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// removeTree removes the tree at path without following symlinks and without
// descending into a directory on another device (a mount point, or on btrfs a
// nested subvolume). A missing path is not an error.
func removeTree(path string) error {
	st, err := lstat(path)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Unlink(path); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		return nil
	}
	return removeDir(path, st.Dev)
}

// removeDir empties and removes the directory path, which is on device dev.
func removeDir(path string, dev uint64) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if st.Dev != dev {
		return fmt.Errorf("remove %s: it is a mount point or a nested btrfs subvolume; unmount or delete it first", path)
	}
	if st.Mode&0o700 != 0o700 {
		// Make a read-only directory writable so its entries can go.
		if err := unix.Chmod(path, 0o700); err != nil {
			return fmt.Errorf("remove %s: %w", path, err)
		}
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	for _, e := range ents {
		child := path + "/" + e.Name()
		if e.IsDir() {
			if err := removeDir(child, dev); err != nil {
				return err
			}
		} else if err := unix.Unlink(child); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove %s: %w", child, err)
		}
	}
	if err := unix.Rmdir(path); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
