package template

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pristinedb/pristine/internal/cow"
	"github.com/pristinedb/pristine/internal/svcuser"
	"github.com/pristinedb/pristine/internal/sysmem"
	"github.com/pristinedb/pristine/internal/units"
	"golang.org/x/sys/unix"
)

// Builds in RAM. DDL on a copy-on-write filesystem is slow (every CREATE
// and ALTER makes and syncs files, which btrfs pays for in metadata), so a
// build whose store is not tmpfs runs its server on a private staging
// directory on tmpfs (RAMDir, /dev/shm by default) when the build is
// expected to fit the RAM budget, and the finished, cleanly stopped data
// directory is then copied into the store (cow.CopyIn: a subvolume on
// btrfs) where slots clone it. Where it does not fit, the build runs on
// the store as before and says why.
//
// The staging directory is made by os.MkdirTemp (mode 0700 from creation)
// and belongs to the build's server id while its server may run, then to
// pristine's user (seal). It is removed when the build publishes, fails, is
// aborted or interrupted; one a killed build left is removed by the next
// build of the same template on the same root.

// DefaultRAMDir is where builds stage their data directory unless told
// otherwise.
const DefaultRAMDir = "/dev/shm"

// ramHeadroom is room a build needs besides its data: redo log growth,
// temporary tables, the undo log of big transactions.
const ramHeadroom = 256 << 20

// RAMOptions says where and whether builds run in RAM.
type RAMOptions struct {
	// Off keeps every build on the store (--no-ram-build).
	Off bool
	// Dir is the tmpfs builds stage in; empty means DefaultRAMDir.
	Dir string
	// Budget is the most a build may take there, in bytes; 0 means half of
	// the memory available, within what the tmpfs has free.
	Budget int64
}

// ramStage is the staging directory of a build in RAM: dir (0700) holds
// the data directory dir/data.
type ramStage struct {
	dir string
	// base is the data directory in the store the build began as a copy
	// of: settle starts the template from a clone of it and writes only
	// what the build changed (cow.CopyInOver).
	base string
}

func (s *ramStage) data() string { return filepath.Join(s.dir, "data") }

