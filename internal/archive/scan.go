package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// extent is one piece of one file that becomes one data record.
type extent struct {
	file   uint32
	offset uint64
	length uint64
}

// scanResult is what Pack learns about a directory before it writes
// anything.
type scanResult struct {
	entries []entry
	extents []extent
	data    uint64 // sum of extent lengths
	rootMod uint32
	skipped []string
}

// scan walks root in lexical order (parents before children) and lists its
// directories, regular files and symlinks. The data of each regular file is
// found with SEEK_DATA/SEEK_HOLE, so holes are never read or sent, and cut
// into extents of at most extentSize bytes. Sockets, FIFOs and devices are
// skipped and reported.
func scan(root string, extentSize int64, replace map[string][]byte) (*scanResult, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", root, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("scan %s: not a directory", root)
	}
	res := &scanResult{rootMod: unixMode(st.Mode())}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{path: rel, mode: unixMode(info.Mode()), mtime: info.ModTime().UnixNano()}
		switch {
		case info.Mode().IsRegular():
			e.kind = kindFile
			e.size = uint64(info.Size())
			id := uint32(len(res.entries))
			if b, ok := replace[rel]; ok {
				e.size = uint64(len(b))
				e.extents = addExtents(id, 0, int64(len(b)), extentSize, &res.extents)
				break
			}
			n, err := fileExtents(p, id, info.Size(), extentSize, &res.extents)
			if err != nil {
				return err
			}
			e.extents = n
		case info.IsDir():
			e.kind = kindDir
		case info.Mode()&fs.ModeSymlink != 0:
			e.kind = kindSymlink
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
			e.mode = 0o777
		default:
			res.skipped = append(res.skipped, rel)
			return nil
		}
		if len(e.path) > maxPath || len(e.link) > maxPath {
			return fmt.Errorf("%s: path too long for the archive format", rel)
		}
		res.entries = append(res.entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", root, err)
	}
	if uint64(len(res.entries)) > 1<<32-1 {
		return nil, fmt.Errorf("scan %s: too many files", root)
	}
	for _, x := range res.extents {
		res.data += x.length
	}
	// Big extents first: the tail of a pack or unpack is then made of small
	// pieces that spread evenly over the threads.
	sort.SliceStable(res.extents, func(i, j int) bool { return res.extents[i].length > res.extents[j].length })
	return res, nil
}

// fileExtents appends the data extents of the file at p to out and returns
// how many it appended.
func fileExtents(p string, id uint32, size, extentSize int64, out *[]extent) (uint32, error) {
	if size == 0 {
		return 0, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fd := int(f.Fd())
	var n uint32
	add := func(start, end int64) { n += addExtents(id, start, end, extentSize, out) }
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole remains
		}
		if err != nil {
			// No SEEK_DATA support: treat the rest as data.
			add(off, size)
			break
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			hole = size
		}
		hole = min(hole, size)
		add(data, hole)
		off = hole
	}
	return n, nil
}

// addExtents appends the extents of bytes start to end of file id to out,
// cut at multiples of extentSize, and returns how many it appended.
func addExtents(id uint32, start, end, extentSize int64, out *[]extent) uint32 {
	var n uint32
	for off := start; off < end; {
		l := min(extentSize-off%extentSize, end-off)
		*out = append(*out, extent{file: id, offset: uint64(off), length: uint64(l)})
		n++
		off += l
	}
	return n
}
