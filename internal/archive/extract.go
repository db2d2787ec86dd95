package archive

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Verify says which payloads Unpack hashes.
type Verify int

const (
	// VerifyAuto hashes every payload that Unpack reads or copies, and trusts
	// extents it clones (their blocks are shared with the archive, not read).
	VerifyAuto Verify = iota
	// VerifyAll also hashes cloned extents, reading them from the archive.
	VerifyAll
	// VerifyHeaders checks only record headers, the file table and the index,
	// which lets streams be spliced into files without passing user space.
	VerifyHeaders
)

// UnpackOptions tune Unpack and UnpackFile. The zero value is ready to use.
type UnpackOptions struct {
	// Threads write extents in parallel; 0 means GOMAXPROCS.
	Threads int
	// Verify selects which payloads are hashed; see Verify.
	Verify Verify
	// Sync flushes the new tree with syncfs before it is renamed into place.
	Sync bool
	// NoClone and NoCopyRange skip rungs of the receive ladder, for
	// benchmarks and tests.
	NoClone, NoCopyRange bool
	// Progress, when set, receives a progress line a few times a second.
	Progress io.Writer
}

// extractor builds the tree in a temporary directory beside the target and
// renames it into place only when every extent has arrived and checked out,
// so a partial extraction never sits at the target path.
type extractor struct {
	opts    UnpackOptions
	stage   *Staging
	tmp     string
	entries []entry
	files   []*outFile
	done    atomic.Int64

	cloned, copied, spliced, written atomic.Int64
	extents                          atomic.Int64
}

// outFile is one regular file being written; it is opened by whichever
// extent arrives first and closed by whichever arrives last.
type outFile struct {
	once sync.Once
	f    *os.File
	err  error
	left atomic.Int64
}

// newExtractor stages the extraction beside target.
func newExtractor(target string, opts UnpackOptions) (*extractor, error) {
	st, err := NewStaging(target)
	if err != nil {
		return nil, fmt.Errorf("unpack: %w", err)
	}
	return &extractor{opts: opts, stage: st, tmp: st.Dir()}, nil
}

// abort removes the temporary directory. Workers must have stopped.
func (x *extractor) abort() {
	for _, f := range x.files {
		if f != nil && f.f != nil {
			f.f.Close()
		}
	}
	x.stage.Abort()
}

func (x *extractor) name(id uint32) string {
	return filepath.Join(x.tmp, filepath.FromSlash(x.entries[id].path))
}

