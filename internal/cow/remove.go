package cow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// removeTree removes the tree at path. It works relative to open directory
// descriptors opened with O_NOFOLLOW, so it never follows a symlink, even
// one swapped in while it runs, and it never descends into a directory on
// another device (a mount point, or on btrfs a nested subvolume). A missing
// path is not an error.
func removeTree(path string) error {
	parent, name := filepath.Dir(path), filepath.Base(path)
	pfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: open parent: %w", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
		return nil
	} else if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return removeAt(pfd, name, path, st.Dev, st.Mode&unix.S_IFMT == unix.S_IFDIR)
}

// removeAt removes the entry name of the open directory dfd; path is its
// full path, for errors, dev the device the tree must stay on, and isDir
// what the directory listing said the entry is.
func removeAt(dfd int, name, path string, dev uint64, isDir bool) error {
	unlink := func() error {
		if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		return nil
	}
	if !isDir {
		return unlink()
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		return unlink() // replaced by a file or a symlink meanwhile
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return fmt.Errorf("remove %s: %w", path, err)
	}
	dir := os.NewFile(uintptr(fd), path) // closes fd
	defer dir.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if st.Dev != dev {
		return fmt.Errorf("remove %s: it is a mount point or a nested btrfs subvolume; unmount or delete it first", path)
	}
	if st.Mode&0o700 != 0o700 && euid != 0 {
		// Make a read-only directory writable so its entries can go.
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return fmt.Errorf("remove %s: %w", path, err)
		}
	}
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	for _, e := range ents {
		if err := removeAt(fd, e.Name(), path+"/"+e.Name(), dev, e.IsDir()); err != nil {
			return err
		}
	}
	if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