// ramPlace returns the tmpfs to stage in and the budget there, or "" and
// the reason the build stays on the store (empty reason: nothing to say,
// as when the store is tmpfs already).
func (b *Builder) ramPlace(expect int64) (dir string, why string) {
	if b.RAM.Off {
		return "", ""
	}
	if isTmpfs(b.cat.Root().Data()) {
		return "", "" // the store is in RAM already
	}
	dir = b.RAM.Dir
	if dir == "" {
		dir = DefaultRAMDir
	}
	if !isTmpfs(dir) {
		if b.RAM.Dir == "" {
			return "", fmt.Sprintf("%s is not a tmpfs", dir)
		}
		return "", fmt.Sprintf("%s is not a tmpfs: pass a tmpfs directory", dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", fmt.Sprintf("%s: %v", dir, err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	budget := b.RAM.Budget
	if budget <= 0 {
		budget = sysmem.AvailableOr(0) / 2
	}
	budget = min(budget, free)
	if expect > budget {
		return "", fmt.Sprintf("it needs about %s and the RAM budget is %s (%s free on %s, half the available memory by default; --ram-budget sets it)",
			units.Bytes(expect), units.Bytes(budget), units.Bytes(free), dir)
	}
	return dir, ""
}

// expectedSize guesses the most a build of opt on base takes: the base,
// three times its SQL input (indexes, the undo and redo logs), headroom.
// Compressed input counts ten times its size.
func expectedSize(base string, opt BuildOptions) int64 {
	n := dirBytes(base) + ramHeadroom
	if opt.FromSQL != "" && opt.FromSQL != "-" {
		_ = filepath.WalkDir(opt.FromSQL, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			f := int64(3)
			if strings.HasSuffix(p, ".gz") || strings.HasSuffix(p, ".zst") {
				f = 30
			}
			n += f * info.Size()
			return nil
		})
	}
	return n
}

// newRAMStage makes a private staging directory for the build of hash
// under dir, removing those a killed build of the same template on this
// root left. The caller holds the hash's lock.
func (b *Builder) newRAMStage(dir, hash string) (*ramStage, error) {
	prefix := b.ramPrefix(hash)
	old, _ := filepath.Glob(filepath.Join(dir, prefix+"*"))
	for _, o := range old {
		if !leftByBuild(o) {
			continue // not ours: /dev/shm is everyone's
		}
		if err := os.RemoveAll(o); err != nil {
			return nil, fmt.Errorf("remove the staging directory %s a killed build left: %w", o, err)
		}
	}
	d, err := os.MkdirTemp(dir, prefix) // 0700 from creation
	if err != nil {
		return nil, fmt.Errorf("make a staging directory for the build in %s: %w", dir, err)
	}
	return &ramStage{dir: d}, nil
}

// ramPrefix names the staging directories of hash's builds on this root.
func (b *Builder) ramPrefix(hash string) string {
	sum := sha256.Sum256([]byte(b.cat.Root().Path))
	return "pristine-build-" + hex.EncodeToString(sum[:4]) + "-" + hash[:12] + "-"
}

// RAMStages lists the staging directories of builds of this root under
// the RAM directory: none, unless a build is running or was killed.
func (b *Builder) RAMStages() []string {
	dir := b.RAM.Dir
	if dir == "" {
		dir = DefaultRAMDir
	}
	sum := sha256.Sum256([]byte(b.cat.Root().Path))
	l, _ := filepath.Glob(filepath.Join(dir, "pristine-build-"+hex.EncodeToString(sum[:4])+"-*"))
	return l
}

// stageData makes the data directory of the build staged in catalog
// directory dir, a clone of base belonging to a server id of its own
// (returned, claimed): on tmpfs when it fits, else dir/data on the store.
// extra is what the build is expected to take besides its SQL input (a
// capture's data).
func (b *Builder) stageData(dir string, base string, opt BuildOptions, hash string, extra int64) (string, *svcuser.Claimed, error) {
	place, why := b.ramPlace(expectedSize(base, opt) + extra)
	if place == "" {
		if why != "" {
			b.progress("building on the store, not in RAM: %s", why)
		}
		data := filepath.Join(dir, "data")
		id, err := b.claim(data)
		if err != nil {
			return "", nil, err
		}
		if err := cow.CloneAs(b.cat.Backend(), base, data, ownerOf(id)); err != nil {
			_ = b.seal(data)
			return "", nil, err
		}
		return data, id, nil
	}
	st, err := b.newRAMStage(place, hash)
	if err != nil {
		return "", nil, err
	}
	st.base = base
	b.idMu.Lock()
	if b.ram == nil {
		b.ram = map[string]*ramStage{}
	}
	b.ram[dir] = st
	b.idMu.Unlock()
	id, err := b.claim(st.data())
	if err == nil {
		if own := ownerOf(id); own != nil {
			// Still 0700: only the build's server (and pristine) reach it.
			err = os.Lchown(st.dir, own.UID, own.GID)
		}
		if err == nil {
			err = cow.CopyTree(base, st.data(), ownerOf(id))
		}
		if err != nil {
			_ = b.seal(st.data())
		}
	}
	if err != nil {
		_ = b.dropRAM(dir)
		return "", nil, fmt.Errorf("stage the build in %s: %w", place, err)
	}
	b.progress("building in RAM under %s", st.dir)
	return st.data(), id, nil
}

// ramStageOf returns the RAM stage of the build staged in catalog
// directory dir, or nil.
func (b *Builder) ramStageOf(dir string) *ramStage {
	b.idMu.Lock()
	defer b.idMu.Unlock()
	return b.ram[dir]
}

// ramStageHolding returns the RAM stage whose data directory is data.
func (b *Builder) ramStageHolding(data string) *ramStage {
	b.idMu.Lock()
	defer b.idMu.Unlock()
	for _, s := range b.ram {
		if s.data() == data {
			return s
		}
	}
	return nil
}

// settle moves a finished build staged in RAM (stopped and sealed) into
// the store at dir/data and removes the staging directory. A build on the
// store is left as it is.
func (b *Builder) settle(dir string) error {
	st := b.ramStageOf(dir)
	if st == nil {
		return nil
	}
	b.progress("moving the data directory into the store")
	if err := cow.CopyInOver(b.cat.Backend(), st.base, st.data(), filepath.Join(dir, "data")); err != nil {
		return fmt.Errorf("move the finished build into the store: %w", err)
	}
	return b.dropRAM(dir)
}

// dropRAM removes the RAM staging directory of the build staged in dir,
// if it has one.
func (b *Builder) dropRAM(dir string) error {
	b.idMu.Lock()
	st := b.ram[dir]
	delete(b.ram, dir)
	b.idMu.Unlock()
	if st == nil {
		return nil
	}
	if err := os.RemoveAll(st.dir); err != nil {
		return fmt.Errorf("remove the build's staging directory %s: %w", st.dir, err)
	}
	return nil
}

// discard removes a build staged in dir: its RAM staging directory and
// the catalog's.
func (b *Builder) discard(dir string) error {
	err := b.dropRAM(dir)
	if cerr := b.cat.Discard(dir); err == nil {
		err = cerr
	}
	return err
}

// leftByBuild reports whether path is a staging directory a build of
// pristine's left: a directory (not a symlink), mode 0700, belonging to
// pristine's user or to a server id of its range. Anything else of that
// name is another user's, and stays.
func leftByBuild(path string) bool {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o777 != 0o700 {
		return false
	}
	uid := int64(st.Uid)
	return uid == int64(os.Geteuid()) || (uid >= svcuser.IDBase && uid < svcuser.IDBase+svcuser.IDCount)
}

func isTmpfs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
