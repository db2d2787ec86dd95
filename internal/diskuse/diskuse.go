// Package diskuse measures how much data a tree of files holds (its
// logical size) and how much of the filesystem it takes (its physical
// size), from the filesystem's own extent records, the way compsize does:
// on btrfs from the file extent items (BTRFS_IOC_TREE_SEARCH_V2), which
// give the compressed size of each extent; elsewhere from FIEMAP.
//
// Logical is the sum of the bytes each file references (holes and
// punched-out pages excluded), uncompressed. Physical counts every
// extent once, however many files, snapshots or reflink copies share it,
// at its full size on disk (compressed where it is): an extent a slot
// overwrote part of stays allocated whole while the template references
// it. A Counter carries the extents it has seen, so a template measured
// first and its slots after gives the slots' own share as the growth of
// Physical.
package diskuse

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Usage is what a Counter has measured.
type Usage struct {
	Logical  int64 `json:"logical"`  // bytes the files hold, uncompressed
	Physical int64 `json:"physical"` // bytes they take on disk, shared extents once
	Files    int   `json:"files"`
	// Method says how it was measured: "btrfs extents" or "fiemap".
	Method string `json:"method,omitempty"`
}

// Counter measures trees, counting each extent once across all of them.
type Counter struct {
	Usage
	seen map[uint64]struct{} // the disk addresses of the extents counted
	// btrfsDenied is set once a tree search is refused (not root): the
	// rest is measured with FIEMAP.
	btrfsDenied bool
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter { return &Counter{seen: map[uint64]struct{}{}} }

// Measure returns the usage of the trees at paths, shared extents once.
func Measure(paths ...string) (Usage, error) {
	c := NewCounter()
	for _, p := range paths {
		if err := c.Add(p); err != nil {
			return c.Usage, err
		}
	}
	return c.Usage, nil
}

// Add measures every regular file under path (which may be a file). A
// path that is missing is skipped, and so is a file that goes while it
// is walked: slots come and go under a running pool.
func (c *Counter) Add(path string) error {
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if err := c.addFile(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("measure %s: %w", p, err)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// addFile counts one file's extents.
func (c *Counter) addFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	c.Files++
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return err
	}
	if sfs.Type == unix.BTRFS_SUPER_MAGIC && !c.btrfsDenied {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		err := c.btrfsExtents(fd, st.Ino)
		if !errors.Is(err, unix.EPERM) {
			c.Method = "btrfs extents"
			return err
		}
		c.btrfsDenied = true
	}
	c.Method = "fiemap"
	return c.fiemapExtents(fd)
}

// extent counts one extent: logical bytes always, physical bytes the
// first time its disk address is seen (addr 0: never shared, always).
func (c *Counter) extent(addr uint64, logical, physical int64) {
	c.Logical += logical
	if addr != 0 {
		if _, ok := c.seen[addr]; ok {
			return
		}
		c.seen[addr] = struct{}{}
	}
	c.Physical += physical
}
