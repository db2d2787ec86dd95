// Package scratch creates and removes a RAM-backed copy-on-write filesystem
// for pristine: a sparse image file (by default in /dev/shm) holding a btrfs
// or XFS (reflink=1) filesystem, bound to a loop device and mounted at the
// root's data directory. Up records what it made in the root's scratch.json
// before it makes it; Down removes only what that record names and the
// kernel confirms: the mount at the data directory backed by this root's
// image, its loop device, and the image.
package scratch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/errtag"
	"github.com/pristinedb/pristine/internal/mountinfo"
	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// Options says what filesystem Up makes.
type Options struct {
	Size int64  // bytes; 0 means DefaultSize
	FS   string // "btrfs" (default) or "xfs"
	Dir  string // where the image lives; "" means /dev/shm
	// Compress is btrfs's transparent compression: "" for none, "zstd"
	// or "zstd:LEVEL" (1-15). XFS has none and is refused with it.
	Compress string
}

// DefaultSize is the size of the scratch filesystem when Options.Size is 0.
const DefaultSize = 8 << 30

// minSize is the smallest filesystem each mkfs accepts.
var minSize = map[string]int64{"btrfs": 256 << 20, "xfs": 300 << 20}

// Info describes the scratch filesystem of a root.
type Info struct {
	Up        bool      `json:"up"`    // mounted at Mount and backed by Image
	Mount     string    `json:"mount"` // the root's data directory
	FS        string    `json:"fs,omitempty"`
	Size      int64     `json:"size,omitempty"`     // the filesystem's size
	Image     string    `json:"image,omitempty"`    // the sparse image file
	Compress  string    `json:"compress,omitempty"` // btrfs compression, "zstd:LEVEL"
	Loop      string    `json:"loop,omitempty"`     // the loop device
	Used      int64     `json:"used,omitempty"`     // bytes in use inside the filesystem
	Avail     int64     `json:"avail,omitempty"`    // bytes still free inside it
	Memory    int64     `json:"memory,omitempty"`
	Created   time.Time `json:"created,omitzero"`
	AlreadyUp bool      `json:"already_up,omitempty"` // Up found it up and changed nothing
	Remounted bool      `json:"remounted,omitempty"`  // Up mounted the recorded image again (after a reboot)
	Stale     bool      `json:"stale,omitempty"`      // recorded, but not mounted: Down cleans up
	// RootFS and RootCompress describe the filesystem that holds the
	// data directory when no scratch filesystem is up: a root already on
	// btrfs mounted with compress= gets compressed templates too.
	RootFS       string `json:"root_fs,omitempty"`
	RootCompress string `json:"root_compress,omitempty"`
	// ReadaheadKB is the readahead of the filesystem that holds the data
	// directory (the scratch filesystem's, ReadaheadKB when Up set it),
	// and ReadaheadFile the sysfs file that sets it; 0 and "" when it
	// could not be read.
	ReadaheadKB   int    `json:"readahead_kb,omitempty"`
	ReadaheadFile string `json:"readahead_file,omitempty"`
	// Warning says, in one line with the fix, when the directory holding
	// the image has less room than the image may still grow by: writes
	// inside the filesystem then fail with "no space left on device".
	Warning string `json:"warning,omitempty"`
}

// ErrNeedRoot is returned (wrapped) by Up and Down when not run as root.
var ErrNeedRoot = errors.New("needs root")

func needRoot(op string) error {
	if os.Geteuid() != 0 {
		return errtag.New(ErrNeedRoot, "scratch %s: mounting a loop filesystem needs root; run it with sudo, or skip scratch and use --backend copy", op)
	}
	return nil
}

// lock takes an exclusive lock on the root's scratch.lock for the duration
// of Up or Down; unlock with the returned function.
func lock(root *rootdir.Root) (func(), error) {
	f, err := os.OpenFile(filepath.Join(root.Path, "scratch.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// Status describes the root's scratch filesystem; Info.Up is false when
// there is none.
func Status(root *rootdir.Root) (*Info, error) {
	rec, err := readRecord(root)
	if err != nil {
		return nil, fmt.Errorf("scratch status: %w", err)
	}
	info := &Info{Mount: root.Data()}
	if rec == nil {
		if m, err := mountinfo.Of(root.Data()); err == nil && m != nil {
			info.RootFS = m.FSType
			info.readaheadOf(m.FSType, m.Source)
		}
		info.RootCompress, _ = cow.Compression(root.Data())
		return info, nil
	}
	info.FS, info.Size, info.Image, info.Loop, info.Created, info.Compress = rec.FS, rec.Size, rec.Image, rec.Loop, rec.Created, rec.Compress
	m, err := ourMount(root, rec)
	if err != nil {
		return nil, fmt.Errorf("scratch status: %w", err)
	}
	info.Up = m != nil && rec.State == "up"
	info.Stale = !info.Up
	if info.Up {
		info.readaheadOf(rec.FS, rec.Loop)
		var sfs unix.Statfs_t
		if unix.Statfs(root.Data(), &sfs) == nil {
			info.Used = int64(sfs.Blocks-sfs.Bfree) * sfs.Bsize
			info.Avail = int64(sfs.Bavail) * sfs.Bsize
		}
	}
	var st unix.Stat_t
	if unix.Stat(rec.Image, &st) == nil {
		info.Memory = st.Blocks * 512
	}
	var dfs unix.Statfs_t
	if info.Up && unix.Statfs(rec.Dir, &dfs) == nil {
		free, growth := int64(dfs.Bavail)*dfs.Bsize, rec.Size-info.Memory
		if free < growth {
			info.Warning = fmt.Sprintf("%s has %s free but the image may grow by %s more, so writes may fail with \"no space left on device\"; free space in %s, or remove templates and slots you no longer need",
				rec.Dir, FormatSize(free), FormatSize(growth), rec.Dir)
		}
	}
	return info, nil
}

// ourMount returns the mount at the root's data directory when it is backed
// by the recorded image, nil when nothing is mounted there, and an error
// when something else is.
func ourMount(root *rootdir.Root, rec *record) (*mountinfo.Mount, error) {
	m, err := mountinfo.At(root.Data())
	if err != nil || m == nil {
		return nil, err
	}
	if backing := backingOf(m); backing != rec.Image {
		return nil, fmt.Errorf("%s is mounted from %s, not from pristine's image %s; pristine leaves it alone: unmount it yourself if it is stale",
			root.Data(), m.Source, rec.Image)
	}
	return m, nil
}
