package cow

import (
	"errors"
	"fmt"

	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// Copy clones trees by copying every byte with copy_file_range, keeping holes
// in sparse files. It works on every filesystem and costs O(data); where the
// filesystem can share extents, the kernel may do so behind copy_file_range.
type Copy struct {
	root *rootdir.Root
}

// NewCopy returns the copy backend, confined to root.
func NewCopy(root *rootdir.Root) *Copy { return &Copy{root: root} }

// Name returns "copy".
func (b *Copy) Name() string { return "copy" }

// MakeDir creates an empty directory.
func (b *Copy) MakeDir(path string) error {
	if err := checkDst(b.root, "make dir", path); err != nil {
		return err
	}
	if err := unix.Mkdir(path, 0o755); err != nil {
		return fmt.Errorf("make dir %s: %w", path, err)
	}
	return nil
}

// Clone copies the tree src to dst.
func (b *Copy) Clone(src, dst string) error { return b.CloneAs(src, dst, nil) }

// CloneAs is Clone with every copy given to own (nil: the source's owners).
func (b *Copy) CloneAs(src, dst string, own *Owner) error {
	if err := checkDst(b.root, "clone", dst); err != nil {
		return err
	}
	if err := cloneTree(src, dst, mkdir0700, copyData, own); err != nil {
		return cloneErr("copy", src, dst, err)
	}
	return nil
}

// Remove removes the tree at path.
func (b *Copy) Remove(path string) error {
	if err := checkInside(b.root, "remove", path); err != nil {
		return err
	}
	return removeTree(path)
}

// copyData copies sfd into the empty file dfd, data segment by data segment,
// so holes in the source stay holes in the copy.
func copyData(dfd, sfd int, size int64) error {
	if size == 0 {
		return nil
	}
	if err := unix.Ftruncate(dfd, size); err != nil {
		return fmt.Errorf("copy: truncate: %w", err)
	}
	for off := int64(0); off < size; {
		data, err := unix.Seek(sfd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			// No SEEK_DATA here: copy the rest as data.
			return copyRange(dfd, sfd, off, size-off)
		}
		hole, err := unix.Seek(sfd, data, unix.SEEK_HOLE)
		if err != nil {
			hole = size
		}
		hole = min(hole, size)
		if err := copyRange(dfd, sfd, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

// copyRange copies n bytes at off from sfd to the same offset in dfd, with
// copy_file_range, or read and write where the kernel cannot.
func copyRange(dfd, sfd int, off, n int64) error {
	roff, woff := off, off
	for n > 0 {
		c, err := unix.CopyFileRange(sfd, &roff, dfd, &woff, int(min(n, 1<<30)), 0)
		if err != nil {
			if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) {
				return readWrite(dfd, sfd, roff, n)
			}
			return fmt.Errorf("copy: copy_file_range: %w", err)
		}
		if c == 0 {
			return nil // the source shrank while we copied
		}
		n -= int64(c)
	}
	return nil
}

// readWrite copies n bytes at off from sfd to dfd through a buffer.
func readWrite(dfd, sfd int, off, n int64) error {
	buf := make([]byte, min(n, 1<<20))
	for n > 0 {
		r, err := unix.Pread(sfd, buf[:min(n, int64(len(buf)))], off)
		if err != nil {
			return fmt.Errorf("copy: read: %w", err)
		}
		if r == 0 {
			return nil
		}
		for w := 0; w < r; {
			c, err := unix.Pwrite(dfd, buf[w:r], off+int64(w))
			if err != nil {
				return fmt.Errorf("copy: write: %w", err)
			}
			w += c
		}
		off += int64(r)
		n -= int64(r)
	}
	return nil
}
