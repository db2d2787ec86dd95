package cow

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// loopFS makes a RAM-backed filesystem of the given type ("btrfs", "xfs",
// "xfs-noreflink", "ext4" or "tmpfs") and size in MiB, mounts it on a
// temporary directory and opens a pristine root on it, with its data
// directory created. Everything is unmounted and deleted when the test ends.
// It skips the test when not root or when the mkfs tool is missing. Kind
// "dir" makes no filesystem: the root is a temporary directory, wherever
// the tests' temporary files live, so it runs without root too.
func loopFS(tb testing.TB, kind string, mib int64) *rootdir.Root {
	tb.Helper()
	if kind == "dir" {
		return openRoot(tb, tb.TempDir())
	}
	if os.Geteuid() != 0 {
		tb.Skipf("loop-mounting a %s filesystem needs root (run the tests as root to cover this backend)", kind)
	}
	mnt := tb.TempDir()
	if kind == "tmpfs" {
		if err := unix.Mount("pristine-test", mnt, "tmpfs", 0, fmt.Sprintf("size=%dm", mib)); err != nil {
			tb.Fatalf("mount tmpfs: %v", err)
		}
		tb.Cleanup(func() { unmount(tb, mnt) })
		return openRoot(tb, mnt)
	}
	var mkfs []string
	switch kind {
	case "btrfs":
		mkfs = []string{"mkfs.btrfs", "-q", "-m", "single"}
	case "xfs":
		mkfs = []string{"mkfs.xfs", "-q", "-m", "reflink=1"}
	case "xfs-noreflink":
		mkfs = []string{"mkfs.xfs", "-q", "-m", "reflink=0"}
	case "ext4":
		mkfs = []string{"mkfs.ext4", "-q"}
	default:
		tb.Fatalf("loopFS: unknown kind %q", kind)
	}
	if _, err := exec.LookPath(mkfs[0]); err != nil {
		tb.Skipf("%s is not installed, so the %s case cannot run", mkfs[0], kind)
	}
	img, err := os.CreateTemp("/dev/shm", "pristine-cowtest-*.img")
	if err != nil {
		tb.Fatalf("create image: %v", err)
	}
	tb.Cleanup(func() { os.Remove(img.Name()) })
	if err := img.Truncate(mib << 20); err != nil {
		tb.Fatalf("size image: %v", err)
	}
	img.Close()
	if out, err := exec.Command(mkfs[0], append(mkfs[1:], img.Name())...).CombinedOutput(); err != nil {
		tb.Fatalf("%s: %v\n%s", strings.Join(mkfs, " "), err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img.Name(), mnt).CombinedOutput(); err != nil {
		tb.Fatalf("mount %s: %v\n%s", img.Name(), err, out)
	}
	tb.Cleanup(func() { unmount(tb, mnt) })
	return openRoot(tb, mnt)
}

func openRoot(tb testing.TB, mnt string) *rootdir.Root {
	tb.Helper()
	root, err := rootdir.Open(filepath.Join(mnt, "pristine"))
	if err != nil {
		tb.Fatalf("open root: %v", err)
	}
	if err := os.Mkdir(root.Data(), 0o755); err != nil {
		tb.Fatalf("mkdir data: %v", err)
	}
	return root
}

// unmount unmounts mnt; mount -o loop set autoclear, so the loop device goes
// with it. A mount still busy (a test failed with a file open) is detached
// lazily, so that it goes when the file is closed, and the test fails.
func unmount(tb testing.TB, mnt string) {
	if err := unix.Unmount(mnt, 0); err != nil {
		tb.Errorf("unmount %s: %v (detaching it lazily)", mnt, err)
		unix.Unmount(mnt, unix.MNT_DETACH)
	}
}
