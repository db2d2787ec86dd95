package cow

import (
	"fmt"
	"os"
)

// CopyTree copies the tree src to dst by copying every byte, with every
// copy belonging to own (nil: the source's owners). Unlike the backends it
// is not confined to a root: it is how a build's data directory reaches a
// private staging directory on tmpfs (internal/template), whose parent the
// caller made 0700 for it. dst must not exist; on failure nothing is left
// there.
func CopyTree(src, dst string, own *Owner) error {
	if _, err := lstat(dst); err == nil {
		return fmt.Errorf("copy %s: %w", dst, ErrExist)
	}
	if err := cloneTree(src, dst, mkdir0700, copyData, own); err != nil {
		return cloneErr("copy", src, dst, err)
	}
	return nil
}

// CopyIn copies the tree src, which may be on another filesystem (a
// finished build on tmpfs), into the store of backend b at dst: dst is
// made by b's MakeDir (a subvolume on btrfs), so it is a Clone source like
// any tree the backend made, and every byte is copied into it with the
// owners and modes of src. dst must not exist; on failure nothing is left
// there.
func CopyIn(b Backend, src, dst string) (err error) {
	if err := b.MakeDir(dst); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if rerr := b.Remove(dst); rerr != nil {
				err = fmt.Errorf("%w (and cleaning up %s failed: %v)", err, dst, rerr)
			}
		}
	}()
	// MakeDir made the top; cloneTree fills it and sets its mode and owner
	// from src's.
	exists := func(path string) error {
		if _, err := os.Stat(path); err != nil {
			return err
		}
		return nil
	}
	if err := cloneTree(src, dst, exists, copyData, nil); err != nil {
		return cloneErr("copy in", src, dst, err)
	}
	return nil
}