// setTable creates the directories, symlinks and data-less files of the
// table.
func (x *extractor) setTable(es []entry) error {
	x.entries = es
	x.files = make([]*outFile, len(es))
	for i := range es {
		e := &es[i]
		name := x.name(uint32(i))
		switch e.kind {
		case kindDir:
			if err := os.Mkdir(name, DirMode); err != nil {
				return fmt.Errorf("unpack: %w", err)
			}
		case kindSymlink:
			if err := os.Symlink(e.link, name); err != nil {
				return fmt.Errorf("unpack: %w", err)
			}
		case kindFile:
			of := &outFile{}
			of.left.Store(int64(e.extents))
			x.files[i] = of
			if e.extents == 0 {
				if err := x.open(uint32(i)); err != nil {
					return err
				}
				if err := x.finishFile(uint32(i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// open creates file id once, at its final size, so holes stay holes.
func (x *extractor) open(id uint32) error {
	of := x.files[id]
	of.once.Do(func() {
		name := x.name(id)
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, FileMode)
		if err != nil {
			of.err = fmt.Errorf("unpack: %w", err)
			return
		}
		if err := f.Truncate(int64(x.entries[id].size)); err != nil {
			f.Close()
			of.err = fmt.Errorf("unpack: %w%s", err, diskHint(err))
			return
		}
		of.f = f
	})
	return of.err
}

// checkExtent validates a data record against the table before anything is
// written.
func (x *extractor) checkExtent(h *header) error {
	if int(h.file) >= len(x.entries) || x.entries[h.file].kind != kindFile {
		return corruptf(h.pos, "extent for file id %d, which is not a regular file", h.file)
	}
	e := &x.entries[h.file]
	if h.offset+h.length > e.size {
		return &CorruptError{Offset: h.pos, Path: e.path, Msg: fmt.Sprintf("extent %d+%d beyond file size %d", h.offset, h.length, e.size)}
	}
	return nil
}

// extentDone counts one written extent and closes the file after its last.
func (x *extractor) extentDone(h *header) error {
	x.done.Add(int64(h.length))
	x.extents.Add(1)
	switch left := x.files[h.file].left.Add(-1); {
	case left == 0:
		return x.finishFile(h.file)
	case left < 0:
		return &CorruptError{Offset: h.pos, Path: x.entries[h.file].path, Msg: "more extents than the file table announces"}
	}
	return nil
}

func (x *extractor) finishFile(id uint32) error {
	of, e := x.files[id], &x.entries[id]
	// The mode is pristine's, whatever the table says (see FileMode); the
	// chmod undoes a umask that narrowed the create mode.
	if err := of.f.Chmod(FileMode); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	ts := []unix.Timespec{unix.NsecToTimespec(e.mtime), unix.NsecToTimespec(e.mtime)}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, of.f.Name(), ts, 0); err != nil {
		return fmt.Errorf("unpack: set time of %s: %w", of.f.Name(), err)
	}
	err := of.f.Close()
	of.f = nil
	if err != nil {
		return fmt.Errorf("unpack: %w%s", err, diskHint(err))
	}
	return nil
}

// finish checks that every file is complete, applies directory modes
// (pristine's, DirMode: never the table's) and times, and renames the tree
// into place.
func (x *extractor) finish(end uint64) error {
	for i, of := range x.files {
		if of != nil && of.left.Load() != 0 {
			return &CorruptError{Offset: end, Path: x.entries[i].path, Msg: fmt.Sprintf("archive ends with %d extents of this file missing", of.left.Load())}
		}
	}
	for i := len(x.entries) - 1; i >= 0; i-- {
		e := &x.entries[i]
		ts := []unix.Timespec{unix.NsecToTimespec(e.mtime), unix.NsecToTimespec(e.mtime)}
		name := x.name(uint32(i))
		switch e.kind {
		case kindDir:
			if err := os.Chmod(name, DirMode); err != nil {
				return fmt.Errorf("unpack: %w", err)
			}
			if err := unix.UtimesNanoAt(unix.AT_FDCWD, name, ts, 0); err != nil {
				return fmt.Errorf("unpack: set time of %s: %w", name, err)
			}
		case kindSymlink:
			unix.UtimesNanoAt(unix.AT_FDCWD, name, ts, unix.AT_SYMLINK_NOFOLLOW)
		}
	}
	if err := os.Chmod(x.tmp, DirMode); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	if err := x.stage.Commit(x.opts.Sync); err != nil {
		return fmt.Errorf("unpack: %w", err)
	}
	return nil
}

func (x *extractor) stats(st *Stats, start time.Time) {
	for i := range x.entries {
		switch x.entries[i].kind {
		case kindFile:
			st.Files++
		case kindDir:
			st.Dirs++
		case kindSymlink:
			st.Symlinks++
		}
	}
	st.Extents = int(x.extents.Load())
	st.DataBytes = x.done.Load()
	st.Cloned, st.Copied, st.Spliced, st.Written = x.cloned.Load(), x.copied.Load(), x.spliced.Load(), x.written.Load()
	st.Elapsed = time.Since(start)
}

func syncfs(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}

// diskHint adds the fix to errors a full or quota-limited disk causes.
func diskHint(err error) string {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return " (the target filesystem is full: free space there or unpack somewhere else)"
	}
	return ""
}
