package scratch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ReadaheadKB is the readahead Up gives a scratch filesystem, in KiB: the
// kernel's default for a block device. btrfs gives each of its
// filesystems at least 4 MiB, made for streaming large files from disks.
// A slot's server reads its system tablespace and redo log at start in
// pages of 16 KiB, and a clone's page cache is its own (a snapshot or a
// reflink shares extents, not cached pages): with 4 MiB each start read
// and zeroed about 16 MB of pages, more than half of them never used, and
// 200 slots took 1.2-1.4x the time and CPU they take at 128 KiB (see
// docs/benchmarks.md, "Readahead").
const ReadaheadKB = 128

// bdiDir returns the sysfs directory of the backing device that serves the
// reads of a filesystem of type fsType mounted from the block device dev
// ("/dev/loop3"): for btrfs the filesystem's own (/sys/fs/btrfs/FSID/bdi,
// found through the devices it lists), for other filesystems the device's.
func bdiDir(fsType, dev string) (string, error) {
	name := filepath.Base(dev)
	if fsType != "btrfs" {
		dir := filepath.Join("/sys/class/block", name, "bdi")
		if _, err := os.Stat(dir); err != nil {
			return "", fmt.Errorf("readahead of %s: %w", dev, err)
		}
		return dir, nil
	}
	matches, _ := filepath.Glob(filepath.Join("/sys/fs/btrfs", "*", "devices", name))
	if len(matches) != 1 {
		return "", fmt.Errorf("readahead of %s: %d btrfs filesystems list it in /sys/fs/btrfs/*/devices; want 1", dev, len(matches))
	}
	return filepath.Join(filepath.Dir(filepath.Dir(matches[0])), "bdi"), nil
}

// readahead returns the readahead, in KiB, of the backing device whose
// sysfs directory is dir.
func readahead(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "read_ahead_kb"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// readaheadOf fills the readahead fields for a filesystem of type fsType
// mounted from dev, where the kernel says.
func (info *Info) readaheadOf(fsType, dev string) {
	dir, err := bdiDir(fsType, dev)
	if err != nil {
		return
	}
	if kb, err := readahead(dir); err == nil {
		info.ReadaheadKB, info.ReadaheadFile = kb, filepath.Join(dir, "read_ahead_kb")
	}
}

// setReadahead sets the readahead of the filesystem pristine mounted from
// its loop device dev to ReadaheadKB. The setting lives as long as the
// mount, so every mount of a scratch image sets it again.
func setReadahead(fsType, dev string) error {
	dir, err := bdiDir(fsType, dev)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "read_ahead_kb"), []byte(strconv.Itoa(ReadaheadKB)), 0); err != nil {
		return fmt.Errorf("readahead of %s: %w", dev, err)
	}
	return nil
}
