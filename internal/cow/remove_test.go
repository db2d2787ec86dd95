package cow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pristinedb/pristine/internal/rootdir"
	"golang.org/x/sys/unix"
)

// TestRemoveStaysInside checks that Remove deletes symlinks, not what they
// point to, and stops at a filesystem mounted inside the tree.
func TestRemoveStaysInside(t *testing.T) {
	forEachBackend(t, func(t *testing.T, root *rootdir.Root, b Backend) {
		if os.Geteuid() != 0 {
			t.Skip("mounting a filesystem inside the tree needs root")
		}
		outside := t.TempDir()
		keep := filepath.Join(outside, "keep")
		if err := os.WriteFile(keep, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		src := source(t, root, b)
		dst := filepath.Join(root.Data(), "slot")
		if err := b.Clone(src, dst); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dst, "db1", "out-dir")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(keep, filepath.Join(dst, "out-file")); err != nil {
			t.Fatal(err)
		}
		mnt := filepath.Join(dst, "db1", "mnt")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("pristine-test", mnt, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
		if err := os.WriteFile(filepath.Join(mnt, "mounted"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}

		err := b.Remove(dst)
		if err == nil || !strings.Contains(err.Error(), "mount point") {
			t.Errorf("Remove of a tree with a mount inside: %v; want a refusal naming the mount point", err)
		}
		if _, err := os.Stat(filepath.Join(mnt, "mounted")); err != nil {
			t.Errorf("Remove went into the mounted filesystem: %v", err)
		}
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("Remove followed a symlink out of the tree: %v", err)
		}
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Fatal(err)
		}
		if err := b.Remove(dst); err != nil {
			t.Fatalf("Remove after unmounting: %v", err)
		}
		if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there: %v", dst, err)
		}
		if b, err := os.ReadFile(keep); err != nil || string(b) != "keep" {
			t.Errorf("file outside the root changed: %q, %v", b, err)
		}
	})
}
